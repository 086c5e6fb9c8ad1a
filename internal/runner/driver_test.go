package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
)

// driverBench is the real CPython driver as a SelfTimed bench, recording
// what the runner asked of it and what it answered.
type driverBench struct {
	in      *pydriver.Interpreter
	req     pydriver.Request
	arm     *pydriver.Arm
	batches []driverBatch
	timed   pydriver.Timed
	answer  *pydriver.Response
}

type driverBatch struct {
	asked, ops int
	ns         int64
}

func (b *driverBench) Start(ctx context.Context) (exp.SelfTiming, error) {
	arm, err := b.in.Open(ctx, b.req)
	if err != nil {
		return exp.SelfTiming{}, err
	}
	b.arm = arm
	return exp.SelfTiming{ClockNs: arm.Hello.ClockNs, UnitOps: arm.Unit, Sampled: arm.Sampled}, nil
}

func (b *driverBench) Batch(ctx context.Context, n int) (int, int64, error) {
	ops, ns, err := b.arm.Batch(ctx, n)
	b.batches = append(b.batches, driverBatch{n, ops, ns})
	return ops, ns, err
}

func (b *driverBench) Measure(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
	b.timed = pydriver.Timed{Reps: req.Reps, Ops: req.OpsPerRep, Every: req.SampleEvery, PerOpNs: req.PerOpNs}
	r, err := b.arm.Measure(ctx, b.timed)
	if err != nil {
		return nil, err
	}
	b.answer = r
	d := &exp.DirectResult{OpsPerRep: r.Ops[0], Samples: r.SamplesNs, SampleEvery: r.SampleEvery, Migrations: -1}
	for i := range r.RepNs {
		d.RepMeans = append(d.RepMeans, float64(r.RepNs[i])/float64(r.Ops[i]))
		d.TotalOps += r.Ops[i]
	}
	return d, nil
}

func (b *driverBench) Close() error {
	if b.arm != nil {
		b.arm.Close()
	}
	return nil
}

func (b *driverBench) Participants() exp.Participants { return exp.Participants{} }

// TestRunnerSizesTheDriver runs the real driver under the runner, with a
// policy of its own and a bench whose first op is slow (lazy set-up the
// clock sees), and holds what the driver ran to the runner's own
// functions: every sizing batch is predictN of the one before, the
// repetitions are opsPerRep of the last batch's cost, sampled every
// sampleEvery of them by the driver's clock. Nothing sized them but the
// runner: the driver ran exactly what it was told.
func TestRunnerSizesTheDriver(t *testing.T) {
	in, err := pydriver.Resolve("python3")
	if err != nil {
		t.Skipf("no usable python3: %v", err)
	}
	testdata, _ := filepath.Abs(filepath.Join("..", "pydriver", "testdata"))
	pydriver.CloseAll()
	t.Setenv("PYTHONPATH", testdata)
	t.Setenv("CTXLAB_DRIVER_TEST_BENCHES", "testbenches")
	defer pydriver.CloseAll()
	saved := policy
	defer func() { policy = saved }()

	c := cfg()
	c.Reps, c.BenchTime, c.WarmUp, c.WarmUpOps, c.MaxSamples, c.Timeout = 2, 8*time.Millisecond, 2*time.Millisecond, 1<<20, 1000, time.Minute
	for _, tc := range []struct {
		name   string
		params map[string]string
		pol    Policy
	}{
		{"slow first op", map[string]string{"op_ns": "20000", "first_ns": "60000000"},
			Policy{Share: 0.2, GrowMax: 50, Overshoot: 1.3, MaxOpsPerRep: 1e9, SampleClockFactor: 500}},
		{"cheap op", map[string]string{"op_ns": "50"},
			Policy{Share: 0.2, GrowMax: 50, Overshoot: 1.3, MaxOpsPerRep: 1e9, SampleClockFactor: 500}},
		{"capped", map[string]string{"op_ns": "50"},
			Policy{Share: 0.2, GrowMax: 50, Overshoot: 1.3, MaxOpsPerRep: 100, SampleClockFactor: 500}},
	} {
		policy = tc.pol
		b := &driverBench{in: in, req: pydriver.Request{Bench: "test.spin", Params: tc.params}}
		r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/driver", Open: func(context.Context) (exp.Bench, error) { return b, nil }})
		if r.Status != result.StatusOK || b.answer == nil {
			t.Fatalf("%s: %s (%s)", tc.name, r.Status, r.Reason)
		}
		checkDriverSizing(t, tc.name, c, b)
		if tc.name == "slow first op" {
			if first := b.batches[0]; first.ops != 1 || first.ns < 60e6 {
				t.Fatalf("%s: the first batch %+v, want the one slow op", tc.name, first)
			}
			if b.timed.PerOpNs > 30e6 {
				t.Fatalf("%s: sized from the slow first op: %.0f ns an op", tc.name, b.timed.PerOpNs)
			}
		}
		if tc.name == "capped" && b.timed.Ops > 100 {
			t.Fatalf("%s: %d ops a repetition, over the cap 100", tc.name, b.timed.Ops)
		}
	}
}

// checkDriverSizing holds one arm's batches and repetitions to the
// runner's functions.
func checkDriverSizing(t *testing.T, name string, c Config, b *driverBench) {
	t.Helper()
	bs := b.batches
	if len(bs) < 2 || bs[0].asked != 1 {
		t.Fatalf("%s: batches %+v, want at least two, the first of one op", name, bs)
	}
	share := max(int64(policy.Share*float64(c.BenchTime)), 1)
	for i, bt := range bs {
		if bt.ops != bt.asked {
			t.Fatalf("%s: batch %d ran %d ops, asked for %d", name, i, bt.ops, bt.asked)
		}
		if i > 0 {
			if want := predictN(share, bs[i-1].ops, bs[i-1].ns); bt.asked != want {
				t.Fatalf("%s: batch %d asked for %d ops after %+v; predictN says %d", name, i, bt.asked, bs[i-1], want)
			}
		}
	}
	last := bs[len(bs)-1]
	perOp := max(float64(last.ns)/float64(last.ops), 1e-3)
	ops := opsPerRep(c.BenchTime, perOp, 0)
	every := sampleEvery(c.Reps*ops, 1, c.MaxSamples, b.arm.Hello.ClockNs, perOp)
	if b.timed.Reps != c.Reps || b.timed.Ops != ops || b.timed.Every != every || b.timed.PerOpNs != perOp {
		t.Fatalf("%s: asked for %+v; the rule gives %d reps of %d ops every %d (%.1f ns an op)", name, b.timed, c.Reps, ops, every, perOp)
	}
	a := b.answer
	for _, n := range a.Ops {
		if n != int64(ops) {
			t.Fatalf("%s: the repetitions ran %v ops, asked for %d", name, a.Ops, ops)
		}
	}
	if a.SampleEvery != every || len(a.SamplesNs) != c.Reps*(ops/every) {
		t.Fatalf("%s: sampled every %d, %d samples; asked every %d of %d ops × %d", name, a.SampleEvery, len(a.SamplesNs), every, ops, c.Reps)
	}
}
