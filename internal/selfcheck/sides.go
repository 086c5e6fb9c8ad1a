package selfcheck

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

//go:embed pyref.py
var pyRef []byte

// Host is what the comparisons need from this machine.
type Host struct {
	Exe       string // this ctxlab binary, which runs the arms and its own references
	CPU       int    // every arm and every reference runs its workers here
	Reps      int    // ctxlab's --reps, and the references' repetitions
	BenchTime time.Duration
	Perf      string // perf's path, or "" with PerfWhy
	PerfWhy   string
	Python    string // the interpreter, or "" with PythonWhy
	PythonWhy string
	Dir       string // a private directory for the embedded pyref.py
	// User, when set, is the user's query (--set db=… query=… args=…):
	// its CPython direct arms are held to the application's own loop
	// (UserRows). UserSets are the --set flags that name it to ctxlab run.
	User     *sqlop.UserOp
	UserSets []string
}

// Comparisons are the rows selfcheck runs, in the registry's order: every
// arm an experiment declares in its Harness, beside the reference it names
// (scripts/harness-compare.sh's, for the thread and process arms).
func Comparisons(h Host) ([]Comparison, error) {
	pyref := ""
	if h.Python != "" {
		pyref = filepath.Join(h.Dir, "pyref.py")
		if err := os.WriteFile(pyref, pyRef, 0o600); err != nil {
			return nil, err
		}
	}
	var out []Comparison
	for _, spec := range exp.All() {
		hs, ok := exp.Hook[exp.Harnessed](spec)
		if !ok {
			continue
		}
		for _, ref := range hs.Harness() {
			if ref.Reference.UserOnly() {
				if h.User != nil {
					out = append(out, h.userRow(ref, pyref))
				}
				continue
			}
			c := Comparison{Arm: ref.Arm, Reference: string(ref.Reference)}
			switch ref.Reference {
			case exp.RefChanLoop:
				c.Ctxlab, c.Ref = h.arm(ref.Arm, false), h.role(roleChan, []int{h.CPU})
			case exp.RefRawFutex:
				c.Ctxlab, c.Ref = h.arm(ref.Arm, false), h.role(roleRaw, nil, "futex")
			case exp.RefRawEventfd:
				c.Ctxlab, c.Ref = h.arm(ref.Arm, false), h.role(roleRaw, nil, "eventfd")
			case exp.RefRawProcess:
				c.Ctxlab, c.Ref = h.arm(ref.Arm, false), h.role(roleRawProc, nil)
			case exp.RefPerfThreads, exp.RefPerfProcess:
				if h.Perf == "" {
					c.Unsupported = h.PerfWhy
					break
				}
				flags := []string{}
				if ref.Reference == exp.RefPerfThreads {
					flags = append(flags, "-T")
				}
				c.Ctxlab, c.Ref = h.arm(ref.Arm, false), h.perfBench(flags...)
			case exp.RefPyChain, exp.RefPyLookup:
				if h.Python == "" {
					c.Unsupported = h.PythonWhy
					break
				}
				mode := "chain"
				if ref.Reference == exp.RefPyLookup {
					mode = "lookup"
				}
				c.Ctxlab, c.Ref = h.arm(ref.Arm, true), h.pyLoop(pyref, mode)
			default:
				return nil, fmt.Errorf("%s: selfcheck knows no reference %q", ref.Arm, ref.Reference)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// userRow is one row of the user's query: ctxlab's CPython direct call on
// the application's connection beside the application's own loop
// (conn = sqlite3.connect(path), pyref.py -db), or on the immutable
// connection beside the same loop on the immutable URI.
func (h Host) userRow(ref exp.HarnessRef, pyref string) Comparison {
	c := Comparison{Arm: ref.Arm, Reference: string(ref.Reference)}
	var flags []string
	switch {
	case h.Python == "":
		c.Unsupported = h.PythonWhy
		return c
	case len(h.User.Args) == 0:
		c.Unsupported = "the CPython arms bind one argument per call: give the query a ? and --set args"
		return c
	case ref.Reference == exp.RefPyUserImmutable:
		flags = []string{"-immutable"}
	case h.User.WAL:
		c.Unsupported = "a WAL database: the application's own loop (sqlite3.connect(path), read-write) would checkpoint it when it closes, " +
			"a write; run scripts/userquery-compare.sh with DB= a copy"
		return c
	}
	c.Ctxlab, c.Ref = h.arm(ref.Arm, true, h.UserSets...), h.pyUserLoop(pyref, flags...)
	return c
}

// pyUserLoop runs pyref.py's loop of the user's query on the user's
// file, every row read (-all, as ctxlab reads it), pinned to h.CPU.
func (h Host) pyUserLoop(pyref string, flags ...string) Side {
	keys := make([]string, len(h.User.Args))
	for i, a := range h.User.Args {
		keys[i] = fmt.Sprint(a)
	}
	return func(ctx context.Context) (float64, error) {
		f, err := os.CreateTemp(h.Dir, "keys-")
		if err != nil {
			return 0, err
		}
		defer os.Remove(f.Name())
		_, err = f.WriteString(strings.Join(keys, "\n") + "\n")
		if err = errors.Join(err, f.Close()); err != nil {
			return 0, err
		}
		args := append([]string{pyref, "-db", h.User.Path, "-query", h.User.Query, "-keys", "file:" + f.Name(), "-all",
			"-seconds", strconv.FormatFloat(h.BenchTime.Seconds(), 'f', -1, 64),
			"-reps", strconv.Itoa(h.Reps), "-cpu", strconv.Itoa(h.CPU)}, flags...)
		out, err := output(ctx, child.Options{Exe: h.Python, Args: args})
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	}
}

// arm runs `ctxlab run ARM` with the workers on h.CPU, as a user would
// (and as harness-compare.sh does), and reads its median from the JSON.
func (h Host) arm(name string, py bool, extra ...string) Side {
	return func(ctx context.Context) (float64, error) {
		args := []string{"run", name, "--cpus", strconv.Itoa(h.CPU), "--reps", strconv.Itoa(h.Reps),
			"--benchtime", h.BenchTime.String(), "--no-store", "--format", "json"}
		args = append(args, extra...)
		if py {
			args = append(args, "--python", h.Python)
		}
		out, err := output(ctx, child.Options{Exe: h.Exe, Args: args})
		if err != nil {
			return 0, err
		}
		var run result.Run
		if err := json.Unmarshal(out, &run); err != nil {
			return 0, fmt.Errorf("ctxlab run %s: reading its JSON: %w", name, err)
		}
		for _, a := range run.Arms {
			if a.Name != name {
				continue
			}
			if a.Status != result.StatusOK {
				return 0, fmt.Errorf("%s %s: %s", a.Status, name, a.Reason)
			}
			return a.Median, nil
		}
		return 0, fmt.Errorf("ctxlab run %s: no such arm in its result", name)
	}
}

// role runs one of selfcheck's own child modes (children.go), pinned
// whole to cpus when given, and reads the ns per op it prints.
func (h Host) role(role string, cpus []int, args ...string) Side {
	return func(ctx context.Context) (float64, error) {
		a := append([]string{h.BenchTime.String(), strconv.Itoa(h.Reps), strconv.Itoa(h.CPU)}, args...)
		out, err := output(ctx, child.Options{Role: role, Args: a, CPUs: cpus})
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	}
}

var usecsPerOp = regexp.MustCompile(`([0-9.]+) usecs/op`)

// perfBench runs `perf bench sched pipe` pinned whole to h.CPU (through
// the exec child mode, so the affinity is set before perf starts), sized
// to about Reps × BenchTime from the figure of the run before (a pilot of
// 2 000 loops the first time).
func (h Host) perfBench(flags ...string) Side {
	var mu sync.Mutex
	perOpNs := 0.0
	return func(ctx context.Context) (float64, error) {
		mu.Lock()
		defer mu.Unlock()
		if perOpNs == 0 {
			v, err := h.perfOnce(ctx, 2000, flags)
			if err != nil {
				return 0, err
			}
			perOpNs = v
		}
		loops := int(float64(h.Reps) * float64(h.BenchTime) / perOpNs)
		v, err := h.perfOnce(ctx, min(max(loops, 1000), 10_000_000), flags)
		if err == nil {
			perOpNs = v
		}
		return v, err
	}
}

func (h Host) perfOnce(ctx context.Context, loops int, flags []string) (float64, error) {
	args := append([]string{h.Perf, "bench", "sched", "pipe"}, flags...)
	args = append(args, "-l", strconv.Itoa(loops))
	out, err := output(ctx, child.Options{Role: roleExec, Args: args, CPUs: []int{h.CPU}})
	if err != nil {
		return 0, err
	}
	return ParsePerfBench(out)
}

// ParsePerfBench reads perf bench sched pipe's "N usecs/op", in ns.
func ParsePerfBench(out []byte) (float64, error) {
	m := usecsPerOp.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("perf bench printed no usecs/op: %q", lastLine(out))
	}
	us, err := strconv.ParseFloat(string(m[1]), 64)
	return us * 1000, err
}

// ProbePerf says why perf bench cannot be the reference here ("" when it
// can): not installed, or it fails (Debian's perf wrapper without the
// kernel's package, a perf_event_paranoid that refuses it).
func ProbePerf(ctx context.Context) (path, why string) {
	path, err := exec.LookPath("perf")
	if err != nil {
		return "", "perf is not installed (Debian: apt-get install linux-perf), so the pipe arms have no independent reference"
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := output(pctx, child.Options{Exe: path, Args: []string{"bench", "sched", "pipe", "-l", "100"}})
	if err == nil {
		_, err = ParsePerfBench(out)
	}
	if err != nil {
		return "", "perf bench sched pipe does not run here: " + err.Error()
	}
	return path, ""
}

// pyLoop runs the embedded plain loop in the run's interpreter, pinned to
// h.CPU by the script itself.
func (h Host) pyLoop(pyref, mode string) Side {
	return func(ctx context.Context) (float64, error) {
		args := []string{pyref, "-mode", mode, "-seconds", strconv.FormatFloat(h.BenchTime.Seconds(), 'f', -1, 64),
			"-reps", strconv.Itoa(h.Reps), "-cpu", strconv.Itoa(h.CPU)}
		out, err := output(ctx, child.Options{Exe: h.Python, Args: args})
		if err != nil {
			return 0, err
		}
		return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	}
}

// output runs a child to its end through launch (its own process group,
// under ctxlab's keeper, so nothing it starts outlives ctxlab) and returns
// its stdout; a cancelled ctx stops it, and a failure carries the last
// line of its stderr.
func output(ctx context.Context, o child.Options) ([]byte, error) {
	path, argv, env, err := child.Command(o)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := launch.Output(ctx, launch.Spec{Path: path, Args: argv, Env: env})
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%s (%v)", lastLine(stderr), err)
	}
	if err != nil {
		return nil, err
	}
	return stdout, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
