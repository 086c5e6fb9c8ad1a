package measure

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeSource is a CounterSource with scripted errors and values: each fd
// counts its event at rate[event] per read, enabled grows by 1000 per read
// and running by runPct*10.
type fakeSource struct {
	openErr  map[string]error // event name -> error on any open
	joinErr  map[string]error // event name -> error when joining a group
	rate     map[string]uint64
	runPct   uint64
	next     int
	fds      map[int]*fakeFD
	closed   int
	leaderOf map[int][]int
}

type fakeFD struct {
	ev       EventSpec
	group    bool
	reads    uint64
	isLeader bool
}

func newFake() *fakeSource {
	return &fakeSource{openErr: map[string]error{}, joinErr: map[string]error{}, rate: map[string]uint64{},
		runPct: 100, next: 100, fds: map[int]*fakeFD{}, leaderOf: map[int][]int{}}
}

func (f *fakeSource) Open(ev EventSpec, tid, groupFD int, group bool) (int, error) {
	if err := f.openErr[ev.Name]; err != nil {
		return -1, err
	}
	if groupFD >= 0 {
		if err := f.joinErr[ev.Name]; err != nil {
			return -1, err
		}
	}
	f.next++
	fd := f.next
	f.fds[fd] = &fakeFD{ev: ev, group: group, isLeader: groupFD < 0}
	if groupFD >= 0 {
		f.leaderOf[groupFD] = append(f.leaderOf[groupFD], fd)
	}
	return fd, nil
}

func (f *fakeSource) Read(fd int, buf []byte) (int, error) {
	d := f.fds[fd]
	d.reads++
	en, run := 1000*d.reads, f.runPct*10*d.reads
	put := func(off int, v uint64) { binary.NativeEndian.PutUint64(buf[off:], v) }
	if !d.group {
		put(0, f.rate[d.ev.Name]*d.reads*f.runPct/100)
		put(8, en)
		put(16, run)
		return 24, nil
	}
	members := append([]int{fd}, f.leaderOf[fd]...)
	put(0, uint64(len(members)))
	put(8, en)
	put(16, run)
	for i, m := range members {
		put(24+8*i, f.rate[f.fds[m].ev.Name]*d.reads*f.runPct/100)
	}
	return 24 + 8*len(members), nil
}

func (f *fakeSource) Close(fd int) error { f.closed++; return nil }

func value(t *testing.T, vals []CounterValue, name string) CounterValue {
	t.Helper()
	for _, v := range vals {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no counter %s", name)
	return CounterValue{}
}

func TestParseGroupRead(t *testing.T) {
	buf := make([]byte, 24+8*3)
	for i, v := range []uint64{3, 500, 250, 7, 8, 9} {
		binary.NativeEndian.PutUint64(buf[8*i:], v)
	}
	var g GroupRead
	if err := ParseGroupRead(buf, &g); err != nil {
		t.Fatal(err)
	}
	if g.Enabled != 500 || g.Running != 250 || len(g.Values) != 3 || g.Values[2] != 9 {
		t.Fatalf("parsed %+v", g)
	}
	if err := ParseGroupRead(buf[:30], &g); !errors.Is(err, ErrShortRead) {
		t.Fatalf("short group read: err %v, want ErrShortRead", err)
	}
	if err := ParseGroupRead(buf[:10], &g); !errors.Is(err, ErrShortRead) {
		t.Fatalf("tiny read: err %v", err)
	}
	if err := ParseSingleRead(buf[:24], &g); err != nil || g.Values[0] != 3 || g.Enabled != 500 || g.Running != 250 {
		t.Fatalf("single read: %+v %v", g, err)
	}
}

func TestScale(t *testing.T) {
	if v, ok := Scale(100, 1000, 250); !ok || v != 400 {
		t.Fatalf("Scale(100, 1000, 250) = %v, %v; want 400", v, ok)
	}
	if v, ok := Scale(100, 1000, 1000); !ok || v != 100 {
		t.Fatalf("unmultiplexed: %v", v)
	}
	if _, ok := Scale(0, 1000, 0); ok {
		t.Fatal("a counter that never ran must not scale to a value")
	}
}

func TestCounterSetFakeGroups(t *testing.T) {
	f := newFake()
	f.rate = map[string]uint64{"instructions": 2000, "cycles": 1000, "LLC-load-misses": 10,
		"dTLB-load-misses": 4, "branch-misses": 6, "task-clock": 500, "context-switches": 2}
	f.runPct = 50 // multiplexed: on the PMU half the time
	s := OpenCounters(f, Events, []int{11, 12})
	defer s.Close()
	// Two groups per thread (hardware, software), all members joined.
	if len(s.readers) != 4 {
		t.Fatalf("readers = %d, want 4 (hardware and software group per thread)", len(s.readers))
	}
	for r := 0; r < 3; r++ {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := s.End(); err != nil {
			t.Fatal(err)
		}
	}
	vals := s.Values()
	// Per region a thread's raw delta is rate*runPct/100, scaled back by
	// enabled/running = 2: rate per region, ×3 regions ×2 threads.
	ins := value(t, vals, "instructions")
	if ins.Unsupported != "" || ins.Value != 2000*3*2 {
		t.Fatalf("instructions = %+v, want 12000", ins)
	}
	if math.Abs(ins.RunningFraction-0.5) > 1e-9 {
		t.Fatalf("running fraction %v, want 0.5", ins.RunningFraction)
	}
	if cs := value(t, vals, "context-switches"); cs.Unsupported != "" || cs.Value != 12 {
		t.Fatalf("context-switches = %+v", cs)
	}
	// page-faults honestly counted 0: supported, value 0.
	if pf := value(t, vals, "page-faults"); pf.Unsupported != "" || pf.Value != 0 {
		t.Fatalf("page-faults = %+v, want a supported 0", pf)
	}
	d := Derived(vals)
	if d["ipc"] != 2 || d["llc-load-misses/1k-instructions"] != 5 || d["dtlb-load-misses/1k-instructions"] != 2 || d["branch-misses/1k-instructions"] != 3 {
		t.Fatalf("derived = %v", d)
	}
	w := strings.Join(s.Warnings(), "\n")
	if !strings.Contains(w, "instructions was multiplexed: on the PMU 50%") {
		t.Fatalf("no multiplexing warning in %q", w)
	}
	s.Close()
	if f.closed != len(Events)*2 {
		t.Fatalf("closed %d fds, want %d", f.closed, len(Events)*2)
	}
}

func TestCounterSetFakeUnsupported(t *testing.T) {
	f := newFake()
	f.openErr["instructions"] = unix.ENOENT
	f.openErr["cycles"] = unix.EOPNOTSUPP
	f.openErr["branch-misses"] = unix.EACCES
	f.openErr["context-switches"] = unix.EACCES
	f.joinErr["dTLB-load-misses"] = unix.EINVAL // opens alone, not in the group
	f.rate = map[string]uint64{"dTLB-load-misses": 3, "task-clock": 100}
	// LLC-load-misses opens but counts 0: a VM with no PMU.
	s := OpenCounters(f, Events, []int{5})
	defer s.Close()
	s.Begin()
	s.End()
	vals := s.Values()
	for name, want := range map[string]string{
		"instructions":    "not offered by this CPU or hypervisor",
		"cycles":          "not offered by this CPU or hypervisor",
		"branch-misses":   "not permitted: perf_event_paranoid",
		"LLC-load-misses": "counted 0 over real work",
		// a user-only context-switches counter would read 0: refused, with why
		"context-switches": "context-switches happen in the kernel, which perf_event_paranoid ≥ 2 hides",
	} {
		if v := value(t, vals, name); !strings.Contains(v.Unsupported, want) {
			t.Errorf("%s: unsupported %q, want it to say %q", name, v.Unsupported, want)
		}
	}
	if v := value(t, vals, "dTLB-load-misses"); v.Unsupported != "" || v.Value != 3 {
		t.Errorf("dTLB-load-misses opened standalone after the group refused it: %+v", v)
	}
	if _, ok := Derived(vals)["ipc"]; ok {
		t.Error("IPC derived from unsupported counters")
	}
	// The standalone fd is its own reader next to the two groups.
	if len(s.readers) != 3 {
		t.Errorf("readers = %d, want 3", len(s.readers))
	}
}

func TestCounterSetNothingMeasured(t *testing.T) {
	s := OpenCounters(newFake(), Events, []int{1})
	defer s.Close()
	if v := value(t, s.Values(), "task-clock"); v.Unsupported != "nothing was measured" {
		t.Fatalf("unmeasured set: %+v", v)
	}
	s = OpenCounters(newFake(), Events, nil)
	if v := value(t, s.Values(), "task-clock"); v.Unsupported == "" {
		t.Fatalf("no threads: %+v", v)
	}
}

// TestCountersReal opens the real counters on this thread. Software events
// must work wherever perf_event_open exists; hardware events either count
// (a machine with a PMU) or are unsupported with a reason — never a 0.
func TestCountersReal(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := OpenCounters(PerfSource{}, Events, []int{unix.Gettid()})
	defer s.Close()
	if !s.Open() {
		t.Skip("perf_event_open unavailable here: " + UnsupportedReason(s.openErr[len(s.openErr)-1]))
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := 0; i < 5_000_000; i++ {
		x += i ^ (x >> 3)
	}
	runtime.KeepAlive(x)
	for i := 0; i < 5; i++ {
		time.Sleep(time.Millisecond) // each sleep blocks: one voluntary switch
	}
	if err := s.End(); err != nil {
		t.Fatal(err)
	}
	vals := s.Values()
	for _, v := range vals {
		ok, why := ProbeEvent(Events[indexOf(v.Name)])
		t.Logf("%-18s %-8s value %-14.0f running %.2f unsupported %q (probe: %v %q)", v.Name, v.Kind, v.Value, v.RunningFraction, v.Unsupported, ok, why)
		if v.Unsupported == "" && v.Kind == "hardware" && v.Value == 0 {
			t.Errorf("%s: a supported hardware counter read 0", v.Name)
		}
		// `ctxlab env` (ProbeEvent) and a run must agree on what works.
		if ok != (v.Unsupported == "") {
			t.Errorf("%s: probe says supported=%v, the counter set says %q", v.Name, ok, v.Unsupported)
		}
	}
	// A user-space-only context-switches counter would read a silent 0.
	if cs := value(t, vals, "context-switches"); cs.Unsupported == "" && cs.Value < 5 {
		t.Errorf("context-switches %v over 5 sleeps", cs.Value)
	}
	if tc := value(t, vals, "task-clock"); tc.Unsupported == "" && tc.Value <= 0 {
		t.Errorf("task-clock supported but %v", tc.Value)
	}
	if ins := value(t, vals, "instructions"); ins.Unsupported == "" {
		if ins.Value < 5_000_000 {
			t.Errorf("instructions %v over a 5M-iteration loop", ins.Value)
		}
		if _, ok := Derived(vals)["ipc"]; !ok && value(t, vals, "cycles").Unsupported == "" {
			t.Error("IPC missing with instructions and cycles supported")
		}
	}
}

func indexOf(name string) int {
	for i, e := range Events {
		if e.Name == name {
			return i
		}
	}
	return -1
}

// Rollback drops the regions measured since Mark: a failed repetition's
// counts leave the totals as they were.
func TestCounterSetRollback(t *testing.T) {
	f := newFake()
	f.rate = map[string]uint64{"instructions": 2000, "context-switches": 2}
	s := OpenCounters(f, Events, []int{11})
	defer s.Close()
	region := func() {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := s.End(); err != nil {
			t.Fatal(err)
		}
	}
	s.Mark()
	region()
	s.Rollback() // the first region failed
	if cs := value(t, s.Values(), "context-switches"); cs.Unsupported == "" {
		t.Fatalf("after rolling back the only region: %+v, want unsupported (nothing measured)", cs)
	}
	s.Mark()
	region()
	s.Mark()
	region()
	region()
	s.Rollback()
	if cs := value(t, s.Values(), "context-switches"); cs.Unsupported != "" || cs.Value != 2 {
		t.Fatalf("context-switches = %+v, want 2 (one kept region)", cs)
	}
}

func FuzzParseGroupRead(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0})
	f.Add(make([]byte, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		var g GroupRead
		if err := ParseGroupRead(b, &g); err != nil {
			if !errors.Is(err, ErrShortRead) {
				t.Fatalf("error %v does not wrap ErrShortRead", err)
			}
		} else if 24+8*len(g.Values) > len(b) {
			t.Fatalf("%d values from %d bytes", len(g.Values), len(b))
		}
		if err := ParseSingleRead(b, &g); err == nil && len(g.Values) != 1 {
			t.Fatalf("single read gave %d values", len(g.Values))
		} else if err != nil && !errors.Is(err, ErrShortRead) {
			t.Fatalf("error %v does not wrap ErrShortRead", err)
		}
	})
}

// Closing a per-thread event starts PerfSettle; it runs down to 0.
func TestPerfSettleLeft(t *testing.T) {
	prev := lastPerfClose.Load()
	defer lastPerfClose.Store(prev)
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	closeEvent(fd) // any descriptor: what matters is when it closed
	left := PerfSettleLeft()
	if left <= 0 || left > PerfSettle || left < PerfSettle-time.Since(before) {
		t.Errorf("right after a close %v left, want about %v", left, PerfSettle)
	}
	lastPerfClose.Store(int64(time.Since(perfEpoch) - PerfSettle - time.Millisecond))
	if left := PerfSettleLeft(); left != 0 {
		t.Errorf("a settle past its end has %v left, want 0", left)
	}
	// An earlier close noted after a later one does not shorten the wait.
	now := int64(time.Since(perfEpoch))
	lastPerfClose.Store(now)
	fd, err = unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	closeEvent(fd)
	if last := lastPerfClose.Load(); last < now {
		t.Errorf("the last close went back from %d to %d", now, last)
	}
	lastPerfClose.Store(0)
	if left := PerfSettleLeft(); left != 0 {
		t.Errorf("with no event ever closed %v left, want 0", left)
	}
}
