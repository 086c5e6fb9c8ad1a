package measure

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeTree is a TreeSource with set readings per event name.
type fakeTree struct {
	open    map[string]error // an open error per event
	user    map[string]bool  // opened user-mode only
	reads   map[string][3]uint64
	readErr map[string]error
	fds     map[int]string
	closed  int
}

func (f *fakeTree) OpenInherited(ev EventSpec, pid int) (int, bool, error) {
	if err := f.open[ev.Name]; err != nil {
		return -1, false, err
	}
	fd := 100 + len(f.fds)
	f.fds[fd] = ev.Name
	return fd, f.user[ev.Name], nil
}

func (f *fakeTree) ReadCounter(fd int) (uint64, uint64, uint64, error) {
	n := f.fds[fd]
	if err := f.readErr[n]; err != nil {
		return 0, 0, 0, err
	}
	r := f.reads[n]
	return r[0], r[1], r[2], nil
}

func (f *fakeTree) Close(fd int) error { f.closed++; return nil }

func newFakeTree() *fakeTree {
	return &fakeTree{open: map[string]error{}, user: map[string]bool{}, reads: map[string][3]uint64{}, readErr: map[string]error{}, fds: map[int]string{}}
}

func reading(t *testing.T, rs []TreeReading, name string) TreeReading {
	t.Helper()
	for _, r := range rs {
		if r.Event.Name == name {
			return r
		}
	}
	t.Fatalf("no reading of %s", name)
	return TreeReading{}
}

// The hardware path, on a fake PMU: values read, a multiplexed one
// scaled as perf stat does, and every way a counter is unsupported gives
// its reason and no value, never a 0.
func TestTreeCountersHardwarePath(t *testing.T) {
	f := newFakeTree()
	f.reads["instructions"] = [3]uint64{4_000_000, 10, 10}
	f.reads["cycles"] = [3]uint64{1_000_000, 10, 5} // on the PMU half the time
	f.reads["branch-misses"] = [3]uint64{0, 10, 0}  // never ran
	f.reads["LLC-load-misses"] = [3]uint64{0, 10, 10}
	f.readErr["dTLB-load-misses"] = unix.EIO
	f.reads["task-clock"] = [3]uint64{2_000_000, 10, 10}
	f.reads["context-switches"] = [3]uint64{0, 10, 10}
	f.user["context-switches"] = true
	f.open["cpu-migrations"] = unix.ENOENT
	f.reads["page-faults"] = [3]uint64{0, 10, 10} // a software count may be 0

	cs := OpenTree(f, Events, 42)
	rs := cs.Read()
	cs.Close()
	cs.Close() // twice: closes nothing more
	if f.closed != len(Events)-1 {
		t.Errorf("closed %d fds, want %d (all but the one that did not open)", f.closed, len(Events)-1)
	}
	if r := reading(t, rs, "instructions"); r.Value == nil || *r.Value != 4_000_000 || r.Scaled {
		t.Errorf("instructions: %+v", r)
	}
	if r := reading(t, rs, "cycles"); r.Value == nil || *r.Value != 2_000_000 || !r.Scaled {
		t.Errorf("cycles, multiplexed half the time: %+v, want 2000000 scaled", r)
	}
	for name, want := range map[string]string{
		"branch-misses":    ReasonNeverRan,
		"LLC-load-misses":  ReasonZeroCount,
		"dTLB-load-misses": "input/output error",
		"context-switches": ReasonUserOnlyZero,
		"cpu-migrations":   "not offered by this CPU or hypervisor",
	} {
		r := reading(t, rs, name)
		if r.Value != nil || !strings.Contains(r.Unsupported, want) {
			t.Errorf("%s: value %v, unsupported %q; want no value and %q", name, r.Value, r.Unsupported, want)
		}
	}
	if r := reading(t, rs, "page-faults"); r.Value == nil || *r.Value != 0 || r.Unsupported != "" {
		t.Errorf("page-faults: a software 0 is a figure: %+v", r)
	}
	var nilSet *TreeCounters
	if nilSet.Read() != nil {
		t.Error("a nil set read something")
	}
	nilSet.Close()
}

// Without task-clock, a hardware 0 is not judged: it stays what was read.
func TestTreeCountersZeroNeedsWork(t *testing.T) {
	f := newFakeTree()
	f.reads["instructions"] = [3]uint64{0, 10, 10}
	f.reads["task-clock"] = [3]uint64{0, 10, 10}
	rs := OpenTree(f, Events, 1).Read()
	if r := reading(t, rs, "instructions"); r.Value == nil || *r.Value != 0 {
		t.Errorf("instructions with no task-clock: %+v", r)
	}
}

// A real command started stopped at its exec: task-clock covers it, and
// a process group the caller asked for is kept.
func TestStartStoppedKeepsProcessGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cs, note, err := StartStopped(cmd, PerfTree{}, Events)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	pgid, _ := unix.Getpgid(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !cmd.SysProcAttr.Setpgid || pgid != cmd.Process.Pid {
		t.Errorf("process group %d, pid %d: Setpgid lost", pgid, cmd.Process.Pid)
	}
	r := reading(t, cs.Read(), "task-clock")
	if r.Unsupported != "" {
		t.Skipf("task-clock unsupported here: %s (%s)", r.Unsupported, note)
	}
	if r.Value == nil || *r.Value == 0 {
		t.Errorf("task-clock of a busy shell loop: %+v", r)
	}
}
