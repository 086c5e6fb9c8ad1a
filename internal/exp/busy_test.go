package exp

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func f64(v float64) *float64 { return &v }

// A machine is busy by its load, its steal or its arms' run-queue wait; a
// quiet one is not, and an op splits into CPU and wait only where both fit
// in its wall time.
func TestBusy(t *testing.T) {
	arm := func(median, cpu, runq, steal float64) result.Arm {
		return result.Arm{Name: "x/" + result.FormatNs(median), Status: result.StatusOK, Unit: "ns/op", Median: median,
			Min: median, Max: median, RepMeans: []float64{median}, CPUNsPerOp: f64(cpu), RunqNsPerOp: f64(runq),
			Noise: result.Noise{StealPct: steal}}
	}
	env := result.Env{OnlineCPUs: []int{0, 1}}
	for _, c := range []struct {
		name  string
		load  float64
		arms  []result.Arm
		words string // "" = quiet
	}{
		{"quiet", 0.5, []result.Arm{arm(100, 90, 5, 0)}, ""},
		{"load", 3.7, []result.Arm{arm(100, 90, 5, 0)}, "load 3.7 on 2 CPUs"},
		{"steal", 0.5, []result.Arm{arm(100, 90, 5, 12)}, "steal up to 12%"},
		{"wait", 0.5, []result.Arm{arm(19000, 6200, 13000, 0), arm(100, 50, 40, 0), arm(100, 90, 1, 0)}, "run-queue wait 40% of wall"},
		{"wait at the threshold", 0.5, []result.Arm{arm(100, 80, 20, 0)}, ""},
	} {
		e := env
		e.Load1 = c.load
		why, busy := Busy(&result.Run{Env: e, Arms: c.arms})
		if busy != (c.words != "") || !strings.Contains(why, c.words) {
			t.Errorf("%s: Busy = %q, %v; want %q", c.name, why, busy, c.words)
		}
	}
	if s, ok := CostSplit(arm(19000, 6200, 12800, 0)); !ok || s != "6.2 µs of CPU; 19 µs wall here now, 12.8 µs of it waiting behind other work" {
		t.Errorf("split: %q %v", s, ok)
	}
	if s, ok := CostSplit(arm(7350, 7010, 4040, 0)); !ok || strings.Contains(s, "waiting") {
		t.Errorf("a wait that does not fit in the wall time is said: %q %v", s, ok)
	}
	if _, ok := CostSplit(result.Arm{Median: 10, Unit: "B/op", CPUNsPerOp: f64(3)}); ok {
		t.Error("a split of a figure that is not a time")
	}
}
