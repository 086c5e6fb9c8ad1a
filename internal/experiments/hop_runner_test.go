package experiments

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
)

// The run is interrupted (Ctrl-C cancels the run's context), or the arm
// hits its time limit, while a hop arm on a database file is measuring: the
// runner closes the arm, the arm reports "interrupted" or "timed out", and
// the temp dir and the workers are gone.
func TestHopInterruptedRunRemovesTempDir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the runner for a fraction of a second")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	spec, ok := exp.Lookup("hop")
	if !ok {
		t.Fatal("hop not registered")
	}
	arms, err := spec.Arms(hopParams(exp.SuiteFull, nil))
	if err != nil {
		t.Fatal(err)
	}
	var arm exp.Arm
	for _, a := range arms {
		if a.Name == "hop/modernc-file/thread/gomaxprocs=all" {
			arm = a
		}
	}
	if arm.Open == nil {
		t.Fatal("arm hop/modernc-file/thread/gomaxprocs=all not found")
	}
	// Ctrl-C: the run's context is cancelled; timeout: the arm's limit ends it.
	for _, c := range []struct {
		name    string
		cancel  bool
		timeout time.Duration
		want    string
	}{
		{"interrupt", true, time.Minute, result.StatusInterrupted},
		{"timeout", false, 400 * time.Millisecond, result.StatusTimedOut},
	} {
		cfg := runner.ForSuite(exp.SuiteQuick)
		cfg.BenchTime, cfg.Reps, cfg.Timeout = 2*time.Second, 3, c.timeout
		ctx, cancel := context.WithCancel(context.Background())
		if c.cancel {
			time.Sleep(measure.PerfSettleLeft()) // an earlier test's counters: interrupt the arm, not the settle
			time.AfterFunc(300*time.Millisecond, cancel)
		}
		before := runtime.NumGoroutine()
		r := runner.Arm(ctx, cfg, spec, arm)
		cancel()
		if r.Status != c.want {
			t.Errorf("%s: status %q (%s), want %q", c.name, r.Status, r.Reason, c.want)
		}
		// A set-up cut short (slow under -race or load) is closed by the
		// runner as soon as it returns, which may be just after Arm: wait.
		left := tempDirs(t, tmp)
		for end := time.Now().Add(10 * time.Second); len(left) > 0 && time.Now().Before(end); left = tempDirs(t, tmp) {
			time.Sleep(50 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("%s: temp dirs left after the run: %v", c.name, left)
		}
		waitGoroutines(t, before)
	}
}
