package experiments

import (
	"runtime"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Every concurrency arm runs and checks each row, leaving no goroutine,
// thread worker or temp dir behind.
func TestConcurrencyEveryArmRuns(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	arms, err := concurrencyArms(hopParams(exp.SuiteFull, map[string]string{"concurrency.levels": "1,3", "concurrency.pool": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		if a.Unsupported != "" {
			continue
		}
		before := runtime.NumGoroutine()
		if err := runArm(t, a, 101); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		waitGoroutines(t, before)
	}
	if left := tempDirs(t, tmp); len(left) > 0 {
		t.Errorf("temp dirs left behind: %v", left)
	}
}

func TestConcurrencyDeriveAndChecks(t *testing.T) {
	arm := func(way string, c string, median float64) result.Arm {
		return result.Arm{Name: "concurrency/" + way + "/" + c, Status: result.StatusOK, GOMAXPROCS: 2,
			Params: map[string]string{"op": "modernc-file", "way": way, "c": c, "pool": "6"}, Median: median}
	}
	arms := []result.Arm{arm("sem", "1", 5000), arm("sem", "10", 3000), arm("sem", "50", 3100), arm("threadpool", "1", 60000), arm("threadpool", "10", 6000)}
	concurrencyDerive(arms)
	if got := arms[0].Metrics["elapsed-ms/10000-lookups"]; got != 50 {
		t.Errorf("ms/10000-lookups = %v, want 50", got)
	}
	checks := concurrencyChecks(arms)
	if len(checks) != 2 {
		t.Fatalf("%d checks, want 2: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if !c.Holds {
			t.Errorf("does not hold: %s — %s", c.Name, c.Detail)
		}
	}
	f := strings.Join(concurrencyFindings(arms), "\n")
	if !strings.Contains(f, "C=1 50.0 ms · C=10 30.0 ms (speed-up 1.67× over C=1)") || !strings.Contains(f, "6 locked threads") {
		t.Errorf("findings:\n%s", f)
	}
}
