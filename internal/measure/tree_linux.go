package measure

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// TreeSource opens and reads perf counters that follow a whole process
// tree (perf's inherit bit): every thread and child the process creates
// after the counter was opened is counted too. PerfTree is the real one;
// tests give a fake, so the unsupported rule (TreeCounters.Read) is
// checked on a machine with or without a PMU.
type TreeSource interface {
	OpenInherited(ev EventSpec, pid int) (fd int, userOnly bool, err error)
	ReadCounter(fd int) (value, enabledNs, runningNs uint64, err error)
	Close(fd int) error
}

// PerfTree is the TreeSource backed by perf_event_open(2).
type PerfTree struct{}

// OpenInherited implements TreeSource (OpenInherited).
func (PerfTree) OpenInherited(ev EventSpec, pid int) (int, bool, error) {
	return OpenInherited(ev, pid)
}

// ReadCounter implements TreeSource (ReadCounter).
func (PerfTree) ReadCounter(fd int) (uint64, uint64, uint64, error) { return ReadCounter(fd) }

// Close implements TreeSource.
func (PerfTree) Close(fd int) error { return unix.Close(fd) }

// treeCounter is one counter opened on a process tree, or why not.
type treeCounter struct {
	ev       EventSpec
	fd       int
	userOnly bool
	openErr  error
}

// TreeCounters are the counters opened on one process tree.
type TreeCounters struct {
	src TreeSource
	cs  []*treeCounter
}

// OpenTree opens each of events on process pid, inherited by everything
// it starts; an event that cannot be opened keeps its reason.
func OpenTree(src TreeSource, events []EventSpec, pid int) *TreeCounters {
	t := &TreeCounters{src: src}
	for _, ev := range events {
		c := &treeCounter{ev: ev, fd: -1}
		fd, userOnly, err := src.OpenInherited(ev, pid)
		if err != nil {
			c.openErr = err
		} else {
			c.fd, c.userOnly = fd, userOnly
		}
		t.cs = append(t.cs, c)
	}
	return t
}

// Close closes every open counter; a nil set closes nothing.
func (t *TreeCounters) Close() {
	if t == nil {
		return
	}
	for _, c := range t.cs {
		if c.fd >= 0 {
			_ = t.src.Close(c.fd)
			c.fd = -1
		}
	}
}

// TreeReading is one counter's total over the tree's whole life, or why
// there is none: Value is nil exactly when Unsupported says why. A
// counter that cannot really count here never reads 0.
type TreeReading struct {
	Event       EventSpec
	Value       *uint64
	Scaled      bool // multiplexed: Value is perf's estimate of the full count
	UserOnly    bool // perf_event_paranoid allowed user-mode counting only
	Unsupported string
}

// Read reads every counter once the tree has exited, by the one rule for
// what is unsupported (Count.Unsupported), the tree's work being what its
// task-clock counted: an open or read error gives its reason, a counter
// that never ran on the PMU ReasonNeverRan, a kernel event counted user
// mode only that read 0 ReasonUserOnlyZero, and a hardware counter that
// read 0 while task-clock counted real work ReasonZeroCount. Multiplexed
// counts are scaled as perf stat does, truncated as it prints them.
func (t *TreeCounters) Read() []TreeReading {
	if t == nil {
		return nil
	}
	counts := make([]Count, len(t.cs))
	var out []TreeReading
	var taskClock uint64
	for i, c := range t.cs {
		r := TreeReading{Event: c.ev, UserOnly: c.userOnly}
		counts[i] = Count{Event: c.ev, OpenErr: c.openErr, UserOnlyTried: true, UserOnly: c.userOnly}
		if c.fd >= 0 {
			v, en, run, err := t.src.ReadCounter(c.fd)
			counts[i].ReadErr, counts[i].Running = err, run
			if s, ok := Scale(v, en, run); ok && run < en {
				v, r.Scaled = uint64(s), true
			}
			counts[i].Value = float64(v)
			r.Value = &v
			if err == nil && run > 0 && c.ev.Name == "task-clock" {
				taskClock = v
			}
		}
		out = append(out, r)
	}
	for i := range out {
		counts[i].Work = taskClock > 0
		if why := counts[i].Unsupported(); why != "" {
			out[i].Value, out[i].Scaled, out[i].Unsupported = nil, false, why
		}
	}
	return out
}

// StartStopped starts cmd stopped at its exec (ptrace), opens events on it
// through src, inherited by all it starts, and lets it go, so the counters
// cover the whole run (StartTraced holds the rules).
func StartStopped(cmd *exec.Cmd, src TreeSource, events []EventSpec) (*TreeCounters, string, error) {
	runtime.LockOSThread() // ptrace requests must come from the tracing thread
	defer runtime.UnlockOSThread()
	var cs *TreeCounters
	note, err := StartTraced(cmd, func(pid int) { cs = OpenTree(src, events, pid) })
	if err != nil {
		cs.Close()
		return nil, "", err
	}
	return cs, note, nil
}

// StartTraced starts cmd stopped at its exec (ptrace), calls opened with
// its PID while it is stopped (to open counters inherited by all it
// starts), and lets it go. The caller's goroutine must be locked to its OS
// thread: ptrace requests come from the tracing thread. cmd's
// SysProcAttr, when set, is kept (a process group, say); ptrace and a
// parent-death signal are added. If ptrace is refused it starts cmd
// normally and calls opened just after, and the note says so; a
// set-user-ID command is started untraced too.
func StartTraced(cmd *exec.Cmd, opened func(pid int)) (string, error) {
	base := syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		base = *cmd.SysProcAttr
	}
	untraced := func() *syscall.SysProcAttr {
		a := base
		a.Ptrace, a.Pdeathsig = false, syscall.SIGKILL
		return &a
	}
	if st, err := os.Stat(cmd.Path); err == nil && st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && os.Geteuid() != 0 {
		// A traced exec ignores set-user-ID and set-group-ID bits: the
		// command would run without its privileges and behave differently.
		cmd.SysProcAttr = untraced()
		if err := cmd.Start(); err != nil {
			return "", err
		}
		opened(cmd.Process.Pid)
		return "the command is set-user-ID or set-group-ID, so it was started untraced to keep its privileges: counters were opened just after it started, so its first moments are not counted", nil
	}
	traced := base
	traced.Ptrace, traced.Pdeathsig = true, syscall.SIGKILL
	cmd.SysProcAttr = &traced
	if err := cmd.Start(); err != nil {
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) {
			return "", err
		}
		cmd.SysProcAttr = untraced()
		cmd.Process = nil
		if err := cmd.Start(); err != nil {
			return "", err
		}
		opened(cmd.Process.Pid)
		return "ptrace refused: counters opened just after the command started, so its first moments are not counted", nil
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", fmt.Errorf("starting %s: did not stop at exec (%v, status %v)", cmd.Path, err, ws)
	}
	opened(pid)
	if err := unix.PtraceDetach(pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", fmt.Errorf("starting %s: ptrace detach: %w", cmd.Path, err)
	}
	return "", nil
}
