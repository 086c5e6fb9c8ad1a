package experiments

import (
	"context"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// TestRingYieldSpawnQuickArms runs every quick arm of ring, yield and spawn
// through the runner with tiny repetitions: each must finish (ok, or too
// few ops where an op is slow for the tiny benchtime), and the
// checks and findings must come out of the results.
func TestRingYieldSpawnQuickArms(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a dozen arms")
	}
	h := sysinfo.Detect()
	p := exp.Params{Suite: exp.SuiteQuick, CPUs: h.OnlineCPUs, Host: h}
	sel, err := exp.Select([]string{"ring", "yield", "spawn"}, p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Reps, cfg.BenchTime, cfg.WarmUp, cfg.Timeout, cfg.Host = 1, 5*time.Millisecond, 5*time.Millisecond, 30*time.Second, h
	arms, exps, interrupted := runner.Run(context.Background(), cfg, sel)
	if interrupted {
		t.Fatal("interrupted")
	}
	if len(exps) != 3 {
		t.Fatalf("%d experiments, want 3", len(exps))
	}
	for _, a := range arms {
		// At a 5 ms benchtime a process exec (~8 ms) has too few ops: it
		// finished all the same, and keeps its figures as evidence.
		measured := a.Status == result.StatusOK || a.Status == result.StatusTooFewOps
		if !measured && a.Status != result.StatusUnsupported {
			t.Errorf("%s: %s (%s)", a.Name, a.Status, a.Reason)
		}
		weighed := a.Unit == "B/op" // spawn's idle-memory gauges count no switches
		if measured && (a.Median <= 0 || (a.Switches == nil && !weighed)) {
			t.Errorf("%s: median %v, switches %v", a.Name, a.Median, a.Switches)
		}
	}
	for _, e := range exps {
		if len(e.Checks) == 0 || len(e.Findings) == 0 {
			t.Errorf("%s: %d checks, %d findings; want some of each", e.Name, len(e.Checks), len(e.Findings))
		}
	}
	if a := child.Alive(); a != 0 {
		t.Errorf("%d children alive after the arms", a)
	}
}
