package exp

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func f64(v float64) *float64 { return &v }

// A machine is busy by its steal or its arms' run-queue wait, or by its
// load where no arm measured its wait (the load average lags); a quiet one
// is not, and an op splits into CPU and wait only where both fit
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
		{"load, and the arms did not wait", 3.7, []result.Arm{arm(100, 90, 5, 0)}, ""},
		{"load, no run-queue figures", 3.7, []result.Arm{{Name: "x", Status: result.StatusOK, Unit: "ns/op", Median: 100, RepMeans: []float64{100}}}, "load 3.7 on 2 CPUs"},
		{"load and wait", 3.7, []result.Arm{arm(100, 50, 40, 0)}, "load 3.7 on 2 CPUs, run-queue wait 40% of wall"},
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

// A comparison measured side by side is worded with its interval, basis
// and pairing, its answer taken from the interval, not the ratio alone.
func TestPairWords(t *testing.T) {
	c := result.Comparison{Label: "x", A: "e/a", B: "e/b", Paired: result.PairedBursts, Rounds: 12, Basis: result.BasisCPU,
		Wall: result.Ratio{Ratio: 0.8, Lo: 0.5, Hi: 2}, CPU: &result.Ratio{Ratio: 15, Lo: 14, Hi: 16}, Answer: result.AnswerDiffer}
	for _, k := range []struct {
		mod  func(*result.Comparison)
		want string
	}{
		{func(*result.Comparison) {}, "15× slower (14–16×, CPU time; wall 1.2× faster, 12 paired bursts)"},
		{func(c *result.Comparison) { c.Basis = result.BasisWall; c.Answer = result.AnswerUndecided },
			"undecided, 1.2× faster (0.5–2×, wall time, 12 paired bursts)"},
		{func(c *result.Comparison) { c.CPU = &result.Ratio{Ratio: 0.5, Lo: 0.4, Hi: 0.8} },
			"2.0× faster (1.25–2.5×, CPU time; wall 1.2× faster, 12 paired bursts)"},
		{func(c *result.Comparison) {
			c.CPU, c.Answer, c.Paired = &result.Ratio{Ratio: 1.02, Lo: 0.97, Hi: 1.05}, result.AnswerSame, result.PairedReps
		}, "about the same (0.97–1.05×, CPU time; wall 1.2× faster, 12 rounds alternating by repetition)"},
	} {
		x := c
		k.mod(&x)
		if got := PairWords(x, "slower", "faster"); got != k.want {
			t.Errorf("got %q, want %q", got, k.want)
		}
	}
	v := NewVerdictRun(&result.Run{Experiments: []result.Experiment{{Comparisons: []result.Comparison{c, {A: "e/c", B: "e/d"}}}}})
	if got, ok := v.Comparison("e/a", "e/b"); !ok || got.Label != "x" {
		t.Errorf("Comparison: %+v %v", got, ok)
	}
	if _, ok := v.Comparison("e/c", "e/d"); ok {
		t.Error("a comparison without rounds has no ratio to state")
	}
}

// Beside a CPU-time answer, a wall ratio within SameWithin of 1 is worded
// "about the same", not "1.0× slower".
func TestPairWordsWallAboutTheSame(t *testing.T) {
	c := result.Comparison{Paired: result.PairedBursts, Rounds: 12, Basis: result.BasisCPU, Answer: result.AnswerDiffer,
		Wall: result.Ratio{Ratio: 1.03, Lo: 1.01, Hi: 1.05}, CPU: &result.Ratio{Ratio: 4, Lo: 3.9, Hi: 4.1}}
	if got, want := PairWords(c, "slower", "faster"), "4.0× slower (3.9–4.1×, CPU time; wall about the same, 12 paired bursts)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
