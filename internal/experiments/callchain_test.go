package experiments

import (
	"runtime"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Every callchain arm runs and checks its result (Run fails on a wrong
// chain result or item), and leaves no goroutine behind.
func TestCallchainEveryArmRuns(t *testing.T) {
	arms, err := callchainArms(hopParams(exp.SuiteFull, map[string]string{"callchain.items": "1000", "callchain.batch": "7"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		before := runtime.NumGoroutine()
		// 2500 items: two full rounds of 1000 and a partial one.
		if err := runArm(t, a, 2500); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		waitGoroutines(t, before)
	}
}

func TestCallchainChainsAgree(t *testing.T) {
	for _, kind := range []string{"plain", "inlined", "interface", "closure", "goroutine"} {
		c := newChainBench(kind)
		for _, x := range []int64{0, 1, 42, -7} {
			var got int64
			switch kind {
			case "plain":
				got = ccPlain1(x)
			case "inlined":
				got = ccInl1(x)
			case "interface":
				got = c.(*ifaceChain).first.call(x)
			case "closure":
				got = c.(*closureChain).first(x)
			case "goroutine":
				got = c.(*asyncChain).async.call(x)
			}
			if want := ((x + 1) ^ 5 + 7 + 1) * 3; got != want {
				t.Errorf("%s(%d) = %d, want %d", kind, x, got, want)
			}
		}
	}
}

func TestCallchainDeriveAndChecks(t *testing.T) {
	arm := func(kind, op string, gmp int, median float64) result.Arm {
		return result.Arm{Name: "callchain/" + kind, Status: result.StatusOK, Op: op, GOMAXPROCS: gmp,
			Params: map[string]string{"kind": kind, "items": "100000", "batch": "100"}, Median: median}
	}
	arms := []result.Arm{
		arm("plain", "chain", 2, 5), arm("interface", "chain", 2, 7), arm("closure", "chain", 2, 6), arm("goroutine", "chain", 2, 1000),
		arm("items-inline", "item", 2, 1), arm("task-per-item", "item", 2, 2000), arm("task-per-batch", "item", 2, 20),
	}
	callchainDerive(arms)
	if got := arms[3].Metrics["plain-ratio"]; got != 200 {
		t.Errorf("goroutine x-plain = %v, want 200", got)
	}
	if got := arms[5].Metrics["inline-ratio"]; got != 2000 {
		t.Errorf("task-per-item x-inline = %v, want 2000", got)
	}
	checks := callchainChecks(arms)
	if len(checks) != 4 {
		t.Fatalf("%d checks, want 4: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if !c.Holds {
			t.Errorf("does not hold: %s — %s", c.Name, c.Detail)
		}
	}
	f := strings.Join(callchainFindings(arms), "\n")
	if !strings.Contains(f, "plain 5 ns") || !strings.Contains(f, "a goroutine per item 2 µs") {
		t.Errorf("findings:\n%s", f)
	}
}
