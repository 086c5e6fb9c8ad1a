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
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
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
}

// OK says the run finished and its figures count.
func (s Sample) OK() bool { return s.Status == result.StatusOK }

// DefaultGrace is how long a stopped command has between the signal that
// asks it to end and SIGKILL.
const DefaultGrace = 2 * time.Second

// keepOut and keepErr are how much of the command's stdout (for
// --work-from) and stderr (for a failure's reason) a run keeps.
const (
	keepOut = 64 << 10
	keepErr = 4 << 10
)

// Run runs the command once at p and measures it: wall time from its exec
// to its exit, perf counters over everything it starts, rusage, and
// /proc samples of its threads every Interval. It runs in a process
// group of its own, stdin /dev/null; when ctx ends (Ctrl-C) or Timeout
// passes it gets SIGINT (SIGTERM at the time limit), then SIGKILL after
// Grace. Whatever it leaves running, in its group or reparented to ctxlab
// (the subreaper, which the caller must make ctxlab), is killed and reaped
// before Run returns, so no run outlives its turn.
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
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Env = p.Env(c.Env)
	out, errOut := &tail{max: keepOut}, &tail{max: keepErr}
	cmd.Stdout, cmd.Stderr = io.Writer(out), io.Writer(errOut)
	if c.Show != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(out, c.Show), io.MultiWriter(errOut, c.Show)
	}
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	cmd.WaitDelay = grace // a pipe held open by something already killed
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.Before = sysinfo.Sample(c.Host)
	counters, note, err := measure.StartStopped(cmd, c.Source, c.Events)
	if err != nil {
		s.Status, s.Reason = result.StatusFailed, fmt.Sprintf("starting %s: %v", args[0], err)
		return s
	}
	began := time.Now()
	defer counters.Close()
	if note != "" {
		s.Notes = append(s.Notes, note)
	}
	cmdProc, _ := c.Root.ReadProc(cmd.Process.Pid) // its start time tells its leftovers from older processes
	c.watch(ctx, &s, cmd.Process.Pid, grace, began)
	if n := stopLeftovers(c.Root, cmdProc); n != "" {
		s.Notes = append(s.Notes, n)
	}
	waitErr := cmd.Wait()
	reapLeftovers(c.Root, cmdProc)
	s.After = sysinfo.Sample(c.Host)
	s.Counters = counters.Read()
	s.exited(cmd, waitErr, args[0], lastLine(errOut.Bytes()))
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

// watch reads the command's threads every Interval until it exits,
// without reaping it, and stops it when ctx ends (SIGINT) or Timeout
// passes (SIGTERM), then SIGKILL after grace. The wall time from began
// ends when it exits; the last readings are taken after: a zombie's
// counts are still readable.
func (c *Command) watch(ctx context.Context, s *Sample, pid int, grace time.Duration, began time.Time) {
	exited := make(chan struct{})
	go func() { // tells when the command has exited, without reaping it
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		close(exited)
	}()
	w, werr := watch.NewWatcher(c.Root, []int{pid})
	if werr == nil {
		w.Descendants = true
		w.Begin()
	} else {
		s.Sampling = werr.Error()
	}
	ws := wss.Start(c.Root, pid, c.WSS) // the working set (package wss)
	defer func() { s.WSS = ws.Stop() }()
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	limit := time.NewTimer(c.Timeout)
	defer limit.Stop()
	var kill <-chan time.Time
	stop := ctx.Done()
	for {
		select {
		case <-exited:
			s.WallNs = int64(time.Since(began))
			if w != nil {
				s.add(w.Step())
			}
			return
		case <-tick.C:
			ws.Tick()
			if w != nil {
				s.add(w.Step())
			}
		case <-stop:
			s.Status, s.Reason = result.StatusInterrupted, "interrupted: the run in flight was stopped"
			_ = unix.Kill(-pid, unix.SIGINT)
			stop, kill = nil, time.After(grace)
		case <-limit.C:
			if s.Status == result.StatusOK {
				s.Status, s.Reason = result.StatusTimedOut, fmt.Sprintf("timed out: still running after %s (--timeout)", c.Timeout)
			}
			_ = unix.Kill(-pid, unix.SIGTERM)
			kill = time.After(grace)
		case <-kill:
			_ = unix.Kill(-pid, unix.SIGKILL)
			kill = nil
		}
	}
}

// exited records how the reaped command ended: its rusage, its exit
// status or signal, and a failure (with the last line of its stderr).
func (s *Sample) exited(cmd *exec.Cmd, waitErr error, name, lastErr string) {
	ps := cmd.ProcessState
	if ps == nil {
		if waitErr != nil && s.Status == result.StatusOK {
			s.Status, s.Reason = result.StatusFailed, fmt.Sprintf("waiting for %s: %v", name, waitErr)
		}
		return
	}
	if r, ok := ps.SysUsage().(*syscall.Rusage); ok {
		s.Rusage = Rusage{UserNs: (r.Utime.Sec*1e6 + r.Utime.Usec) * 1e3, SysNs: (r.Stime.Sec*1e6 + r.Stime.Usec) * 1e3,
			Vol: r.Nvcsw, Invol: r.Nivcsw, MinFlt: r.Minflt, MajFlt: r.Majflt, MaxRSSKiB: r.Maxrss}
	}
	signal := ""
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s.ExitStatus = 128 + int(ws.Signal())
		signal = fmt.Sprintf(" (killed by signal %d, %v)", int(ws.Signal()), ws.Signal())
	} else {
		s.ExitStatus = ps.ExitCode()
	}
	if s.Status == result.StatusOK && s.ExitStatus != 0 {
		s.Status, s.Reason = result.StatusFailed, fmt.Sprintf("exit status %d%s", s.ExitStatus, signal)
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

// stopLeftovers kills what the command left running: the rest of its
// process group, and processes that came to ctxlab as orphans
// (procstat.Leftovers). It names them in a note, "" when there were none.
func stopLeftovers(root procstat.Root, cmd procstat.Proc) string {
	if cmd.PID == 0 {
		return ""
	}
	left := procstat.Leftovers(root, os.Getpid(), cmd)
	_ = unix.Kill(-cmd.PID, unix.SIGKILL) // its group: the command is a zombie, the rest go
	var names []string
	for _, p := range left {
		_ = unix.Kill(p.PID, unix.SIGKILL)
		if len(names) < 5 {
			names = append(names, fmt.Sprintf("pid %d, %s", p.PID, termsafe.String(p.Comm)))
		}
	}
	if len(left) == 0 {
		return ""
	}
	if more := len(left) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	return fmt.Sprintf("the command left %d process(es) running (%s): stopped, so no run outlives its turn", len(left), strings.Join(names, "; "))
}

// reapLeftovers waits for the killed orphans that came to ctxlab, and for
// their children, which come to it in turn as their parents die.
func reapLeftovers(root procstat.Root, cmd procstat.Proc) {
	self := os.Getpid()
	for pass := 0; pass < 100 && cmd.PID != 0; pass++ {
		all, err := root.Procs()
		if err != nil {
			return
		}
		n := 0
		for _, p := range all {
			if p.PPID == self && p.PID != cmd.PID && p.StartTicks >= cmd.StartTicks {
				_ = unix.Kill(p.PID, unix.SIGKILL)
				var ws unix.WaitStatus
				_, _ = unix.Wait4(p.PID, &ws, 0, nil)
				n++
			}
		}
		if n == 0 {
			return
		}
	}
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
