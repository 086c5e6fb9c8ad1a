package price_test

import (
	"math"
	"strings"
	"testing"

	_ "github.com/ctxlab/ctxlab/internal/experiments" // the arms and curves price reads are the experiments' declarations
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

func f(x float64) *float64 { return &x }

func arm(name, placement string, median, switches float64) result.Arm {
	return result.Arm{Name: name, Experiment: strings.Split(name, "/")[0], Status: result.StatusOK, Unit: "ns/op",
		Median: median, Placement: placement, Switches: &result.Switches{Voluntary: switches}}
}

func TestCPUPerOpSources(t *testing.T) {
	a := result.Arm{Counters: []result.Counter{{Name: "task-clock", PerOp: f(1500)}}}
	if ns, src, ok := price.CPUPerOp(a); !ok || ns != 1500 || !strings.Contains(src, "task-clock") {
		t.Errorf("task-clock fallback: %v %q %v", ns, src, ok)
	}
	a.CPUNsPerOp = f(1200)
	if ns, _, _ := price.CPUPerOp(a); ns != 1200 {
		t.Errorf("the runner's CPU time comes first: %v", ns)
	}
	if _, _, ok := price.CPUPerOp(result.Arm{Median: 5000}); ok {
		t.Error("wall time must not pass for CPU time")
	}
	// A figure the experiment declares as CPU time per op (exp.Metric.CPUPerOp).
	y := result.Arm{Experiment: "yield", Median: 5000, Metrics: map[string]float64{"cpu-ns/yield": 700}}
	if ns, src, ok := price.CPUPerOp(y); !ok || ns != 700 || !strings.Contains(src, "cpu-ns/yield") {
		t.Errorf("declared CPU figure: %v %q %v", ns, src, ok)
	}
	y.Experiment = "pingpong" // not declared there
	if _, _, ok := price.CPUPerOp(y); ok {
		t.Error("an undeclared metric passed for CPU time")
	}
}

// The cost per switch follows the placement, prefers CPU time, and never
// takes an unpinned or cross-CPU round trip's wall time (mostly waiting).
func TestDirectCost(t *testing.T) {
	same := arm("pingpong/thread/futex/same-cpu", "same-cpu", 6000, 2)
	unp := arm("pingpong/thread/futex/unpinned", "unpinned", 20000, 2)
	run := &result.Run{ID: "r", Arms: []result.Arm{unp, same}}
	c, ok := price.DirectCost(run, price.Unpinned)
	if !ok || c.Arm != same.Name || c.PerSwitchNs != 3000 {
		t.Errorf("unpinned without CPU time should fall back to one CPU's wall time: %+v %v", c, ok)
	}
	run.Arms[0].CPUNsPerOp = f(8000)
	c, _ = price.DirectCost(run, price.Unpinned)
	if c.Arm != unp.Name || c.PerSwitchNs != 4000 || !strings.Contains(c.How, "CPU time") {
		t.Errorf("unpinned with CPU time: %+v", c)
	}
	if _, ok := price.DirectCost(&result.Run{Arms: []result.Arm{arm("pingpong/thread/futex/cross-cpu", "cross-cpu", 2e5, 2)}}, price.Unpinned); ok {
		t.Error("a cross-CPU wall time priced a switch")
	}
}

func curveRun() *result.Run {
	mk := func(mode, w, wb string, median float64) result.Arm {
		sw := 2.0
		if mode == "per-switch-solo" {
			sw = 0
		}
		return result.Arm{Name: "cachecost/" + mode + "/" + w, Experiment: "cachecost", Status: result.StatusOK, Median: median,
			Params: map[string]string{"mode": mode, "W": w, "W_bytes": wb}, Switches: &result.Switches{Voluntary: sw}}
	}
	return &result.Run{ID: "c", Arms: []result.Arm{
		mk("per-switch", "0", "0", 6000),
		mk("per-switch", "1MiB", "1048576", 16000), mk("per-switch-solo", "1MiB", "1048576", 8000), // (16-8-6)/2 = 1 µs
		mk("per-switch", "8MiB", "8388608", 60000), mk("per-switch-solo", "8MiB", "8388608", 48000), // (60-48-6)/2 = 3 µs
	}}
}

func TestIndirectAt(t *testing.T) {
	run := curveRun()
	for _, c := range []struct {
		rss    int64
		lo, hi float64
		beyond bool
	}{
		{512 << 10, 1000, 1000, false},
		{4 << 20, 1000, 3000, false},
		{64 << 20, 1000, 3000, true},
	} {
		in, ok := price.IndirectAt(run, c.rss)
		if !ok || in.LoNs != c.lo || in.HiNs != c.hi || in.Beyond != c.beyond {
			t.Errorf("RSS %d: %+v %v, want %v–%v beyond=%v", c.rss, in, ok, c.lo, c.hi, c.beyond)
		}
	}
	if _, ok := price.IndirectAt(&result.Run{}, 1<<20); ok {
		t.Error("a run without per-switch arms priced the indirect cost")
	}
}

// The price is the arithmetic the user would do by hand: switches/s ×
// cost per switch, as a share of one core.
func TestOf(t *testing.T) {
	s := price.Seen{Seconds: 2, Vol: 90000, Invol: 10000, RSSBytes: 4 << 20} // 50 000 switches/s
	p := price.Of(s, price.Cost{PerSwitchNs: 3000, Arm: "pingpong/thread/futex/same-cpu", RunID: "r", How: "x"}, curveRun())
	if p.Rate != 50000 || math.Abs(p.Share-0.15) > 1e-9 {
		t.Fatalf("rate %v share %v, want 50000 and 0.15", p.Rate, p.Share)
	}
	text := strings.Join(p.Lines, "\n")
	for _, want := range []string{"50k switches/s × 3 µs per switch ≈ 15% of a core goes to direct switching", "90% voluntary → batch the handoffs", "RSS 4 MiB: 1 µs per switch if a switch touches little (W=1MiB) to 3 µs if each switch touches the whole RSS again (cachecost W=8MiB)", "5.0%–15% of a core more"} {
		if !strings.Contains(text, want) {
			t.Errorf("price lacks %q:\n%s", want, text)
		}
	}
	if p.IndirectLo == nil || math.Abs(*p.IndirectLo-0.05) > 1e-9 {
		t.Errorf("indirect lo = %v", p.IndirectLo)
	}
	inv := price.Of(price.Seen{Seconds: 1, Vol: 10, Invol: 990}, price.Cost{PerSwitchNs: 1000}, nil)
	if !strings.Contains(inv.Lines[0], "99% involuntary → fewer runnable threads") {
		t.Errorf("involuntary advice: %s", inv.Lines[0])
	}
}

// The indirect curve takes CPU time where all three arms have it, and
// drops wall-time points whose round trip was preempted (its wall time
// holds other processes' turns).
func TestIndirectCurveCPUAndPreemption(t *testing.T) {
	run := curveRun()
	run.Arms[3].Switches.Involuntary = 300 // the 8 MiB round trip was preempted
	if c := price.Curve(run); c != "1MiB 1 µs" {
		t.Errorf("preempted point kept: %q", c)
	}
	// CPU time: (12−6−5) µs over 2 switches = 0.5 µs; (1305−300−5) µs over
	// the 300 preempting switches it also made = 1000/302 µs (each left the caches cold).
	for i, c := range []float64{5000, 12000, 6000, 1305000, 300000} {
		run.Arms[i].CPUNsPerOp = f(c)
	}
	c := price.IndirectCurve(run)
	if len(c) != 2 || c[0].Ns != 500 || math.Abs(c[1].Ns-1e6/302) > 1e-6 {
		t.Errorf("CPU-time curve %+v, want 500 and %v", c, 1e6/302)
	}
}
