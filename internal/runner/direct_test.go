package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// measureFunc is a SelfTimed bench made of one function, whose ops cost
// fakeOpNs each by its own clock (fakeTiming's, which costs 25 ns a reading).
type measureFunc func(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error)

const fakeOpNs = 1000

var fakeTiming = exp.SelfTiming{ClockNs: 25, UnitOps: 1, Sampled: true}

func (f measureFunc) Start(context.Context) (exp.SelfTiming, error) { return fakeTiming, nil }
func (f measureFunc) Batch(_ context.Context, n int) (int, int64, error) {
	return n, int64(n) * fakeOpNs, nil
}
func (f measureFunc) Measure(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
	return f(ctx, req)
}
func (measureFunc) Participants() exp.Participants { return exp.Participants{} }
func (measureFunc) Close() error                   { return nil }

func directArm(f measureFunc) exp.Arm {
	return exp.Arm{Name: "t/direct", Substrate: "pythread", Mechanism: "x", Params: map[string]string{"a": "1"},
		Open: func(context.Context) (exp.Bench, error) { return f, nil }}
}

func directConfig() Config {
	c := ForSuite(exp.SuiteQuick)
	c.Timeout = 300 * time.Millisecond
	c.WarmUpOps = 1000 // the fake's batches take no time: warm by ops
	c.Host = sysinfo.Detect()
	return c
}

func TestDirectArmResult(t *testing.T) {
	var got exp.DirectRequest
	cpuNs := int64(4500)
	a := directArm(func(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
		got = req
		return &exp.DirectResult{RepMeans: []float64{100, 300, 200}, OpsPerRep: 10, TotalOps: 30,
			Samples: []int64{90, 100, 110, 120}, SampleEvery: 3, Voluntary: 60, Involuntary: 3, ChildVoluntary: 30,
			Migrations: 6, CPUNs: &cpuNs, Params: map[string]string{"python": "3.11.7"}, Metrics: map[string]float64{"task_bytes": 800},
			Notes: []string{"from python"}}, nil
	})
	cfg := directConfig()
	r := Arm(context.Background(), cfg, &exp.Spec{Name: "t", Op: "round trip"}, a)
	if r.Status != result.StatusOK {
		t.Fatalf("status %s: %s", r.Status, r.Reason)
	}
	// Sized by the runner's rule from the bench's own batches and clock.
	ops := int(cfg.BenchTime / fakeOpNs)
	want := exp.DirectRequest{Reps: cfg.Reps, OpsPerRep: ops, PerOpNs: fakeOpNs,
		SampleEvery: sampleEvery(cfg.Reps*ops, 1, cfg.MaxSamples, fakeTiming.ClockNs, fakeOpNs)}
	if got != want || want.SampleEvery < 2 {
		t.Fatalf("request = %+v, want %+v", got, want)
	}
	if r.Median != 200 || r.Min != 100 || r.Max != 300 || r.Ops != 10 || len(r.RepMeans) != 3 {
		t.Fatalf("summary: median %v min %v max %v ops %v", r.Median, r.Min, r.Max, r.Ops)
	}
	if r.Switches == nil || r.Switches.Voluntary != 2 || r.Switches.Involuntary != 0.1 || r.Switches.ChildVoluntary != 1 {
		t.Fatalf("switches = %+v", r.Switches)
	}
	if r.Migrations == nil || *r.Migrations != 0.2 {
		t.Fatalf("migrations = %v", r.Migrations)
	}
	if r.CPUNsPerOp == nil || *r.CPUNsPerOp != 150 {
		t.Fatalf("CPU time per op = %v, want 4500 ns over 30 ops", r.CPUNsPerOp)
	}
	if r.Percentiles == nil || r.Percentiles.Samples != 4 || r.Percentiles.P50 != 100 || r.Percentiles.Max != 120 || len(r.Histogram) == 0 {
		t.Fatalf("percentiles = %+v", r.Percentiles)
	}
	if r.Params["a"] != "1" || r.Params["python"] != "3.11.7" || r.Metrics["task_bytes"] != 800 {
		t.Fatalf("params %v metrics %v", r.Params, r.Metrics)
	}
	if !strings.Contains(strings.Join(r.Notes, "|"), "every 3rd op") || !strings.Contains(strings.Join(r.Notes, "|"), "from python") {
		t.Fatalf("notes = %v", r.Notes)
	}
	if !r.Noise.Noisy || r.Noise.Spread != 3 {
		t.Fatalf("a 3× spread must be flagged noisy: %+v", r.Noise)
	}
}

func TestDirectArmStatuses(t *testing.T) {
	for _, tc := range []struct {
		err    error
		block  bool
		status string
		reason string
	}{
		{err: fmt.Errorf("python3 not found: %w", exp.ErrSkipped), status: result.StatusSkipped, reason: "python3 not found"},
		{err: fmt.Errorf("no aiosqlite: %w", exp.ErrUnsupported), status: result.StatusUnsupported, reason: "no aiosqlite"},
		{err: errors.New("driver crashed; stderr: boom"), status: result.StatusFailed, reason: "boom"},
		{block: true, status: result.StatusTimedOut, reason: "did not finish"},
	} {
		a := directArm(func(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
			if tc.block {
				<-ctx.Done()
				return nil, errors.New("driver killed")
			}
			return nil, tc.err
		})
		r := Arm(context.Background(), directConfig(), &exp.Spec{Name: "t"}, a)
		if r.Status != tc.status || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("status %q reason %q, want %q containing %q", r.Status, r.Reason, tc.status, tc.reason)
		}
	}
}

// A self-timed bench that fails after measuring some repetitions leaves
// none of their figures: its samples and counts cannot be split by
// repetition, so the failed measurement counts as a whole (a Loop's failed
// repetition is rolled back the same way).
func TestDirectArmFailureKeepsNoFigures(t *testing.T) {
	a := directArm(func(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
		return &exp.DirectResult{RepMeans: []float64{100}, OpsPerRep: 10, TotalOps: 20,
			Samples: []int64{90, 1e9}, SampleEvery: 1, Voluntary: 60}, errors.New("driver crashed in repetition 2")
	})
	r := Arm(context.Background(), directConfig(), &exp.Spec{Name: "t"}, a)
	if r.Status != result.StatusFailed || !strings.Contains(r.Reason, "repetition 2") {
		t.Fatalf("status %q reason %q", r.Status, r.Reason)
	}
	if r.Percentiles != nil || len(r.RepMeans) != 0 || r.Switches != nil || r.Median != 0 {
		t.Fatalf("figures kept from a failed measurement: percentiles %+v means %v switches %+v", r.Percentiles, r.RepMeans, r.Switches)
	}
}

// blockedUntilClose is a bench whose measurement waits for Close, which
// it counts; as a SelfTimed it measures, as a Gauge (gaugeUntilClose) it
// reads.
type blockedUntilClose struct {
	closed chan struct{}
	closes int
}

func (b *blockedUntilClose) Participants() exp.Participants { return exp.Participants{} }
func (b *blockedUntilClose) Close() error {
	if b.closes++; b.closes == 1 {
		close(b.closed)
	}
	return nil
}
func (b *blockedUntilClose) Start(context.Context) (exp.SelfTiming, error) { return fakeTiming, nil }
func (b *blockedUntilClose) Batch(_ context.Context, n int) (int, int64, error) {
	return n, int64(n) * fakeOpNs, nil
}
func (b *blockedUntilClose) Measure(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
	<-b.closed
	return nil, errors.New("closed")
}

type gaugeUntilClose struct{ *blockedUntilClose }

func (g gaugeUntilClose) Read(ctx context.Context) (exp.Reading, error) {
	<-g.closed
	return exp.Reading{}, errors.New("closed")
}

// A self-timed or gauge arm that is still measuring when its time runs out
// is closed once, to unblock it, and not again at teardown.
func TestStuckBenchClosedOnce(t *testing.T) {
	for _, kind := range []string{"self-timed", "gauge"} {
		b := &blockedUntilClose{closed: make(chan struct{})}
		var bench exp.Bench = b
		if kind == "gauge" {
			bench = gaugeUntilClose{b}
		}
		a := exp.Arm{Name: "t/stuck", Open: func(context.Context) (exp.Bench, error) { return bench, nil }}
		r := Arm(context.Background(), directConfig(), &exp.Spec{Name: "t", Op: "op"}, a)
		if r.Status != result.StatusTimedOut {
			t.Errorf("%s: status %s (%s), want timed out", kind, r.Status, r.Reason)
		}
		if b.closes != 1 {
			t.Errorf("%s: closed %d times, want once", kind, b.closes)
		}
	}
}

// timedBy is measureFunc with its own SelfTiming.
type timedBy struct {
	measureFunc
	t exp.SelfTiming
}

func (b timedBy) Start(context.Context) (exp.SelfTiming, error) { return b.t, nil }

// The bench's timing goes into the runner's rule: a floor on the ops, a
// unit of several ops, a cap on the samples, and no sampling where
// samples mean nothing.
func TestDirectArmTiming(t *testing.T) {
	cfg := directConfig()
	for _, tt := range []exp.SelfTiming{
		{ClockNs: 25, UnitOps: 10, Sampled: true, MinOps: 1e6, MaxSamples: 50},
		{ClockNs: 25, UnitOps: 1, Sampled: false},
	} {
		var got exp.DirectRequest
		b := timedBy{func(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
			got = req
			return &exp.DirectResult{RepMeans: []float64{1}, OpsPerRep: int64(req.OpsPerRep)}, nil
		}, tt}
		a := exp.Arm{Name: "t/timed", Open: func(context.Context) (exp.Bench, error) { return b, nil }}
		if r := Arm(context.Background(), cfg, &exp.Spec{Name: "t"}, a); r.Status != result.StatusOK {
			t.Fatalf("%+v: %s (%s)", tt, r.Status, r.Reason)
		}
		want := exp.DirectRequest{Reps: cfg.Reps, OpsPerRep: max(tt.MinOps, int(cfg.BenchTime/fakeOpNs)), PerOpNs: fakeOpNs}
		if tt.Sampled {
			want.SampleEvery = sampleEvery(cfg.Reps*want.OpsPerRep, tt.UnitOps, tt.MaxSamples, tt.ClockNs, fakeOpNs)
		}
		if got != want {
			t.Errorf("%+v: request %+v, want %+v", tt, got, want)
		}
	}
}
