package vary

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/shim"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/watch"
	"github.com/ctxlab/ctxlab/internal/wss"
)

// Command is the user's command and how each run of it is measured.
type Command struct {
	// Args is CMD ARGS…, with {NAME} put in per point (Point.Expand).
	Args []string
	// Env is the environment each run starts from; the point's NAME=value
	// pairs are set on it.
	Env []string
	// Interval is the time between /proc readings of the command's
	// threads (their run-queue wait); Timeout a run's time limit.
	Interval, Timeout time.Duration
	// Source opens the perf counters (measure.PerfTree; a fake in tests)
	// of Events on the command, inherited by all it starts.
	Source measure.TreeSource
	Events []measure.EventSpec
	// Show, when set, also gets the command's stdout and stderr; they are
	// otherwise kept (the ends of them) and not shown.
	Show io.Writer
	// Work is the units of work of one run (--work), 0 when not given;
	// WorkFrom reads them from the command's stdout instead (--work-from):
	// the last match, its first group (or the whole match without one).
	Work     float64
	WorkFrom *regexp.Regexp
	Host     *sysinfo.Host
	Root     procstat.Root
	// WSS says to sample the command's working set (--wss).
	WSS bool
	// Grace is how long a stopped run has between the signal that asks
	// it to end and SIGKILL (0: DefaultGrace).
	Grace time.Duration
	// Stdio, when set, passes ctxlab's own stdin, stdout and stderr to the
	// command, which then shares ctxlab's process group and terminal
	// (plain diagnose); without it the command's output is kept (Show).
	Stdio *Stdio
	// Started is called with the command's PID once its counters are
	// open, before it runs.
	Started func(pid int)
	// ExtraFiles become the command's descriptors 3, 4, … (the CPython
	// probe's pipe).
	ExtraFiles []*os.File
}

// Stdio are the streams plain diagnose passes through to the command.
type Stdio struct {
	In       *os.File
	Out, Err io.Writer
}

// Rusage is what wait4 says of the command and its waited-for children.
type Rusage struct {
	UserNs, SysNs  int64
	Vol, Invol     int64
	MinFlt, MajFlt int64
	MaxRSSKiB      int64
}

// Sample is one run of the command at one point.
type Sample struct {
	Point, Round int
	// PID is the command's process, 0 when it never started.
	PID int
	// Status is result.StatusOK, StatusFailed (a non-zero exit, a signal,
	// no work found), StatusTimedOut or StatusInterrupted; Reason says
	// why it is not ok.
	Status     string
	Reason     string
	ExitStatus int
	WallNs     int64
	Counters   []measure.TreeReading
	Rusage     Rusage
	// RunqNs is the run-queue wait of the command's threads and
	// descendants, summed over the /proc readings of every thread whose
	// schedstat was read (HasRunq: at least one), and SampledCPUNs their
	// CPU time as the same readings saw it; Sampling says why there are
	// no readings.
	RunqNs, SampledCPUNs uint64
	HasRunq              bool
	Sampling             string
	// Work is the run's units of work (0: not known).
	Work float64
	// WSS is the command's working set as package wss sampled it; nil
	// with --wss off.
	WSS *wss.Reading
	// Notes: how the counters were opened, processes left running.
	Notes         []string
	Before, After sysinfo.Noise
	// SelfCPUNs is the CPU time ctxlab itself (sampling, waiting, its
	// keeper) used while the command ran: on a machine with few CPUs it
	// preempts the command, so its share is stated beside the figures.
	SelfCPUNs int64
	// Held says what held the command's process tree (launch.Result.Held).
	Held string
	// Profile is the whole run as the /proc readings saw it (plain
	// diagnose shows it).
	Profile watch.Profile
}

// OK says the run finished and its figures count.
func (s Sample) OK() bool { return s.Status == result.StatusOK }

// DefaultGrace is how long a stopped command has between the signal that
// asks it to end and SIGKILL.
const DefaultGrace = launch.DefaultGrace

// keepOut and keepErr are how much of the command's stdout (for
// --work-from) and stderr (for a failure's reason) a run keeps.
const (
	keepOut = 64 << 10
	keepErr = 4 << 10
)

// Run runs the command once at p through launch and measures it: wall
// time from its exec to its exit, perf counters over everything it
// starts, rusage, and /proc samples of its threads every Interval. It
// runs in a process group of its own, stdin /dev/null (unless Stdio
// passes ctxlab's own through); when ctx ends (Ctrl-C) or Timeout passes
// it is stopped by launch's one rule. Whatever it leaves running is
// killed and reaped before Run returns, so no run outlives its turn.
func (c *Command) Run(ctx context.Context, p Point) Sample {
	s := Sample{Status: result.StatusOK}
	if ctx.Err() != nil {
		s.Status, s.Reason = result.StatusInterrupted, "not started: interrupted"
		return s
	}
	args := p.Expand(c.Args)
	path, err := exec.LookPath(args[0])
	if err != nil {
		s.Status, s.Reason = result.StatusFailed, fmt.Sprintf("command %q: %v", args[0], err)
		return s
	}
	spec := launch.Spec{Path: path, Args: args, Env: p.Env(c.Env), Timeout: c.Timeout, Grace: c.Grace, Interval: c.Interval, OwnGroup: c.Stdio == nil,
		ExtraFiles: c.ExtraFiles}
	out, errOut := &tail{max: keepOut}, &tail{max: keepErr}
	if c.Stdio != nil {
		spec.Stdin, spec.Stdout, spec.Stderr = c.Stdio.In, c.Stdio.Out, c.Stdio.Err
	} else {
		spec.Stdout, spec.Stderr = io.Writer(out), io.Writer(errOut)
		if c.Show != nil {
			spec.Stdout, spec.Stderr = io.MultiWriter(out, c.Show), io.MultiWriter(errOut, c.Show)
		}
	}
	var counters *measure.TreeCounters
	defer func() { counters.Close() }()
	sm := &sampling{c: c, s: &s}
	defer sm.wait()
	spec.Started = func(pid int) {
		counters = measure.OpenTree(c.Source, c.Events, pid)
		if shim.Script(path) { // pyenv's python3: sample the interpreter it execs, not the bash before it
			sm.follow(ctx, pid, path)
		} else {
			sm.begin(pid)
		}
		if c.Started != nil {
			c.Started(pid)
		}
	}
	spec.Tick = func() { sm.step(true) }
	spec.Exited = func() { sm.step(false) } // the exited command is a zombie until reaped: its last counts are still readable
	s.Before = sysinfo.Sample(c.Host)
	r, err := launch.Run(ctx, spec)
	s.After = sysinfo.Sample(c.Host)
	sm.wait()
	if r == nil {
		s.Status, s.Reason = result.StatusFailed, err.Error()
		if ctx.Err() != nil {
			s.Status = result.StatusInterrupted
		}
		return s
	}
	s.Counters = counters.Read()
	sm.end()
	s.exited(r, err, c.Timeout, lastLine(errOut.Bytes()))
	if s.Status == result.StatusOK {
		s.Work = c.Work
		if c.WorkFrom != nil {
			n, err := WorkIn(out.Bytes(), c.WorkFrom)
			if err != nil {
				s.Status, s.Reason = result.StatusFailed, err.Error()
			}
			s.Work = n
		}
	}
	return s
}

// sampling is a run's /proc readings of the command's threads and its
// working set, begun once the command runs its own program: at once, or
// for a shim once it has exec'd the program it stands for.
type sampling struct {
	c         *Command
	s         *Sample
	mu        sync.Mutex
	w         *watch.Watcher
	ws        *wss.Sampler
	following sync.WaitGroup
}

func (m *sampling) begin(pid int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, err := watch.NewWatcher(m.c.Root, []int{pid})
	if err == nil {
		w.Descendants = true
		w.Begin()
		m.w = w
	} else {
		m.s.Sampling = err.Error()
	}
	m.ws = wss.Start(m.c.Root, pid, m.c.WSS)
}

// follow begins the readings once pid, in a shim, has exec'd its program
// (or shim.Limit has passed), and notes where the shim led.
func (m *sampling) follow(ctx context.Context, pid int, path string) {
	m.following.Add(1)
	go func() {
		defer m.following.Done()
		note := shim.Follow(ctx, m.c.Root, pid, path, shim.Limit).Note()
		m.begin(pid)
		m.mu.Lock()
		if note != "" {
			m.s.Notes = append(m.s.Notes, note)
		}
		m.mu.Unlock()
	}()
}

// step takes a reading; every interval (tick) the working set's too.
func (m *sampling) step(tick bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tick && m.ws != nil {
		m.ws.Tick()
	}
	if m.w != nil {
		m.s.add(m.w.Step())
	}
}

func (m *sampling) wait() { m.following.Wait() }

// end keeps the whole run's readings in the sample.
func (m *sampling) end() {
	if m.w != nil {
		m.s.Profile = m.w.Summary
	}
	if m.ws != nil {
		m.s.WSS = m.ws.Stop()
	}
}

// exited records how the reaped command ended: its rusage, its exit
// status or signal, why it was stopped, a failure (with the last line of
// its stderr), what it left running, and ctxlab's own CPU time.
func (s *Sample) exited(r *launch.Result, err error, timeout time.Duration, lastErr string) {
	s.PID, s.WallNs, s.SelfCPUNs, s.ExitStatus, s.Held = r.PID, r.WallNs, r.SelfCPUNs, r.ExitStatus, r.Held
	if r.Note != "" {
		s.Notes = append(s.Notes, r.Note)
	}
	if n := LeftNote(r.Left); n != "" {
		s.Notes = append(s.Notes, n)
	}
	if r.HasRusage {
		u := r.Rusage
		s.Rusage = Rusage{UserNs: (u.Utime.Sec*1e6 + u.Utime.Usec) * 1e3, SysNs: (u.Stime.Sec*1e6 + u.Stime.Usec) * 1e3,
			Vol: u.Nvcsw, Invol: u.Nivcsw, MinFlt: u.Minflt, MajFlt: u.Majflt, MaxRSSKiB: u.Maxrss}
	}
	switch {
	case r.Stopped == launch.Interrupted:
		s.Status, s.Reason = result.StatusInterrupted, "interrupted: the run in flight was stopped"
	case r.Stopped == launch.TimedOut:
		s.Status, s.Reason = result.StatusTimedOut, fmt.Sprintf("timed out: still running after %s (--timeout)", timeout)
	case err != nil:
		s.Status, s.Reason = result.StatusFailed, err.Error()
	case s.ExitStatus != 0:
		s.Status, s.Reason = result.StatusFailed, fmt.Sprintf("exit status %d", s.ExitStatus)
		if r.Signal != 0 {
			s.Reason += fmt.Sprintf(" (killed by signal %d, %v)", int(r.Signal), r.Signal)
		}
		if lastErr != "" {
			s.Reason += ": " + lastErr
		}
	}
}

// add counts one interval's readings: every thread whose schedstat was
// read, so one thread caught between its listing and its schedstat does
// not cost the others their figures.
func (s *Sample) add(p watch.Profile, err error) {
	if err != nil {
		return
	}
	for _, t := range append(p.Threads, p.Children.Total) {
		if t.HasSchedstat {
			s.RunqNs += t.RunqNs
			s.SampledCPUNs += t.CPUNs
			s.HasRunq = true
		}
	}
}

// SelfCPUNote states ctxlab's own CPU time while the command ran (its
// sampling, waiting and keeper) beside the command's: on a machine with
// few CPUs, every wake-up of ctxlab's can preempt one of the command's
// threads, a switch the counters count ("" when nothing was measured).
func SelfCPUNote(selfNs, cmdNs, wallNs int64, held string) string {
	if selfNs <= 0 || wallNs <= 0 {
		return ""
	}
	s := fmt.Sprintf("ctxlab's own CPU time while the command ran: %s (%.1f%% of one CPU over its %s", result.FormatNs(float64(selfNs)),
		100*float64(selfNs)/float64(wallNs), result.FormatNs(float64(wallNs)))
	if cmdNs > 0 {
		s += fmt.Sprintf("; %.1f%% of the command's %s", 100*float64(selfNs)/float64(cmdNs), result.FormatNs(float64(cmdNs)))
	}
	s += "): its sampling and its keeper, which can preempt the command where CPUs are few"
	if held != "" {
		s += "; its process tree was held by " + held
	}
	return s
}

// LeftNote names the processes a command left running when it exited,
// which launch ended ("" when none): every one is counted, at most five
// named.
func LeftNote(left []launch.Left) string {
	if len(left) == 0 {
		return ""
	}
	var names []string
	for i, p := range left {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(left)-i))
			break
		}
		names = append(names, fmt.Sprintf("pid %d, %s", p.PID, termsafe.String(p.Comm)))
	}
	what := fmt.Sprintf("%d processes", len(left))
	if len(left) == 1 {
		what = "1 process"
	}
	return fmt.Sprintf("the command left %s running when it exited (%s): ended with it, so nothing outlives its run; "+
		"what they did after its exit is not counted (rusage, which covers waited-for children only, counts none of them)", what, strings.Join(names, "; "))
}

// WorkIn reads the units of work from a command's output: the last match
// of re, its first group when it has one, as a number (thousands may be
// separated by , or _). It fails, saying so, without a match or a number
// above 0.
func WorkIn(out []byte, re *regexp.Regexp) (float64, error) {
	ms := re.FindAllSubmatch(out, -1)
	if len(ms) == 0 {
		return 0, fmt.Errorf("--work-from %q found no match in the command's output", re.String())
	}
	m := ms[len(ms)-1]
	txt := m[0]
	if len(m) > 1 {
		txt = m[1]
	}
	clean := strings.NewReplacer(",", "", "_", "").Replace(strings.TrimSpace(string(txt)))
	n, err := strconv.ParseFloat(clean, 64)
	if err != nil || !(n > 0) || n > result.MaxCount {
		return 0, fmt.Errorf("--work-from %q matched %q, which is not a number of units above 0 (at most 1e15)", re.String(), termsafe.String(string(txt)))
	}
	return n, nil
}

// lastLine is the last non-empty line of b, escaped and at most 200
// bytes long.
func lastLine(b []byte) string {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	l := strings.TrimSpace(string(lines[len(lines)-1]))
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return termsafe.String(l)
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// Bytes is what was kept.
func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
