package pyprobe

import (
	"bytes"
	"debug/elf"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// Process is a CPython process as /proc shows it, to a process ctxlab did
// not start: the interpreter from its executable and the libpython mapped
// into it.
type Process struct {
	PID          int
	Exe          string
	Lib          string // the libpython mapped, "" when the interpreter is linked statically
	Version      string // "3.11"
	FreeThreaded bool
}

var (
	exeName = regexp.MustCompile(`^python(3\.[0-9]+)(t?)(d?)$`)
	libName = regexp.MustCompile(`^libpython(3\.[0-9]+)(t?)(d?)\.so`)
)

// Identify reads pid's executable and maps and says whether it runs
// CPython, and which.
func Identify(root procstat.Root, pid int) (Process, bool) {
	im, err := root.ReadImage(pid)
	if err != nil {
		return Process{}, false
	}
	p, ok := identify(im)
	p.PID = pid
	if ok && !p.FreeThreaded && p.Lib == "" {
		// python3 and python3.13 of a free-threaded prefix: the name does
		// not say, the interpreter's own version string does.
		p.FreeThreaded = freeThreadedELF(filepath.Join(string(root), strconv.Itoa(pid), "exe"))
	}
	return p, ok
}

// ftBanner is in the read-only data of every free-threaded CPython and of
// no GIL build: the build's part of sys.version ("3.13.5 experimental
// free-threading build (main, …)"; 3.14 drops "experimental").
var ftBanner = []byte(" free-threading build (")

// freeThreadedELF says whether the ELF file at path (a process's exe
// link) is a free-threaded CPython, by its .rodata; false when it cannot
// be read.
func freeThreadedELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sec := f.Section(".rodata")
	if sec == nil || sec.Size > 256<<20 {
		return false
	}
	b, err := sec.Data()
	return err == nil && bytes.Contains(b, ftBanner)
}

// identify is Identify on what was read: a mapped libpython3.N[t].so names
// the interpreter (an embedding program too); else an executable named
// python3.N[t].
func identify(im procstat.Image) (Process, bool) {
	p := Process{Exe: im.Exe}
	for _, m := range im.Mapped {
		if g := libName.FindStringSubmatch(filepath.Base(m)); g != nil {
			p.Lib, p.Version, p.FreeThreaded = m, g[1], g[2] == "t"
			return p, true
		}
	}
	if g := exeName.FindStringSubmatch(filepath.Base(strings.TrimSuffix(im.Exe, " (deleted)"))); g != nil {
		p.Version, p.FreeThreaded = g[1], g[2] == "t"
		// A free-threaded prefix installs python3.13 as a hard link of
		// python3.13t: its extension modules carry the ABI's t.
		tag := ".cpython-" + strings.ReplaceAll(g[1], ".", "") + "t-"
		for _, m := range im.Mapped {
			p.FreeThreaded = p.FreeThreaded || strings.Contains(filepath.Base(m), tag)
		}
		return p, true
	}
	return p, false
}

// The inferred GIL reading's thresholds (docs/pyprobe.md). Without the
// probe the switch interval cannot be read, so the default's is assumed.
const (
	// DefaultSwitchS is CPython's default sys.getswitchinterval().
	DefaultSwitchS = 0.005
	// TurnLow, TurnHigh: voluntary switches per second per thread, as
	// multiples of 1/interval, that fit taking turns at the GIL. The low
	// end is far below one an interval: on a loaded machine a CPU-bound
	// thread is preempted (involuntary) more often than it hands the GIL
	// over, and its voluntary rate falls to tens a second.
	TurnLow  = 0.05
	TurnHigh = 4.0
	// TurnCPU: a thread on a CPU less than this share of the run is not
	// taking part.
	TurnCPU = 0.02
	// OneCoreLow, OneCoreHigh: the process wanted a CPU (on one, or
	// waiting for one) about one core's worth: what one runner at a time
	// gives.
	OneCoreLow  = 0.7
	OneCoreHigh = 1.3
)

// Inferred reads a CPython process's profile from /proc: which interpreter
// it is, and, labelled as inferred, GIL turn-taking when threads switch
// voluntarily at about 1/switch-interval each while the process wants about
// one core. The in-process figures need diagnose, and the readings say so.
func Inferred(p watch.Profile, py Process) []watch.Reading {
	build := "GIL build"
	if py.FreeThreaded {
		build = "free-threaded build"
	}
	from := py.Exe
	if py.Lib != "" {
		from += ", " + filepath.Base(py.Lib) + " mapped"
	}
	out := []watch.Reading{{Subject: "python", Kind: ReadCPython, Text: fmt.Sprintf(
		"CPython %s, %s (from /proc: %s); its loop lag, switch interval and thread hops are measured from inside by ctxlab diagnose -- python3 …, which starts the program with ctxlab's probe",
		py.Version, build, from)}}
	if py.FreeThreaded {
		out = append(out, watch.Reading{Subject: "python", Kind: ReadFreeThreaded,
			Text: "a free-threaded build: the GIL turn-taking reading does not apply (whether an extension turned the GIL back on cannot be seen from /proc)"})
		return out
	}
	if p.Seconds <= 0 || p.CPUs < 2 {
		return out
	}
	perSec := 1 / DefaultSwitchS
	var rates []string
	turns := 0
	var cpu, runq float64
	for _, t := range p.Threads {
		if t.PID != py.PID || !t.HasSchedstat {
			continue
		}
		cpu += float64(t.CPUNs)
		runq += float64(t.RunqNs)
		vol := p.Rate(t.Vol)
		if float64(t.CPUNs) >= TurnCPU*p.Seconds*1e9 && vol >= TurnLow*perSec && vol <= TurnHigh*perSec {
			turns++
			rates = append(rates, fmt.Sprintf("%.0f/s", vol))
		}
	}
	cores := (cpu + runq) / (p.Seconds * 1e9)
	if turns < 2 || cores < OneCoreLow || cores > OneCoreHigh {
		return out
	}
	out = append(out, watch.Reading{Subject: "python", Kind: ReadInferredGIL, Text: fmt.Sprintf(
		"inferred from /proc, not measured inside the interpreter: %d threads switch voluntarily at %s, each %.2f–%.0f× once per %s (the default switch interval; sys.getswitchinterval() cannot be read from outside), while the process wanted about one core (%.2f of %d: on a CPU %.2f, waiting for one %.2f): this fits GIL turn-taking, one thread at a time running Python; ctxlab diagnose -- python3 … measures the loop lag and the interval inside",
		turns, strings.Join(rates, ", "), TurnLow, TurnHigh, "5 ms", cores, p.CPUs, cpu/(p.Seconds*1e9), runq/(p.Seconds*1e9))})
	return out
}
