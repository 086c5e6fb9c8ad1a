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

// The one rule: the first declared arm on one CPU, its median round trip
// ÷ its measured switches, a quiet arm before a noisy one; never a round
// trip across CPUs or unpinned (it waits for a CPU to wake), whatever CPU
// time it recorded.
func TestDirectCost(t *testing.T) {
	futex := arm("pingpong/thread/futex/same-cpu", "same-cpu", 6000, 3)
	pipe := arm("pingpong/thread/pipe/same-cpu", "same-cpu", 9000, 2)
	unp := arm("pingpong/thread/futex/unpinned", "unpinned", 20000, 2)
	unp.CPUNsPerOp = f(8000)
	run := &result.Run{ID: "r", Arms: []result.Arm{unp, pipe, futex}}
	c, ok := price.DirectCost(run)
	if !ok || c.Arm != futex.Name || c.PerSwitchNs != 2000 || c.RoundTripNs != 6000 || c.Switches != 3 {
		t.Errorf("the futex on one CPU, its median ÷ its 3 switches: %+v %v", c, ok)
	}
	if want := "2 µs per switch (pingpong/thread/futex/same-cpu in run r: median round trip 6 µs ÷ 3.00 switches)"; c.String() != want {
		t.Errorf("String() = %q, want %q", c.String(), want)
	}
	run.Arms[2].Noise.Noisy = true
	if c, _ = price.DirectCost(run); c.Arm != pipe.Name || c.PerSwitchNs != 4500 || c.Noisy {
		t.Errorf("a quiet pipe before a noisy futex: %+v", c)
	}
	run.Arms[1].Noise.Noisy = true
	if c, _ = price.DirectCost(run); c.Arm != futex.Name || !c.Noisy || !strings.HasSuffix(c.String(), ", noisy)") {
		t.Errorf("only noisy ones: the first, said noisy: %+v %q", c, c.String())
	}
	for _, a := range []result.Arm{unp, arm("pingpong/thread/futex/cross-cpu", "cross-cpu", 2e5, 2), arm("pingpong/thread/futex/same-cpu", "same-cpu", 6000, 0.4)} {
		if c, ok := price.DirectCost(&result.Run{Arms: []result.Arm{a}}); ok {
			t.Errorf("%s (%.1f switches) priced a switch: %+v", a.Name, a.Switches.Total(), c)
		}
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
	p := price.Of(s, price.Cost{PerSwitchNs: 3000, Arm: "pingpong/thread/futex/same-cpu", RunID: "r", RoundTripNs: 1, Switches: 1}, curveRun())
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

// The case: 202k switches/s at a stored 12.6 µs per switch would
// be 255% of a core, but the process used 47%: the price is bounded by
// the CPU it used, and says the stored figure does not fit.
func TestOfBoundedByTheCPUUsed(t *testing.T) {
	s := price.Seen{Seconds: 1, Vol: 121200, Invol: 80800, CPUNs: 471e6, HasCPU: true}
	p := price.Of(s, price.Cost{PerSwitchNs: 12600, Arm: "pingpong/thread/futex/unpinned", RunID: "r", RoundTripNs: 1, Switches: 1}, nil)
	if !p.Bounded || math.Abs(p.Share-0.471) > 1e-9 || math.Abs(p.PerSwitch-471e6/202000) > 1e-6 || p.StoredPerSwitch != 12600 {
		t.Fatalf("bounded price = %+v", p)
	}
	text := strings.Join(p.Lines, "\n")
	for _, want := range []string{"202k switches/s × at most 2.33 µs per switch ≤ 47% of a core",
		"the stored 12.6 µs per switch × 202k/s would be 255% of a core, more than the 47% this process used: the stored figure does not fit this process; at most 2.33 µs per switch here"} {
		if !strings.Contains(text, want) {
			t.Errorf("price lacks %q:\n%s", want, text)
		}
	}
	// A stored cost that fits stays, and the CPU used is said beside it.
	s.CPUNs = 900e6
	p = price.Of(s, price.Cost{PerSwitchNs: 1200, Arm: "a", RunID: "r", RoundTripNs: 1, Switches: 1}, nil)
	if p.Bounded || p.PerSwitch != 1200 || math.Abs(p.Share-0.2424) > 1e-9 || !strings.Contains(strings.Join(p.Lines, "\n"), "this process used 90% of a core in all") {
		t.Errorf("a fitting cost: %+v", p)
	}
	// Unknown CPU: not bounded, and said.
	s.HasCPU = false
	p = price.Of(s, price.Cost{PerSwitchNs: 12600}, nil)
	if p.Bounded || !strings.Contains(strings.Join(p.Lines, "\n"), "CPU time is unavailable") {
		t.Errorf("unknown CPU: %+v", p)
	}
}

// A per-switch curve that reads no cost above noise is no range of zeros.
func TestIndirectOfNothingIsNotAZeroRange(t *testing.T) {
	run := curveRun()
	run.Arms[1].Median, run.Arms[3].Median = 10000, 40000 // (10-8-6)/2 < 0, (40-48-6)/2 < 0
	p := price.Of(price.Seen{Seconds: 1, Vol: 1000, RSSBytes: 4 << 20}, price.Cost{PerSwitchNs: 1000}, run)
	text := strings.Join(p.Lines, "\n")
	if strings.Contains(text, "0 ns per switch") || strings.Contains(text, "0%–0%") || p.IndirectLo != nil || p.IndirectHi != nil {
		t.Errorf("a zero indirect range was priced:\n%s", text)
	}
	if !strings.Contains(text, "read no cost above noise") {
		t.Errorf("the indirect line does not say why it is not priced:\n%s", text)
	}
}

// The indirect range fits in what the process's CPU leaves of direct
// switching: a low end beyond it is no figure for this process.
func TestIndirectWithinTheCPUUsed(t *testing.T) {
	// 50k switches/s: direct 3 µs = 15%, indirect 1–3 µs = 5%–15%.
	s := price.Seen{Seconds: 2, Vol: 100000, RSSBytes: 4 << 20, CPUNs: 2 * 18e7, HasCPU: true} // 18% of a core
	p := price.Of(s, price.Cost{PerSwitchNs: 3000}, curveRun())
	text := strings.Join(p.Lines, "\n")
	if p.IndirectLo != nil || !strings.Contains(text, "more than the 3.0% left of the CPU this process used") {
		t.Errorf("an indirect low end beyond the CPU left was priced:\n%s", text)
	}
	s.CPUNs = 2 * 25e7 // 25%: 10% left, the low end fits, the high end does not
	p = price.Of(s, price.Cost{PerSwitchNs: 3000}, curveRun())
	if text := strings.Join(p.Lines, "\n"); p.IndirectLo == nil || p.IndirectHi != nil || !strings.Contains(text, "5.0% of a core more, or more (the upper end would exceed the CPU this process used") {
		t.Errorf("indirect within 10%% left:\n%s", text)
	}
}

// Children that switch are pointed at, with the busiest's PID.
func TestOfPointsAtChildren(t *testing.T) {
	p := price.Of(price.Seen{Seconds: 2, Vol: 4, ChildProcs: 2, ChildVol: 300000, ChildInvol: 100000, BusiestChild: 4321}, price.Cost{PerSwitchNs: 1000}, nil)
	if p.ChildRate != 200000 || !strings.Contains(strings.Join(p.Lines, "\n"), "its 2 child process(es) switched 200k/s more, not priced here: ctxlab watch 4321") {
		t.Errorf("children: %+v", p)
	}
}

// One cost per switch from the history: DirectCost of the newest run
// with a quiet figure, else of the newest noisy one; only this host's
// runs; no further run read once a quiet figure is found.
func TestFromHistory(t *testing.T) {
	mk := func(id, host string, arms ...result.Arm) *result.Run {
		return &result.Run{ID: id, Env: result.Env{Hostname: host}, Arms: arms}
	}
	noisy := func(a result.Arm) result.Arm { a.Noise.Noisy = true; return a }
	same := func(median float64) result.Arm { return arm("pingpong/thread/futex/same-cpu", "same-cpu", median, 2) }
	pick := func(runs ...*result.Run) (price.Cost, int) {
		read := 0
		c, ok := price.FromHistory(func(yield func(*result.Run) bool) {
			for _, r := range runs {
				read++
				if !yield(r) {
					return
				}
			}
		}, "here")
		if !ok {
			t.Fatalf("no cost from %d runs", len(runs))
		}
		return c, read
	}
	// The newest run's figure is noisy, an older one's quiet: the quiet one.
	c, _ := pick(mk("new", "here", noisy(same(25200))), mk("old", "here", same(5320)))
	if c.RunID != "old" || c.Noisy || c.PerSwitchNs != 2660 {
		t.Errorf("quiet over newest: %+v", c)
	}
	// Only noisy figures: the newest, marked noisy, and the price says so.
	c, _ = pick(mk("new", "here", noisy(same(25200))), mk("old", "here", noisy(same(9000))))
	if c.RunID != "new" || !c.Noisy {
		t.Errorf("noisy only: %+v", c)
	}
	if text := strings.Join(price.Of(price.Seen{Seconds: 1, Vol: 10}, c, nil).Lines, "\n"); !strings.Contains(text, "noisy); no stored run has a quiet one") {
		t.Errorf("a noisy cost not said:\n%s", text)
	}
	// Another host's run is skipped, however new and quiet.
	c, _ = pick(mk("laptop", "elsewhere", same(1000)), mk("mine", "here", same(4000)))
	if c.RunID != "mine" {
		t.Errorf("another host's cost: %+v", c)
	}
	// What the history gives is DirectCost of the run it comes from.
	old := mk("old", "here", same(6000))
	c, read := pick(mk("new", "here"), old, mk("older", "here", same(1000)))
	if d, _ := price.DirectCost(old); c != d || read != 2 {
		t.Errorf("history %+v after %d runs, DirectCost of its run %+v", c, read, d)
	}
}
