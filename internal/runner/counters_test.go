package runner

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// spinBench spins on one locked thread it declares as its participant.
type spinBench struct {
	tid  int
	reqs chan int
	done chan struct{}
	quit chan struct{} // closed by Close, which the runner may call while Run is in flight (the arm's time ran out)
}

func openSpin() *spinBench {
	s := &spinBench{reqs: make(chan int), done: make(chan struct{}), quit: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		s.tid = unix.Gettid()
		close(ready)
		x := 0
		for {
			var n int
			select {
			case n = <-s.reqs:
			case <-s.quit:
				return
			}
			for i := 0; i < n*100; i++ {
				x += i ^ (x >> 3)
			}
			select {
			case s.done <- struct{}{}:
			case <-s.quit:
				return
			}
		}
	}()
	<-ready
	return s
}

func (s *spinBench) Run(b *measure.B) error {
	select {
	case s.reqs <- b.N:
	case <-s.quit:
		return errors.New("closed")
	}
	select {
	case <-s.done:
		return nil
	case <-s.quit:
		return errors.New("closed")
	}
}
func (s *spinBench) Close() error                   { close(s.quit); return nil }
func (s *spinBench) Participants() exp.Participants { return exp.Threads(s.tid) }

func testConfig() Config {
	return Config{Reps: 2, BenchTime: 20 * time.Millisecond, WarmUp: 5 * time.Millisecond, WarmUpOps: 1000,
		Timeout: 10 * time.Second, MaxSamples: 100, ClockCost: 20}
}

// With counters on, every event of measure.Events is in the result: a
// value per op, or unsupported with a reason — never a silent 0 for a
// hardware counter. Uses the real perf_event_open.
func TestArmCountersReal(t *testing.T) {
	spec := &exp.Spec{Name: "spin", Op: "spin"}
	a := exp.Arm{Name: "spin/one", Counters: true, Open: func(ctx context.Context) (exp.Bench, error) { return openSpin(), nil }}
	r := Arm(context.Background(), testConfig(), spec, a)
	if r.Status != result.StatusOK {
		t.Fatalf("status %s: %s", r.Status, r.Reason)
	}
	if len(r.Counters) != len(measure.Events) {
		t.Fatalf("counters %+v", r.Counters)
	}
	for _, c := range r.Counters {
		if (c.Unsupported == "") != (c.PerOp != nil) {
			t.Errorf("%s: a value must be present exactly when the counter is supported: %+v", c.Name, c)
			continue
		}
		if c.PerOp == nil {
			t.Logf("%-18s unsupported: %s", c.Name, c.Unsupported)
			continue
		}
		t.Logf("%-18s %12.4g/op", c.Name, *c.PerOp)
		if *c.PerOp == 0 && (c.Name == "instructions" || c.Name == "cycles" || c.Name == "task-clock") {
			t.Errorf("%s: supported but 0 per op", c.Name)
		}
	}
	if c := r.Counters[len(r.Counters)-2]; c.Name != "task-clock" || (c.Unsupported == "" && *c.PerOp <= 0) {
		t.Errorf("task-clock %+v", c)
	}
	// Off by default: no --counters, no Arm.Counters, no counters.
	a.Counters = false
	if r := Arm(context.Background(), testConfig(), spec, a); len(r.Counters) != 0 {
		t.Errorf("counters without being asked: %+v", r.Counters)
	}
}

// fakeSource is a CounterSource where hardware events fail with ENOENT and
// software ones count 1 per read.
type fakeSource struct{ reads map[int]uint64 }

func (f *fakeSource) Open(ev measure.EventSpec, tid, groupFD int, group bool) (int, error) {
	if ev.Kind == "hardware" {
		return -1, unix.ENOENT
	}
	fd := len(f.reads) + 3
	f.reads[fd] = 0
	return fd, nil
}

func (f *fakeSource) Read(fd int, buf []byte) (int, error) {
	f.reads[fd]++
	n := f.reads[fd]
	// A group leader read: nr, enabled, running, then nr values; the fake
	// opens every software event in one group per thread.
	put := func(i int, v uint64) {
		for k := 0; k < 8; k++ {
			buf[8*i+k] = byte(v >> (8 * k))
		}
	}
	put(0, 4)
	put(1, n*100)
	put(2, n*100)
	for i := 0; i < 4; i++ {
		put(3+i, n*10)
	}
	return 8 * 7, nil
}

func (f *fakeSource) Close(fd int) error { return nil }

func TestArmCountersFake(t *testing.T) {
	prev := counterSource
	counterSource = &fakeSource{reads: map[int]uint64{}}
	defer func() { counterSource = prev }()
	cfg := testConfig()
	cfg.Counters = true
	spec := &exp.Spec{Name: "spin", Op: "spin"}
	a := exp.Arm{Name: "spin/one", Open: func(ctx context.Context) (exp.Bench, error) { return openSpin(), nil }}
	r := Arm(context.Background(), cfg, spec, a)
	var hw, sw int
	for _, c := range r.Counters {
		switch {
		case strings.Contains(c.Unsupported, "not offered by this CPU or hypervisor"):
			hw++
		case c.Unsupported == "" && c.PerOp != nil && *c.PerOp > 0:
			sw++
		default:
			t.Errorf("counter %+v", c)
		}
	}
	if hw != 5 || sw != 4 {
		t.Errorf("%d hardware unsupported, %d software counted; want 5 and 4", hw, sw)
	}
	if len(r.Metrics) != 0 {
		t.Errorf("derived metrics from unsupported counters: %v", r.Metrics)
	}
}

// trackedSource is fakeSource behind a lock that notes a read of a closed fd.
type trackedSource struct {
	mu          sync.Mutex
	f           fakeSource
	closed      map[int]bool
	readClosed  bool
	closedCount int
}

func (s *trackedSource) Open(ev measure.EventSpec, tid, groupFD int, group bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Open(ev, tid, groupFD, group)
}

func (s *trackedSource) Read(fd int, buf []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed[fd] {
		s.readClosed = true
		return 0, unix.EBADF
	}
	return s.f.Read(fd, buf)
}

func (s *trackedSource) Close(fd int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed[fd] = true
	s.closedCount++
	return nil
}

// stuckLoop's timed repetition blocks until released, deaf to Close.
type stuckLoop struct {
	timed   bool
	release chan struct{}
	started chan struct{}
}

func (l *stuckLoop) StartTimed(int) { l.timed = true }
func (l *stuckLoop) Run(b *measure.B) error {
	if l.timed {
		close(l.started)
		<-l.release
	}
	return nil
}
func (l *stuckLoop) Close() error                   { return nil }
func (l *stuckLoop) Participants() exp.Participants { return exp.Threads(unix.Gettid()) }

// An abandoned arm's counters stay open until its stuck repetition has
// returned and read them: closing them under it would have it read fds
// that may by then be someone else's.
func TestAbandonedArmCountersClosedAfterItReturns(t *testing.T) {
	saved := abandonAfter
	abandonAfter = 100 * time.Millisecond
	defer func() { abandonAfter = saved }()
	src := &trackedSource{f: fakeSource{reads: map[int]uint64{}}, closed: map[int]bool{}}
	prev := counterSource
	counterSource = src
	defer func() { counterSource = prev }()
	l := &stuckLoop{release: make(chan struct{}), started: make(chan struct{})}
	c := testConfig()
	c.Counters = true
	c.Timeout = 300 * time.Millisecond
	r := Arm(context.Background(), c, &exp.Spec{Name: "t", Op: "op"}, exp.Arm{Name: "t/stuck",
		Open: func(context.Context) (exp.Bench, error) { return l, nil }})
	if r.Status != result.StatusTimedOut || !strings.Contains(r.Reason, "abandoned") {
		t.Fatalf("status %s (%s), want timed out and abandoned", r.Status, r.Reason)
	}
	src.mu.Lock()
	early := src.closedCount
	src.mu.Unlock()
	if early != 0 {
		t.Errorf("%d counter fds closed while the abandoned repetition still runs", early)
	}
	close(l.release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		src.mu.Lock()
		n, bad := src.closedCount, src.readClosed
		src.mu.Unlock()
		if bad {
			t.Fatal("the abandoned repetition read a closed counter fd")
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("counters never closed after the abandoned repetition returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An arm without counters that follows one with them waits until the
// kernel's perf scheduler hooks are off (measure.PerfSettle) before it
// starts; an arm with counters does not wait; a cancelled run does not
// wait. Uses the real perf_event_open.
func TestArmWaitsForPerfToSettle(t *testing.T) {
	spec := &exp.Spec{Name: "spin", Op: "spin"}
	counted := exp.Arm{Name: "spin/counted", Counters: true, Open: func(ctx context.Context) (exp.Bench, error) { return openSpin(), nil }}
	plain := counted
	plain.Name, plain.Counters = "spin/plain", false
	var leftAtOpen time.Duration
	plain.Open = func(ctx context.Context) (exp.Bench, error) {
		leftAtOpen = measure.PerfSettleLeft()
		return openSpin(), nil
	}
	// waited is how long a call to Arm took beyond the arm itself.
	waited := func(ctx context.Context, a exp.Arm) time.Duration {
		t0 := time.Now()
		r := Arm(ctx, testConfig(), spec, a)
		return time.Since(t0) - time.Duration(r.DurationNs)
	}
	waited(context.Background(), counted)
	left := measure.PerfSettleLeft()
	if left == 0 {
		t.Skip("no perf event opened on this machine: nothing to settle")
	}
	r := Arm(context.Background(), testConfig(), spec, plain)
	if leftAtOpen != 0 {
		t.Errorf("an arm without counters was set up %v before the settle after counters ended", leftAtOpen)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "late: the kernel's perf hooks") {
		t.Errorf("the arm does not say it waited: %q", r.Notes)
	}
	waited(context.Background(), counted)
	if w := waited(context.Background(), counted); w > measure.PerfSettle/3 {
		t.Errorf("an arm with counters waited %v: it pays the hooks for its own counters anyway", w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w := waited(ctx, plain); w > measure.PerfSettle/3 {
		t.Errorf("an interrupted run waited %v for the settle", w)
	}
	time.Sleep(measure.PerfSettleLeft()) // leave no settle to the next test
}
