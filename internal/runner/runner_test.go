package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

var spec = &exp.Spec{Name: "fake", Op: "op"}

func cfg() Config {
	return Config{Reps: 3, BenchTime: 2 * time.Millisecond, WarmUp: time.Millisecond, WarmUpOps: 100,
		Timeout: 5 * time.Second, MaxSamples: 1000, ClockCost: 25}
}

// spin does b.N tiny ops, sampling each.
type spin struct{ closed atomic.Int32 }

func (s *spin) Run(b *measure.B) error {
	x := 0
	for i := 0; i < b.N; i++ {
		t := b.S.Start(i)
		for j := 0; j < 50; j++ {
			x += j
		}
		b.S.Stop(t)
	}
	_ = x
	return nil
}
func (s *spin) Close() error                   { s.closed.Add(1); return nil }
func (s *spin) Participants() exp.Participants { return exp.WholeProcess() }

func TestArmMeasuresRepetitions(t *testing.T) {
	s := &spin{}
	r := Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/spin", Open: func(context.Context) (exp.Bench, error) { return s, nil }})
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Reason)
	}
	if len(r.RepMeans) != 3 || r.Ops <= 0 || r.Median <= 0 || r.Percentiles == nil {
		t.Fatalf("result: %+v", r)
	}
	if r.Op != "op" || r.Unit != "ns/op" {
		t.Fatalf("op %q unit %q", r.Op, r.Unit)
	}
	if s.closed.Load() != 1 {
		t.Fatalf("Close called %d times", s.closed.Load())
	}
}

// stuck blocks in Run until Close, like a partner starved by a hog.
type stuck struct {
	release chan struct{}
	started atomic.Int32
	closes  atomic.Int32
}

func (s *stuck) Run(b *measure.B) error {
	if s.started.Add(1) == 1 {
		return nil // the first warm-up batch finishes
	}
	<-s.release
	return errors.New("stopped")
}
func (s *stuck) Participants() exp.Participants { return exp.WholeProcess() }
func (s *stuck) Close() error {
	s.closes.Add(1)
	select {
	case <-s.release:
	default:
		close(s.release)
	}
	return nil
}

func TestArmTimesOutAndUnblocks(t *testing.T) {
	c := cfg()
	c.Timeout = 300 * time.Millisecond
	s := &stuck{release: make(chan struct{})}
	start := time.Now()
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/stuck", Open: func(context.Context) (exp.Bench, error) { return s, nil }})
	if r.Status != result.StatusTimedOut || !strings.Contains(r.Reason, "300ms") {
		t.Fatalf("status %q reason %q", r.Status, r.Reason)
	}
	if time.Since(start) > 4*time.Second {
		t.Fatalf("timeout took %v", time.Since(start))
	}
}

func TestArmInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stuck{release: make(chan struct{})}
	time.Sleep(measure.PerfSettleLeft()) // an earlier test's counters: interrupt the arm, not the settle
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	r := Arm(ctx, cfg(), spec, exp.Arm{Name: "fake/stuck", Open: func(context.Context) (exp.Bench, error) { return s, nil }})
	if r.Status != result.StatusInterrupted {
		t.Fatalf("status %q", r.Status)
	}
	// Closed early to unblock it, and not again at teardown.
	if n := s.closes.Load(); n != 1 {
		t.Errorf("the bench was closed %d times, want once", n)
	}
}

func TestUnsupportedAndFailedSetup(t *testing.T) {
	r := Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/u", Unsupported: "no such thing here"})
	if r.Status != result.StatusUnsupported || r.Reason != "no such thing here" {
		t.Fatalf("%+v", r)
	}
	r = Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/f", Open: func(context.Context) (exp.Bench, error) {
		return nil, errors.New("boom")
	}})
	if r.Status != result.StatusFailed || !strings.Contains(r.Reason, "boom") {
		t.Fatalf("%+v", r)
	}
}

func TestRunEvaluatesChecksAndAttachesThem(t *testing.T) {
	sp := &exp.Spec{Name: "fake", Op: "op", Checks: func(arms []result.Arm) []result.Check {
		return []result.Check{{Name: "one arm", Holds: true, Arms: []string{arms[0].Name}}, {Name: "all", Holds: false}}
	}}
	sel := []exp.Selection{{Spec: sp, Arms: []exp.Arm{{Name: "fake/spin", Open: func(context.Context) (exp.Bench, error) { return &spin{}, nil }}}}}
	arms, exps, interrupted := Run(context.Background(), cfg(), sel)
	if interrupted || len(arms) != 1 || len(exps) != 1 || len(exps[0].Checks) != 2 {
		t.Fatalf("arms %d exps %+v", len(arms), exps)
	}
	if len(arms[0].Checks) != 1 || arms[0].Checks[0].Name != "one arm" {
		t.Fatalf("arm checks %+v", arms[0].Checks)
	}
}

func TestNoiseFlagsSpread(t *testing.T) {
	n := Noise(result.Arm{RepMeans: []float64{1, 2}, Min: 1, Max: 2}, sampleNoise(0), sampleNoise(0), nil, 0)
	if !n.Noisy || !strings.Contains(strings.Join(n.Reasons, ";"), "spread") {
		t.Fatalf("%+v", n)
	}
	n = Noise(result.Arm{RepMeans: []float64{1, 1.1}, Min: 1, Max: 1.1}, sampleNoise(0), sampleNoise(0), nil, 0)
	if n.Noisy {
		t.Fatalf("quiet arm flagged: %+v", n)
	}
}

func TestNoiseFlagsStartLoadNotOwnLoad(t *testing.T) {
	quiet := result.Arm{RepMeans: []float64{1, 1}, Min: 1, Max: 1}
	// A high load before the arm (ctxlab's own earlier arms) is recorded, not flagged.
	n := Noise(quiet, sampleNoise(50), sampleNoise(50), nil, 0.1)
	if n.Noisy || n.Load1Before != 50 {
		t.Fatalf("%+v", n)
	}
	n = Noise(quiet, sampleNoise(0), sampleNoise(0), nil, 9)
	if !n.Noisy || !strings.Contains(n.Reasons[0], "when the run started") {
		t.Fatalf("%+v", n)
	}
}

// A setup that hangs is abandoned at the arm's limit, and closed when it returns.
func TestArmSetupTimesOut(t *testing.T) {
	c := cfg()
	c.Timeout = 200 * time.Millisecond
	release := make(chan struct{})
	s := &spin{}
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/slowopen", Open: func(context.Context) (exp.Bench, error) {
		<-release
		return s, nil
	}})
	if r.Status != result.StatusTimedOut || !strings.Contains(r.Reason, "setup") {
		t.Fatalf("status %q reason %q", r.Status, r.Reason)
	}
	close(release)
	deadline := time.Now().Add(2 * time.Second)
	for s.closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if s.closed.Load() != 1 {
		t.Fatal("the late bench was not closed")
	}
}

// slowFirst's first op takes 60 ms (a child starting), every later op
// about 20 µs of spinning.
type slowFirst struct{ ops int }

func (s *slowFirst) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		if s.ops == 0 {
			time.Sleep(60 * time.Millisecond)
		}
		s.ops++
		x := 0
		for j := 0; j < 20000; j++ {
			x += j ^ (x >> 2)
		}
		_ = x
	}
	return nil
}
func (s *slowFirst) Close() error                   { return nil }
func (s *slowFirst) Participants() exp.Participants { return exp.WholeProcess() }

// One slow first op must not size the repetitions (the issue: a process
// ring sized from one op ran 1 op per repetition).
func TestSizingIgnoresSlowFirstOp(t *testing.T) {
	c := cfg()
	c.BenchTime, c.WarmUp, c.WarmUpOps = 20*time.Millisecond, time.Millisecond, 1
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/slowfirst", Open: func(context.Context) (exp.Bench, error) { return &slowFirst{}, nil }})
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Reason)
	}
	// Sized from the 60 ms first op, a 20 ms repetition would hold 1 op; a
	// fair sizing gives ~1 000 on a quiet machine, fewer on a loaded one.
	if r.Ops < MinOpsPerRep {
		t.Fatalf("%d ops per repetition, want ≥ %d (sized from the slow first op?)", r.Ops, MinOpsPerRep)
	}
	if r.DurationNs < int64(3*c.BenchTime) {
		t.Fatalf("duration %d ns: less than the repetitions alone", r.DurationNs)
	}
}

func TestPredictN(t *testing.T) {
	for _, tc := range []struct {
		goal, el int64
		n, want  int
	}{
		{goal: 1000, el: 10, n: 1, want: 100},   // at most 100×
		{goal: 1000, el: 100, n: 10, want: 120}, // goal × 1.2
		{goal: 1000, el: 1e6, n: 5, want: 6},    // at least n+1
		{goal: 1e12, el: 1, n: 1e8, want: 1e9},  // capped
	} {
		if got := predictN(tc.goal, tc.n, tc.el); got != tc.want {
			t.Errorf("predictN(%d, %d, %d) = %d, want %d", tc.goal, tc.n, tc.el, got, tc.want)
		}
	}
}

func TestSizingReasons(t *testing.T) {
	if r := sizingReasons([]int64{1e5, 1e5, 1e5}, time.Millisecond); len(r) != 1 || !strings.Contains(r[0], "sized for") {
		t.Errorf("short reps: %v", r)
	}
	if r := sizingReasons([]int64{1e6}, time.Millisecond); len(r) != 0 {
		t.Errorf("good reps flagged: %v", r)
	}
	// A repetition stretched to hold the minimum ops is held to its own
	// target, not to the benchtime.
	if r := sizingReasons([]int64{250e6, 250e6}, repTarget(60*time.Millisecond, 10, 25e6)); len(r) != 0 {
		t.Errorf("stretched reps flagged: %v", r)
	}
}

// An op so cheap that even the op cap falls short of a sizing batch's
// share must still be sized (at the cap), not loop until the arm's limit.
func TestSizingAcceptsBatchAtCap(t *testing.T) {
	saved := policy
	defer func() { policy = saved }()
	policy.MaxOpsPerRep = 1000
	c := cfg()
	c.BenchTime, c.WarmUp, c.WarmUpOps = 10*time.Second, time.Millisecond, 1
	c.Reps, c.Timeout = 1, 5*time.Second
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/cheap", Open: func(context.Context) (exp.Bench, error) { return &slowFirst{}, nil }})
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s (sizing never accepted a batch at the cap?)", r.Status, r.Reason)
	}
	if r.Ops != 1000 {
		t.Fatalf("%d ops per repetition, want the cap 1000", r.Ops)
	}
}

// Ctrl-C while an arm is still being set up is an interruption, not a
// failure of the arm.
func TestInterruptDuringSetup(t *testing.T) {
	time.Sleep(measure.PerfSettleLeft()) // an earlier test's counters: interrupt the setup, not the settle
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	r := Arm(ctx, cfg(), spec, exp.Arm{Name: "fake/slowsetup", Open: func(actx context.Context) (exp.Bench, error) {
		<-actx.Done()
		return nil, actx.Err()
	}})
	if r.Status != result.StatusInterrupted {
		t.Fatalf("status %q (%s), want interrupted", r.Status, r.Reason)
	}
}

// phased records when the runner says the timed repetitions begin.
type phased struct {
	slowFirst
	started   int   // StartTimed calls
	startOps  int   // the op count it was given
	afterRuns []int // b.N of every Run after StartTimed
}

func (p *phased) StartTimed(opsPerRep int) { p.started++; p.startOps = opsPerRep }
func (p *phased) Run(b *measure.B) error {
	if p.started > 0 {
		p.afterRuns = append(p.afterRuns, b.N)
	}
	return p.slowFirst.Run(b)
}

// A bench whose work changes once timing begins is told so once, after
// sizing, with the repetition's op count; every later Run is a timed
// repetition of that size.
func TestStartTimedOnceBeforeRepetitions(t *testing.T) {
	c := cfg()
	c.BenchTime, c.WarmUp, c.WarmUpOps, c.Reps = 5*time.Millisecond, time.Millisecond, 1, 3
	p := &phased{}
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/phased", Open: func(context.Context) (exp.Bench, error) { return p, nil }})
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Reason)
	}
	if p.started != 1 || int64(p.startOps) != r.Ops {
		t.Fatalf("StartTimed called %d times with %d ops; want once with %d", p.started, p.startOps, r.Ops)
	}
	if len(p.afterRuns) != c.Reps {
		t.Fatalf("%d runs after StartTimed, want the %d repetitions", len(p.afterRuns), c.Reps)
	}
	for _, n := range p.afterRuns {
		if int64(n) != r.Ops {
			t.Fatalf("a run of %d ops after StartTimed, want repetitions of %d", n, r.Ops)
		}
	}
}

// stuckGauge never returns from Read, whatever Close or ctx say.
type stuckGauge struct{ release chan struct{} }

func (g *stuckGauge) Read(context.Context) (exp.Reading, error) {
	<-g.release
	return exp.Reading{}, nil
}
func (g *stuckGauge) Close() error                   { return nil }
func (g *stuckGauge) Participants() exp.Participants { return exp.Participants{} }

// A gauge stuck where Close cannot reach ends "timed out … abandoned"
// within the limit plus the abandon wait, as a loop does, not never.
func TestStuckGaugeIsAbandoned(t *testing.T) {
	saved := abandonAfter
	abandonAfter = 300 * time.Millisecond
	defer func() { abandonAfter = saved }()
	g := &stuckGauge{release: make(chan struct{})}
	defer close(g.release)
	c := cfg()
	c.Timeout = 200 * time.Millisecond
	start := time.Now()
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/stuck", Open: func(context.Context) (exp.Bench, error) { return g, nil }})
	if r.Status != result.StatusTimedOut || !strings.Contains(r.Reason, "abandoned") {
		t.Fatalf("status %q (%s), want timed out and abandoned", r.Status, r.Reason)
	}
	if d := time.Since(start); d > c.Timeout+abandonAfter+5*time.Second {
		t.Fatalf("took %v", d)
	}
}

// resizer changes GOMAXPROCS during its repetitions, as Go's own resizing
// to a narrowed CPU mask would if the runner had not set it.
type resizer struct {
	spin
	to int
}

func (z *resizer) Run(b *measure.B) error {
	if b.S != nil { // a timed repetition, not sizing
		runtime.GOMAXPROCS(z.to)
	}
	return z.spin.Run(b)
}

// An arm whose GOMAXPROCS moved under it is flagged, naming both values:
// its figure is not the arm it is named for.
func TestArmFlagsGOMAXPROCSChange(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	want := runtime.GOMAXPROCS(0) + 1
	z := &resizer{to: want + 1}
	r := Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/resize", GOMAXPROCS: want,
		Open: func(context.Context) (exp.Bench, error) { return z, nil }})
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Reason)
	}
	if r.GOMAXPROCS != want || !r.Noise.Noisy {
		t.Fatalf("gomaxprocs %d noisy %v, want %d and noisy", r.GOMAXPROCS, r.Noise.Noisy, want)
	}
	if got := runtime.GOMAXPROCS(0); got == want {
		t.Fatalf("GOMAXPROCS %d after the arm: the arm's, not what the test had", got)
	}
	found := false
	for _, why := range r.Noise.Reasons {
		found = found || strings.Contains(why, fmt.Sprintf("GOMAXPROCS was %d when the arm ended, not its %d", want+1, want))
	}
	if !found {
		t.Fatalf("reasons %q do not name the change", r.Noise.Reasons)
	}
}

// An arm that leaves GOMAXPROCS alone is not flagged for it.
func TestArmKeepsGOMAXPROCSUnflagged(t *testing.T) {
	r := Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/spin", GOMAXPROCS: runtime.GOMAXPROCS(0) + 1,
		Open: func(context.Context) (exp.Bench, error) { return &spin{}, nil }})
	if r.Status != result.StatusOK || len(r.RepMeans) == 0 {
		t.Fatalf("%s: %s, %d repetitions", r.Status, r.Reason, len(r.RepMeans))
	}
	for _, why := range r.Noise.Reasons {
		if strings.Contains(why, "GOMAXPROCS") {
			t.Fatalf("flagged: %q", why)
		}
	}
}

// TestNoiseThrottledNeverNegative: a cgroup counter read before but not
// after an arm (or reset) must not store a negative count, which
// result.Validate refuses on import.
func TestNoiseThrottledNeverNegative(t *testing.T) {
	before, after := sampleNoise(0), sampleNoise(0)
	before.Throttled, before.ThrottledUs = 7, 900
	n := Noise(result.Arm{RepMeans: []float64{1, 1}, Min: 1, Max: 1}, before, after, nil, 0)
	if n.Throttled != 0 || n.ThrottledUs != 0 {
		t.Errorf("throttled %d periods, %d µs; want 0 when the counter went down", n.Throttled, n.ThrottledUs)
	}
	before.Throttled, after.Throttled = 2, 5
	if n := Noise(result.Arm{}, before, after, nil, 0); n.Throttled != 3 {
		t.Errorf("throttled %d periods, want 3", n.Throttled)
	}
}
