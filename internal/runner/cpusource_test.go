package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// fakeTask writes a fixture thread under root: status (switch counts),
// stat with utime and stime in ticks, and schedstat when schedstat != "".
func fakeTask(t *testing.T, root string, pid, tid int, utime, stime int, schedstat string) {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprint(pid), "task", fmt.Sprint(tid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"status": fmt.Sprintf("Name:\tworker\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\nPPid:\t1\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t1\n", pid, tid),
		"stat": fmt.Sprintf("%d (worker) S 1 %d %d 0 -1 4194304 100 0 0 0 %d %d 0 0 20 0 1 0 5010 3133440 414 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 4 5 6 7 8 9 10 0\n",
			tid, pid, pid, utime, stime),
	}
	if schedstat != "" {
		files["schedstat"] = schedstat
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// spinner is a locked thread that spins on request and reports the CPU
// time its own thread clock saw the work take.
type spinner struct {
	tid  int
	reqs chan int
	own  chan int64
}

func startSpinner(t *testing.T) *spinner {
	s := &spinner{reqs: make(chan int), own: make(chan int64)}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		s.tid = unix.Gettid()
		close(ready)
		cpu := func() int64 {
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
			return ts.Nano()
		}
		x := 0
		for n := range s.reqs {
			t0 := cpu()
			for i := 0; i < n; i++ {
				x += i ^ (x >> 3)
			}
			s.own <- cpu() - t0
		}
		_ = x
	}()
	<-ready
	t.Cleanup(func() { close(s.reqs) })
	return s
}

// probeOnce brackets one "repetition" of ops ops with the task probe over
// a fixture root, running work between begin and end.
func probeOnce(root string, parts exp.Participants, ops int64, work func()) (result.Arm, *exp.Record) {
	p := newTaskProbe(parts)
	p.root = procstat.Root(root)
	p.begin()
	work()
	p.end()
	var r result.Arm
	rec := &exp.Record{Ops: ops}
	p.fill(&r, rec)
	return r, rec
}

// Where a thread of this process has no schedstat, its CPU time comes
// from its own CPU clock, a note says so, and run-queue wait is absent,
// not 0. Where schedstat is there, it is used (the fixture's is frozen, so
// its CPU time reads 0 however long the thread spins).
func TestCPUTimeFallsBackToThreadClock(t *testing.T) {
	s := startSpinner(t)
	var own int64
	spin := func() { s.reqs <- 2_000_000; own = <-s.own }

	root := t.TempDir()
	fakeTask(t, root, selfPID, s.tid, 1, 1, "")
	r, rec := probeOnce(root, exp.Threads(s.tid), 100, spin)
	if r.CPUNsPerOp == nil {
		t.Fatalf("no CPU time without schedstat; notes %q", r.Notes)
	}
	if rec.CPUNs < own || own <= 0 || rec.ThreadCPUNs[s.tid] != rec.CPUNs {
		t.Errorf("CPU time %d ns (thread %d), want ≥ the %d ns the thread's own clock saw", rec.CPUNs, rec.ThreadCPUNs[s.tid], own)
	}
	if r.RunqNsPerOp != nil || rec.RunqNs != -1 {
		t.Errorf("run-queue wait %v (record %d) without schedstat: want absent", r.RunqNsPerOp, rec.RunqNs)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "own CPU clocks") || !strings.Contains(notes, "run-queue wait not counted") {
		t.Errorf("notes do not say the source: %q", notes)
	}

	fixed := t.TempDir()
	fakeTask(t, fixed, selfPID, s.tid, 1, 1, "5000 700 3\n")
	r, _ = probeOnce(fixed, exp.Threads(s.tid), 100, spin)
	if r.CPUNsPerOp == nil || *r.CPUNsPerOp != 0 || r.RunqNsPerOp == nil || *r.RunqNsPerOp != 0 {
		t.Errorf("with schedstat: CPU %v, run queue %v per op, want the frozen fixture's 0 and 0", r.CPUNsPerOp, r.RunqNsPerOp)
	}
	if strings.Contains(strings.Join(r.Notes, "\n"), "CPU clock") {
		t.Errorf("the fallback note with schedstat present: %q", r.Notes)
	}
}

// A child process's thread without schedstat: its CPU clock is not ours to
// read, so stat's utime+stime in clock ticks stand in, with the resolution
// in a note; run-queue wait is absent.
func TestCPUTimeFallsBackToStatTicks(t *testing.T) {
	root := t.TempDir()
	const pid, tid = 4_000_001, 4_000_002 // not ctxlab
	fakeTask(t, root, pid, pid, 10, 5, "")
	fakeTask(t, root, pid, tid, 250, 50, "")
	tick := func() {
		fakeTask(t, root, pid, pid, 10, 5, "")   // idle
		fakeTask(t, root, pid, tid, 253, 51, "") // 4 ticks on a CPU
	}
	r, rec := probeOnce(root, exp.Participants{PIDs: []int{pid}}, 1000, tick)
	if r.CPUNsPerOp == nil || rec.CPUNs != 4*tickNs || *r.CPUNsPerOp != float64(4*tickNs)/1000 {
		t.Fatalf("CPU %v per op (record %d ns), want 4 ticks = %d ns over 1000 ops; notes %q", r.CPUNsPerOp, rec.CPUNs, 4*tickNs, r.Notes)
	}
	if r.RunqNsPerOp != nil {
		t.Errorf("run-queue wait %v without schedstat: want absent", *r.RunqNsPerOp)
	}
	notes := strings.Join(r.Notes, "\n")
	// Two threads read once each: up to 2 ticks (20 ms) over 1000 ops.
	if !strings.Contains(notes, "utime+stime") || !strings.Contains(notes, "clock ticks of 10 ms") || !strings.Contains(notes, "±20 µs per op") {
		t.Errorf("notes do not say the source and its resolution: %q", notes)
	}
}

// The fallback reads the same quantity as schedstat: for a parked thread
// (its CPU time not moving) the thread's CPU clock equals schedstat's time
// on CPU to the nanosecond, so figures from either source compare.
func TestThreadClockIsSchedstatRunTime(t *testing.T) {
	s := startSpinner(t)
	s.reqs <- 1_000_000
	<-s.own // the spinner now waits, parked, for the next request
	var last string
	for try := 0; try < 5; try++ {
		task, err := procstat.DefaultRoot.ReadTask(selfPID, s.tid)
		if err != nil || !task.HasSchedstat {
			t.Skipf("no schedstat here (%v): nothing to compare with", err)
		}
		clock, err := measure.ThreadCPUNs(s.tid)
		if err != nil {
			t.Fatal(err)
		}
		if int64(task.RunNs) == clock {
			return
		}
		last = fmt.Sprintf("schedstat %d ns, CPU clock %d ns", task.RunNs, clock)
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("a parked thread's CPU clock and schedstat differ: %s", last)
}

// A whole-process participant takes its CPU time from the process clock;
// its run-queue wait needs every live thread's schedstat, and is absent,
// not 0, when a thread lacks it or the threads cannot be listed.
func TestWholeProcessRunqAbsentWithoutSchedstat(t *testing.T) {
	s := startSpinner(t)
	noSchedstat := t.TempDir()
	fakeTask(t, noSchedstat, selfPID, s.tid, 1, 1, "")
	for name, root := range map[string]string{"a thread without schedstat": noSchedstat, "no thread list": t.TempDir()} {
		r, _ := probeOnce(root, exp.WholeProcess(), 100, func() { s.reqs <- 100_000; <-s.own })
		if r.CPUNsPerOp == nil || *r.CPUNsPerOp <= 0 {
			t.Errorf("%s: CPU time %v, want the process clock's", name, r.CPUNsPerOp)
		}
		if r.RunqNsPerOp != nil {
			t.Errorf("%s: run-queue wait %v per op, want absent", name, *r.RunqNsPerOp)
		}
		if !strings.Contains(strings.Join(r.Notes, "\n"), "run-queue wait not counted") {
			t.Errorf("%s: notes %q", name, r.Notes)
		}
	}
	with := t.TempDir()
	fakeTask(t, with, selfPID, s.tid, 1, 1, "5000 700 3\n")
	if r, _ := probeOnce(with, exp.WholeProcess(), 100, func() {}); r.RunqNsPerOp == nil {
		t.Errorf("run-queue wait absent with every listed thread's schedstat; notes %q", r.Notes)
	}
}
