package experiments

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// A fix's p99 against the bad case's is worded by the one rule
// (exp.Compare): 59.2 ms against 57 ms is "about the same", never
// "(1× lower)", and a real drop says its multiple.
func TestInterferenceFixWording(t *testing.T) {
	arm := func(name string, p99 float64) result.Arm {
		return result.Arm{Name: name, Experiment: "interference", Status: result.StatusOK, Median: p99 / 3,
			Percentiles: &result.Percentiles{Samples: 100, P50: 2e6, P99: p99}}
	}
	arms := []result.Arm{
		arm(ifKey(shapeTimer, "goroutine-spin", 1, 1).String(), 59.2e6),
		arm(ifKey(shapeTimer, "process-spin", 1, 1).String(), 57e6),
		arm(ifKey(shapeTimer, "goroutine-spin", 1, 2).String(), 6.32e6),
	}
	details := map[string]string{}
	for _, c := range interferenceChecks(arms) {
		if strings.HasPrefix(c.Name, "fix for timer") {
			details[c.Name] = c.Detail
		}
	}
	if len(details) != 2 {
		t.Fatalf("fix checks: %v", details)
	}
	for name, d := range details {
		if strings.Contains(d, "1× lower") || strings.Contains(d, "1× higher") {
			t.Errorf("%s: %q", name, d)
		}
		switch {
		case strings.Contains(name, "separate process") && !strings.Contains(d, "(about the same)"):
			t.Errorf("%s: %q, want about the same", name, d)
		case strings.Contains(name, "GOMAXPROCS=2") && !strings.Contains(d, "(9.4× lower)"):
			t.Errorf("%s: %q, want 9.4× lower", name, d)
		}
	}
}
