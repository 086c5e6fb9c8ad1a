package runner

import (
	"context"
	"runtime"
	"strings"
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
}

func openSpin() *spinBench {
	s := &spinBench{reqs: make(chan int), done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		s.tid = unix.Gettid()
		close(ready)
		x := 0
		for n := range s.reqs {
			for i := 0; i < n*100; i++ {
				x += i ^ (x >> 3)
			}
			s.done <- struct{}{}
		}
		_ = x
	}()
	<-ready
	return s
}

func (s *spinBench) Run(b *measure.B) error         { s.reqs <- b.N; <-s.done; return nil }
func (s *spinBench) Close() error                   { close(s.reqs); return nil }
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
