// Package pydriver runs ctxlab's embedded CPython driver (driver.py) so
// CPython threads and asyncio tasks are measured by Python itself and land
// in the same result model as the Go arms. It finds interpreters on PATH,
// resolves each one's real executable once (a pyenv shim costs ~90 ms per
// start), keeps one driver process per interpreter for a batch of arms,
// speaks the line protocol of docs/python.md with it, and kills its whole
// process group when an arm's time limit passes or its output is garbage.
package pydriver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/procstat"
)

// Source is the driver script ctxlab runs with `python3 -u -c Source`.
//
//go:embed driver.py
var Source string

// ErrNoPython says no usable python3 was found; arms that need one are
// skipped, not failed.
var ErrNoPython = errors.New("python3 not found on PATH")

// Interpreter is one CPython found on this machine.
type Interpreter struct {
	Name         string `json:"name"`       // as asked or found on PATH: "python3", "python3.13t", a path
	Path         string `json:"executable"` // the real executable (sys.executable): shims resolved
	Version      string `json:"version"`    // "3.11.7"
	FreeThreaded bool   `json:"free_threaded"`
	GILEnabled   bool   `json:"gil_enabled"`
}

// Build is "GIL" or "free-threaded" (with the GIL on or off at run time).
func (in *Interpreter) Build() string {
	switch {
	case !in.FreeThreaded:
		return "GIL"
	case in.GILEnabled:
		return "free-threaded (GIL re-enabled)"
	}
	return "free-threaded"
}

// Tag is the version with a "t" for free-threaded builds: "3.11.7", "3.13.1t".
func (in *Interpreter) Tag() string {
	if in.FreeThreaded {
		return in.Version + "t"
	}
	return in.Version
}

const probeScript = `import sys, sysconfig, json
v = sys.version_info
print(json.dumps({"executable": sys.executable, "version": "%d.%d.%d" % (v.major, v.minor, v.micro),
  "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
  "gil_enabled": sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True,
  "implementation": sys.implementation.name}))`

// probeTimeout bounds one interpreter probe on a machine that gives it
// the CPU: a cold pyenv shim takes about a second here. On a loaded
// machine an interpreter can need longer only to be scheduled (4 CPU hogs
// on 2 cores: 5–10 s), so past probeTimeout a probe that is still making
// progress (runnable, or its CPU time still growing) is waited for, up to
// probeStarved; one asleep and idle for probeIdle is an interpreter that
// will not answer (a hung shim), and is given up.
var probeTimeout = 5 * time.Second

const (
	probeStarved = 60 * time.Second
	probeIdle    = time.Second
)

// ProbeTimeout is how long an interpreter's probe may take.
func ProbeTimeout() time.Duration { return probeTimeout }

var (
	cacheMu sync.Mutex
	cache   = map[string]*Interpreter{} // key: name + "\x00" + PATH
)

// Resolve is ResolveContext without a deadline of the caller's own.
func Resolve(name string) (*Interpreter, error) { return ResolveContext(context.Background(), name) }

// ResolveContext finds the interpreter name (a command on PATH or a path)
// and asks it, once, for its real executable, version and build; ctx
// ending (SIGINT) stops the probe at once. A successful answer is cached
// per name and PATH.
func ResolveContext(ctx context.Context, name string) (*Interpreter, error) {
	key := name + "\x00" + os.Getenv("PATH")
	cacheMu.Lock()
	if in, ok := cache[key]; ok {
		cacheMu.Unlock()
		return in, nil
	}
	cacheMu.Unlock()
	exe, err := exec.LookPath(name)
	if err != nil {
		if name == "python3" {
			return nil, ErrNoPython
		}
		return nil, fmt.Errorf("python %q: %w", name, err)
	}
	out, stderr, err := probe(ctx, exe)
	if err != nil {
		return nil, fmt.Errorf("python %q (%s) does not run: %w%s", name, exe, err, tailText(stderr, 300))
	}
	var p struct {
		Interpreter
		Implementation string `json:"implementation"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &p); err != nil || p.Version == "" {
		return nil, fmt.Errorf("python %q (%s) is not a Python 3 ctxlab can drive: %q", name, exe, tailText(out, 200))
	}
	if p.Implementation != "cpython" {
		return nil, fmt.Errorf("python %q (%s) is %s; the driver measures CPython", name, exe, p.Implementation)
	}
	in := p.Interpreter
	in.Name = name
	if in.Path == "" {
		in.Path = exe
	}
	cacheMu.Lock()
	cache[key] = &in
	cacheMu.Unlock()
	return &in, nil
}

// probe runs the probe script under exe as a child of ctxlab's own (its
// own process group, a parent-death signal from a thread that lives as
// long as ctxlab) and kills that whole group however the probe ends: a
// wrapper script (a pyenv shim) that runs python, or anything else, as its
// child leaves nothing behind. The error wraps ctx's cause when ctx ended.
func probe(ctx context.Context, exe string) (stdout, stderr []byte, err error) {
	pctx, cancel := context.WithTimeout(ctx, probeStarved)
	defer cancel()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, err
	}
	proc, err := child.Start(pctx, child.Options{Exe: exe, Args: []string{"-c", probeScript}, Stdout: outW, Stderr: errW})
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, err
	}
	var outBuf, errBuf bytes.Buffer
	var readers sync.WaitGroup
	for _, c := range []struct {
		w *bytes.Buffer
		r *os.File
	}{{&outBuf, outR}, {&errBuf, errR}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			io.Copy(c.w, io.LimitReader(c.r, 1<<20))
		}()
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	var late bool
	err, late = awaitProbe(pctx, proc.PID(), exited)
	proc.Kill() // the whole group, on every path; reaps the probe
	if err == nil {
		err = proc.Wait()
	}
	// Everything in the group is dead, so the pipes reach EOF; something
	// that left the group (setsid) and holds them is not waited for.
	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	outR.Close()
	errR.Close()
	<-done
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("probe stopped: %w", context.Cause(ctx))
	case late:
		err = fmt.Errorf("%w within %v (idle, not waiting for a CPU)", ErrNoAnswer, probeTimeout)
	case pctx.Err() != nil:
		err = fmt.Errorf("%w within %v", ErrNoAnswer, probeStarved)
	}
	return outBuf.Bytes(), errBuf.Bytes(), err
}

var pyName = regexp.MustCompile(`^python3(\.[0-9]+t?)?$`)

// FindAll is FindAllContext without a deadline of the caller's own.
func FindAll() []*Interpreter { return FindAllContext(context.Background()) }

// awaitProbe waits for the probe (pid) to exit, for probeTimeout, and
// past it while the probe makes progress (probeProgress), until ctx ends.
// late: the probe was given up as idle.
func awaitProbe(ctx context.Context, pid int, exited <-chan error) (err error, late bool) {
	timer := time.NewTimer(probeTimeout)
	defer timer.Stop()
	select {
	case err = <-exited:
		return err, false
	case <-ctx.Done():
		return nil, false
	case <-timer.C:
	}
	tick := time.NewTicker(probeIdle / 4)
	defer tick.Stop()
	last, idleSince := probeCPU(pid), time.Now()
	for {
		select {
		case err = <-exited:
			return err, false
		case <-ctx.Done():
			return nil, false
		case <-tick.C:
		}
		cpu, runnable := probeProgress(pid)
		if cpu != last || runnable {
			last, idleSince = cpu, time.Now()
		} else if time.Since(idleSince) >= probeIdle {
			return nil, true
		}
	}
}

// probeProgress reads the probe's CPU time (clock ticks, user and system)
// and whether it is runnable (state R: running or waiting for a CPU).
func probeProgress(pid int) (cpu uint64, runnable bool) {
	p, err := procstat.DefaultRoot.ReadProc(pid)
	if err != nil {
		return 0, false
	}
	return uint64(p.UTicks + p.STicks), p.State == "R"
}

func probeCPU(pid int) uint64 { c, _ := probeProgress(pid); return c }

// ErrNoAnswer is an interpreter that did not answer its probe in time: it
// may run, on a less loaded machine.
var ErrNoAnswer = errors.New("no answer")

// FindAllContext is FindAllWhy without the names that did not answer.
func FindAllContext(ctx context.Context) []*Interpreter {
	ins, _ := FindAllWhy(ctx)
	return ins
}

// FindAllWhy lists every python3, python3.N and python3.Nt on PATH that
// runs, one per real executable (the first found on PATH wins), by
// version. Names that do not run (a pyenv shim without that version) are
// left out; ctx ending stops every probe, and what answered by then is
// listed. noAnswer are the names whose probe did not answer in time (a
// loaded machine): not known not to run.
func FindAllWhy(ctx context.Context) (ins []*Interpreter, noAnswer []string) {
	names := map[string]bool{}
	var cands []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if n := e.Name(); pyName.MatchString(n) && !names[n] {
				names[n] = true
				cands = append(cands, n)
			}
		}
	}
	// Each probe starts an interpreter (through a pyenv shim, a shell
	// script, that is ~0.5 s): probe a few at a time, keep PATH order.
	found := make([]*Interpreter, len(cands))
	late := make([]bool, len(cands))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, n := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			in, err := ResolveContext(ctx, n)
			found[i], late[i] = in, errors.Is(err, ErrNoAnswer)
		}()
	}
	wg.Wait()
	var out []*Interpreter
	var seen files
	for _, in := range found {
		if in != nil && seen.add(in.Path) {
			out = append(out, in)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tag() < out[j].Tag() })
	for i, n := range cands {
		if late[i] {
			noAnswer = append(noAnswer, n)
		}
	}
	return out, noAnswer
}

// files is a set of files by identity, not name: a symbolic or a hard
// link is the file it names (a free-threaded CPython's prefix installs
// python3.13 as a hard link of python3.13t).
type files []os.FileInfo

// add puts path's file in the set and says whether it was new; a path
// that cannot be read is always new.
func (fs *files) add(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true
	}
	for _, s := range *fs {
		if os.SameFile(s, fi) {
			return false
		}
	}
	*fs = append(*fs, fi)
	return true
}

func tailText(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return ": " + s
}
