package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// fakeCost is a sizing batch that takes no time: it reports fixed ns for
// the batch (a cost every batch pays once) plus perOp ns for each op, and
// counts the batches it ran.
type fakeCost struct {
	fixed, perOp float64
	batches      []int
}

func (f *fakeCost) batch(n int) (int, int64, error) {
	f.batches = append(f.batches, n)
	return n, int64(f.fixed + float64(n)*f.perOp), nil
}

// quickCfg is the quick suite's config, warm from the first op, so sizing
// depends on the fake's counts alone.
func quickCfg() Config {
	c := ForSuite(exp.SuiteQuick)
	c.WarmUp, c.WarmUpOps = time.Hour, 1
	return c
}

// cachecost's sweep at T=32 (16 × 2 CPUs) wakes every worker for each
// batch, whatever its size: on the shared 2-core VM that wake took ~40 ms
// (issue 44), and a batch of 2 elements that "filled its share" sized the
// repetitions at 3 elements. The minimum must be reached whenever the
// budget allows, whatever the fixed cost (counts, not times: the fake's
// batches take no time).
func TestSizingReachesMinimumDespiteBatchCost(t *testing.T) {
	c := quickCfg()
	for _, fixed := range []float64{0.7e6, 6e6, 40e6} { // quiet, a share, the issue's
		f := &fakeCost{fixed: fixed, perOp: 1.5} // 1.5 ns an element
		perOp, err := size(context.Background(), c, f.batch)
		if err != nil {
			t.Fatal(err)
		}
		ops := opsPerRep(c.BenchTime, perOp, 0)
		if ops < MinOpsPerRep {
			t.Errorf("fixed %s a batch: %d ops per repetition (batches %v), want ≥ %d", result.FormatNs(fixed), ops, f.batches, MinOpsPerRep)
		}
		if last := f.batches[len(f.batches)-1]; last < MinOpsPerRep {
			t.Errorf("fixed %s a batch: sized from a batch of %d ops (batches %v)", result.FormatNs(fixed), last, f.batches)
		}
	}
}

// An op too slow for MinOpsPerRep of it to fit a repetition's budget
// (5 × the 60 ms benchtime) stops sizing at the first batch that shows it,
// and the arm says why it is too few ops.
func TestSizingStopsWhereMinimumIsOutOfBudget(t *testing.T) {
	c := quickCfg()
	f := &fakeCost{perOp: 100e6} // 100 ms an op
	perOp, err := size(context.Background(), c, f.batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.batches) != 2 {
		t.Errorf("batches %v: want the first and one more", f.batches)
	}
	ops := opsPerRep(c.BenchTime, perOp, 0)
	if ops != 1 {
		t.Errorf("%d ops per repetition, want 1", ops)
	}
	why := fewOpsReason(ops, perOp, c.BenchTime)
	for _, want := range []string{"only 1 op per repetition (< 10)", "100 ms an op", "10 would last 1 s", "300 ms", "5× the 60 ms benchtime"} {
		if !strings.Contains(why, want) {
			t.Errorf("reason %q lacks %q", why, want)
		}
	}
}

// A repetition stretches up to the budget to hold the minimum, and no
// further.
func TestOpsPerRepStretchesToMinimum(t *testing.T) {
	bt := 60 * time.Millisecond
	for _, tc := range []struct {
		perOp  float64
		minOps int
		want   int
	}{
		{perOp: 1e3, want: 60000},         // as many as fill the benchtime
		{perOp: 8e6, want: 10},            // 7 fill it; 10 take 80 ms
		{perOp: 20e6, want: 10},           // a timer behind a spinning goroutine: 200 ms
		{perOp: 30e6, want: 10},           // exactly the budget
		{perOp: 40e6, want: 1},            // 400 ms: over it
		{perOp: 40e6, minOps: 3, want: 3}, // a self-timed bench's own floor
	} {
		if got := opsPerRep(bt, tc.perOp, tc.minOps); got != tc.want {
			t.Errorf("opsPerRep(%v, %s, %d) = %d, want %d", bt, result.FormatNs(tc.perOp), tc.minOps, got, tc.want)
		}
	}
}

// An arm that ran to the end with too few ops is "too few ops", its
// figures kept as evidence; one that stopped early keeps its status and
// gives no figure; one with enough ops is untouched.
func TestFewOpsStatus(t *testing.T) {
	bt := 60 * time.Millisecond
	done := func(status string) result.Arm {
		return result.Arm{Status: status, Reason: "", Ops: 3, RepMeans: []float64{5, 6, 7}, Median: 6, Min: 5, Max: 7}
	}
	a := done(result.StatusOK)
	fewOps(&a, 3, 40e6, bt)
	if a.Status != result.StatusTooFewOps || !strings.Contains(a.Reason, "only 3 ops per repetition (< 10)") || a.Median != 6 || len(a.RepMeans) != 3 {
		t.Errorf("ran to the end: %q %q, median %v, reps %v", a.Status, a.Reason, a.Median, a.RepMeans)
	}
	if a.HasFigure() {
		t.Error("a too-few-ops arm has a figure")
	}
	s := done(result.StatusTimedOut)
	s.Reason = "did not finish within 1m0s"
	fewOps(&s, 3, 40e6, bt)
	if s.Status != result.StatusTimedOut || !strings.HasPrefix(s.Reason, "did not finish within 1m0s; no figure") || s.HasFigure() || len(s.RepMeans) != 0 {
		t.Errorf("stopped early: %q %q, median %v, reps %v", s.Status, s.Reason, s.Median, s.RepMeans)
	}
	e := done(result.StatusOK)
	fewOps(&e, MinOpsPerRep, 1e6, bt)
	if e.Status != result.StatusOK || e.Reason != "" {
		t.Errorf("enough ops: %q %q", e.Status, e.Reason)
	}
}

// sleepy's op sleeps a millisecond: never shorter, so a repetition of a
// 2 ms benchtime holds at most 2 of them, however loaded the machine.
type sleepy struct{}

func (sleepy) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Millisecond)
	}
	return nil
}
func (sleepy) Close() error                   { return nil }
func (sleepy) Participants() exp.Participants { return exp.WholeProcess() }

// With no room to stretch a repetition, an arm of ops longer than a
// tenth of the benchtime ends "too few ops", with the reason, and its
// figures as evidence.
func TestArmTooFewOps(t *testing.T) {
	saved := policy
	defer func() { policy = saved }()
	policy.MaxStretch = 1
	r := Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/sleepy", Open: func(context.Context) (exp.Bench, error) { return sleepy{}, nil }})
	if r.Status != result.StatusTooFewOps {
		t.Fatalf("status %q (%s), %d ops per repetition", r.Status, r.Reason, r.Ops)
	}
	if r.Ops >= MinOpsPerRep || !strings.Contains(r.Reason, "per repetition (< 10)") || len(r.RepMeans) != cfg().Reps {
		t.Fatalf("%d ops, reason %q, reps %v", r.Ops, r.Reason, r.RepMeans)
	}
	for _, n := range r.Noise.Reasons {
		if strings.Contains(n, "ops per repetition") {
			t.Errorf("too few ops is a status, not noise: %v", r.Noise.Reasons)
		}
	}
}

// slowByClock is a self-timed bench whose ops cost 100 ms each by its own
// clock, and take no time.
type slowByClock struct{ measureFunc }

func (slowByClock) Batch(_ context.Context, n int) (int, int64, error) {
	return n, int64(n) * 100e6, nil
}

// A self-timed arm (the CPython driver) is held to the same minimum: at
// 100 ms an op, 10 do not fit a quick repetition's budget, and the arm
// says so with what sizing found.
func TestSelfTimedTooFewOps(t *testing.T) {
	b := slowByClock{func(_ context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
		return &exp.DirectResult{RepMeans: []float64{100e6, 101e6, 99e6}, OpsPerRep: int64(req.OpsPerRep)}, nil
	}}
	a := exp.Arm{Name: "t/slow", Open: func(context.Context) (exp.Bench, error) { return b, nil }}
	r := Arm(context.Background(), directConfig(), &exp.Spec{Name: "t"}, a)
	if r.Status != result.StatusTooFewOps || r.Ops != 1 || !strings.Contains(r.Reason, "sizing found 100 ms an op") {
		t.Fatalf("%s (%s), %d ops per repetition", r.Status, r.Reason, r.Ops)
	}
}
