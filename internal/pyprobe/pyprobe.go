// Package pyprobe is ctxlab's probe inside a CPython program that
// `ctxlab diagnose` runs: a sitecustomize on PYTHONPATH (embedded, as
// pydriver embeds driver.py) that loads before the program's code, runs
// the program's own sitecustomize after it, and sends raw timings — every
// asyncio loop's lag, every call_soon_threadsafe, every run_in_executor,
// to_thread and aiosqlite call split into its hops and its work — to ctxlab
// over an inherited pipe. This package prepares that (a temporary directory,
// the pipe, the environment), reads the pipe while the program runs, builds
// the histograms and rates, and reads them: GIL contention, CPU work in
// handlers, wrappers whose hops cost more than their work. It also tells a
// CPython process from /proc for `ctxlab watch` and gives the inferred GIL
// reading there. docs/pyprobe.md is the manual.
package pyprobe

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/launch"
)

// The probe's Python source, written into a temporary directory that is
// put first on the program's PYTHONPATH.
var (
	//go:embed sitecustomize.py
	loaderSource string
	//go:embed probe.py
	probeSource string
)

// EnvVar names the pipe's descriptor (and the tick) for the probe; the
// probe removes it from the program's environment as it loads.
const EnvVar = "CTXLAB_PYPROBE"

// childFD is the pipe's descriptor in the command: the first of
// exec.Cmd.ExtraFiles. The probe moves it out of the program's way.
const childFD = 3

// Tick is the period of the timer whose lateness is a loop's lag. A stall
// longer than it is corrected for (HdrHistogram's RecordCorrectedValue);
// one shorter is seen when a tick falls due inside it.
var Tick = time.Millisecond

// CallsPerS is the default of Session.CallsPerS: the most wrapped calls
// (call_soon_threadsafe, run_in_executor, to_thread, aiosqlite) a second
// the probe times. Above it, or when a loop polls more than PollsPerS
// times a second, the probe observes in windows of about WindowNs at
// random gaps (probe.py); every call is still counted, so counts are
// exact and only the timings are sampled: observing every call and poll
// cost a hop-bound program 13-16% on the VMs measured, the windows 0-2%,
// and counting every call 2-4% more on a program that does nothing but
// hop when counted in Python, nothing measurable in C (Counter;
// docs/pyprobe.md).
const CallsPerS = 250

// PollsPerS is probe.py's POLLS_PER_S: a loop that polls more often is
// timed in windows.
const PollsPerS = 2000

// MaxCallsPerS bounds --python-probe-calls.
const MaxCallsPerS = 1_000_000

// WindowNs is how long a window of timed calls stays open (probe.py's ON_NS).
const WindowNs = int64(2 * time.Millisecond)

// Mode is --python-probe: auto (when the command is a CPython), on (the
// same, and a note saying why when it is not one), off.
type Mode string

// Modes.
const (
	ModeAuto Mode = "auto"
	ModeOn   Mode = "on"
	ModeOff  Mode = "off"
)

// ParseMode checks a --python-probe value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeOn, ModeOff:
		return m, nil
	}
	return "", fmt.Errorf("--python-probe %q: must be auto, on or off", s)
}

var pythonName = regexp.MustCompile(`^python([0-9](\.[0-9]+)?t?)?(-dbg)?$`)

// Recognise says whether the command (argv0 as given, path as found on
// PATH) runs CPython: its name or the real file's is python, python3,
// python3.N (t), or it is a script whose #! line names one. why says what
// decided it, for the note.
func Recognise(argv0, path string) (bool, string) {
	if direct, why := pythonExe(argv0, path); direct {
		return true, why
	}
	if interp, _ := shebang(path); interp != "" {
		return true, fmt.Sprintf("%s is a script for %s", argv0, interp)
	}
	return false, fmt.Sprintf("%s is not a Python interpreter (nor a script whose #! line names one)", argv0)
}

// pythonExe: the command itself is a python (by its name, or its real
// file's name once links are resolved).
func pythonExe(argv0, path string) (bool, string) {
	if pythonName.MatchString(filepath.Base(argv0)) {
		return true, fmt.Sprintf("%s is a python executable", filepath.Base(argv0))
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && pythonName.MatchString(filepath.Base(real)) {
		return true, fmt.Sprintf("%s resolves to %s", argv0, real)
	}
	return false, ""
}

// shebang returns the python interpreter a script's #! line names, and the
// arguments given to it there ("" when it names none).
func shebang(path string) (string, []string) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 256)).ReadString('\n')
	if err != nil && line == "" {
		return "", nil
	}
	if !strings.HasPrefix(line, "#!") {
		return "", nil
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return "", nil
	}
	if filepath.Base(fields[0]) == "env" {
		fields = fields[1:]
		for len(fields) > 0 && strings.HasPrefix(fields[0], "-") { // env -S, -i …
			fields = fields[1:]
		}
	}
	if len(fields) == 0 || !pythonName.MatchString(filepath.Base(fields[0])) {
		return "", nil
	}
	return fields[0], fields[1:]
}

// blockingOption names the python option among args that keeps the probe
// out (-E and -I ignore PYTHONPATH, -S skips site), "" when none does. args
// are the interpreter's arguments, options first.
func blockingOption(args []string) string {
	flags, _ := pythonOptions(args)
	for _, c := range flags {
		if c == 'E' || c == 'I' || c == 'S' {
			return "-" + string(c)
		}
	}
	return ""
}

// pythonOptions reads the interpreter's options (args, options first): the
// one-letter flags given before the program, and the module -m names ("").
func pythonOptions(args []string) (flags []byte, module string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" || a == "--" || !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			return flags, ""
		}
		for j := 1; j < len(a); j++ {
			switch c := a[j]; c {
			case 'c': // the rest is the command
				return flags, ""
			case 'm': // the module: the rest of this argument, or the next
				module = a[j+1:]
				if module == "" && i+1 < len(args) {
					module = args[i+1]
				}
				return flags, module
			case 'W', 'X': // an argument follows, attached or next
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			default:
				flags = append(flags, c)
			}
		}
	}
	return flags, ""
}

// cProfilers are profilers that install themselves in C (PyEval_SetProfile),
// past the probe's sys.setprofile stand-in: their statistics would list
// the probe's own functions, so the probe stays out of a program they run.
var cProfilers = map[string]bool{"cProfile": true, "profile": true, "yappi": true, "pyinstrument": true, "line_profiler": true, "kernprof": true}

// underCProfiler names the C-level profiler the command runs the program
// under (python -m cProfile …, kernprof …), or "".
func underCProfiler(argv0 string, args []string) string {
	if b := filepath.Base(argv0); cProfilers[b] {
		return b
	}
	if _, mod := pythonOptions(args); cProfilers[mod] {
		return mod
	}
	return ""
}

// Session is the probe of one diagnose run: its directory, the pipe, and
// what was read from it.
type Session struct {
	dir    string
	forget func() // the keeper's hold on dir
	r, w   *os.File
	col    *collector
	done   chan error
	Reason string // why the probe is there (Recognise's word)
	// Counter is how the probe counts calls: in C with the counter built
	// for the interpreter, or in Python (Counter.Why).
	Counter Counter
	// CallsPerS is the most wrapped calls a second the probe times (0:
	// every call; CallsPerS by default).
	CallsPerS int
}

// ErrOff is returned by Prepare when the probe is not wanted for this
// command (a note says why, or nothing when it is simply not Python).
var ErrOff = errors.New("python probe off")

// Prepare decides whether the command gets the probe and, if so, writes
// the probe into a new temporary directory (with the counter in C for the
// interpreter, BuildCounter) and makes its pipe. A nil Session comes with
// the note to print ("" when the command is simply not Python under auto,
// or the probe is off).
func Prepare(ctx context.Context, mode Mode, argv []string, path string) (*Session, string) {
	if mode == ModeOff || len(argv) == 0 {
		return nil, ""
	}
	ok, why := Recognise(argv[0], path)
	if !ok {
		if mode == ModeAuto {
			return nil, ""
		}
		// The probe reaches a Python through its environment; another
		// command's (a shell's, make's) is left as it is.
		return nil, fmt.Sprintf("python probe: not loaded — %s; the probe loads only into a CPython that diagnose starts itself, and leaves another command's environment as it is (run the interpreter or script directly: ctxlab diagnose -- python3 app.py)", why)
	}
	args := argv[1:] // the interpreter's options come first
	if direct, _ := pythonExe(argv[0], path); !direct {
		_, args = shebang(path) // a script: its #! line's options
	}
	if opt := blockingOption(args); opt != "" {
		return nil, fmt.Sprintf("python probe: not loaded — the interpreter was started with %s, which keeps a sitecustomize on PYTHONPATH from loading; the program ran without it", opt)
	}
	if p := underCProfiler(argv[0], args); p != "" {
		return nil, fmt.Sprintf("python probe: not loaded — the program runs under %s, a profiler set in C whose statistics would list the probe's own functions; the program ran without it", p)
	}
	s, err := newSession()
	if err != nil {
		return nil, "python probe: not loaded — " + err.Error() + "; the program ran without it"
	}
	s.Reason, s.CallsPerS = why, CallsPerS
	s.Counter = BuildCounter(ctx, interpreter(argv[0], path), s.dir)
	return s, ""
}

// interpreter is the CPython a recognised command runs: the command
// itself, or the one its #! line names (found on PATH when it names a
// bare python3, as env does).
func interpreter(argv0, path string) string {
	if direct, _ := pythonExe(argv0, path); direct {
		return path
	}
	interp, _ := shebang(path)
	if !strings.Contains(interp, "/") {
		if p, err := exec.LookPath(interp); err == nil {
			return p
		}
	}
	return interp
}

func newSession() (*Session, error) {
	dir, err := os.MkdirTemp("", "ctxlab-pyprobe-")
	if err != nil {
		return nil, fmt.Errorf("no temporary directory for it: %w", err)
	}
	for name, src := range map[string]string{"sitecustomize.py": loaderSource, "_ctxlab_pyprobe.py": probeSource} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("cannot write it: %w", err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("no pipe for it: %w", err)
	}
	forget := launch.Temp(dir) // the keeper removes it if ctxlab dies first
	return &Session{dir: dir, forget: forget, r: r, w: w, col: newCollector(), done: make(chan error, 1)}, nil
}

// Env is environ with the probe's directory first on PYTHONPATH and the
// pipe's descriptor named; the probe undoes both in the program's own
// environment as it loads.
func (s *Session) Env(environ []string) []string {
	out := make([]string, 0, len(environ)+2)
	pp, had := "", false
	for _, kv := range environ {
		switch {
		case strings.HasPrefix(kv, "PYTHONPATH="):
			pp, had = strings.TrimPrefix(kv, "PYTHONPATH="), true
		case strings.HasPrefix(kv, EnvVar+"="):
		default:
			out = append(out, kv)
		}
	}
	v := s.dir
	if had {
		v += string(os.PathListSeparator) + pp
	}
	return append(out, "PYTHONPATH="+v, fmt.Sprintf("%s=%d,tick_us=%d,calls_per_s=%d", EnvVar, childFD, Tick.Microseconds(), s.CallsPerS))
}

// Files are the command's extra descriptors (exec.Cmd.ExtraFiles): the
// pipe's write end, which becomes descriptor 3.
func (s *Session) Files() []*os.File { return []*os.File{s.w} }

// Started is called once the command has started: ctxlab's copy of the
// write end is closed (so the pipe ends when the program's does) and the
// pipe is read from now on.
func (s *Session) Started() {
	s.w.Close()
	s.w = nil
	go func() { s.done <- s.col.read(s.r) }()
}

// Finish waits, after the command exited, at most wait for the rest of the
// probe's report (a process the program forked may hold the pipe open),
// removes the probe's directory and returns what was read.
func (s *Session) Finish(wait time.Duration) *Report {
	var rerr error
	timedOut := false
	select {
	case rerr = <-s.done:
	case <-time.After(wait):
		timedOut = true
		s.r.Close() // ends the read
		rerr = <-s.done
	}
	s.Close()
	rep := s.col.report()
	if c := rep.Cost; c != nil {
		c.counter(s.Counter)
	}
	switch {
	case timedOut:
		rep.Notes = append(rep.Notes, fmt.Sprintf("the probe's pipe was still open %v after the command exited (a process it started holds it): the report is what had arrived by then", wait))
	case rerr != nil && !errors.Is(rerr, os.ErrClosed):
		rep.Notes = append(rep.Notes, "the probe's report could not be read to its end: "+rerr.Error())
	}
	if !rep.Loaded && rep.Unsupported == "" && rep.Failed == "" {
		rep.Notes = append(rep.Notes, "the probe did not load: no Python started with its environment, or the interpreter did not run site (sitecustomize); the program ran without it")
	}
	return rep
}

// Close removes the probe's directory and closes the pipe; safe to call
// twice, and when the command never started.
func (s *Session) Close() {
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.forget()
		s.dir = ""
	}
}

// Dir is the probe's temporary directory ("" once removed), for tests.
func (s *Session) Dir() string { return s.dir }

// trimNL is for notes read from Python.
func trimNL(s string) string { return string(bytes.TrimSpace([]byte(s))) }
