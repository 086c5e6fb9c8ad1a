package vary

import (
	"math"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/compare"
	"github.com/ctxlab/ctxlab/internal/exp"
	_ "github.com/ctxlab/ctxlab/internal/experiments" // the refill curve is cachecost's declaration
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/wss"
)

// run is one finished run's totals; hw nil: the machine has no PMU.
type run struct {
	wall, cpu, sw, vol, invol, migr, faults, runq float64
	hw                                            *[4]float64 // instructions, cycles, LLC, dTLB
}

const noPMU = "not offered by this CPU or hypervisor (no such file or directory)"

func (r run) sample(point int) Sample {
	s := Sample{Point: point, Status: result.StatusOK, WallNs: int64(r.wall), HasRunq: true, RunqNs: uint64(r.runq),
		Rusage: Rusage{Vol: int64(r.vol), Invol: int64(r.invol), UserNs: int64(r.cpu)}}
	val := func(v float64) *uint64 { u := uint64(v); return &u }
	for _, ev := range measure.Events {
		rd := measure.TreeReading{Event: ev}
		switch ev.Name {
		case "task-clock":
			rd.Value = val(r.cpu)
		case "context-switches":
			rd.Value = val(r.sw)
		case "cpu-migrations":
			rd.Value = val(r.migr)
		case "page-faults":
			rd.Value = val(r.faults)
		case "instructions", "cycles", "LLC-load-misses", "dTLB-load-misses":
			if r.hw == nil {
				rd.Unsupported = noPMU
				break
			}
			i := map[string]int{"instructions": 0, "cycles": 1, "LLC-load-misses": 2, "dTLB-load-misses": 3}[ev.Name]
			rd.Value = val(r.hw[i])
		default:
			rd.Unsupported = noPMU
		}
		s.Counters = append(s.Counters, rd)
	}
	return s
}

// grid makes a two-value analysis from each value's runs.
func grid(t *testing.T, cost Cost, a, b []run) *Analysis {
	t.Helper()
	an := &Analysis{Command: []string{"prog", "{T}"}, Points: []Point{{Names: []string{"T"}, Values: []string{"2"}}, {Names: []string{"T"}, Values: []string{"32"}}}, Reps: len(a)}
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			an.Samples = append(an.Samples, a[i].sample(0))
		}
		if i < len(b) {
			an.Samples = append(an.Samples, b[i].sample(1))
		}
	}
	Analyze(an, cost, nil, 0)
	return an
}

var futexCost = Cost{OK: true, Cost: price.Cost{PerSwitchNs: 2000, Arm: "pingpong/thread/futex/same-cpu", RunID: "R1", RoundTripNs: 6000, Switches: 3}}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// The split's arithmetic: extra CPU = Δ median task-clock; direct =
// Δ median switches × the cost per switch; the rest is the difference;
// and the words say where the cost came from and, without counters, what
// the rest is set beside.
func TestSplitArithmetic(t *testing.T) {
	a := []run{
		{wall: 1.0e9, cpu: 2.0e9, sw: 1000, vol: 600, invol: 400, migr: 10, faults: 4000, runq: 1e6},
		{wall: 1.1e9, cpu: 2.1e9, sw: 1100, vol: 600, invol: 500, migr: 12, faults: 4000, runq: 2e6},
		{wall: 1.2e9, cpu: 2.2e9, sw: 1200, vol: 700, invol: 500, migr: 14, faults: 4000, runq: 3e6},
	}
	b := []run{
		{wall: 1.5e9, cpu: 2.9e9, sw: 51000, vol: 1000, invol: 50000, migr: 300, faults: 65000, runq: 9e9},
		{wall: 1.6e9, cpu: 3.0e9, sw: 51100, vol: 1100, invol: 50000, migr: 310, faults: 65000, runq: 9e9},
		{wall: 1.7e9, cpu: 3.1e9, sw: 51200, vol: 1200, invol: 50000, migr: 320, faults: 65000, runq: 9e9},
	}
	an := grid(t, futexCost, a, b)
	if len(an.Splits) != 1 {
		t.Fatalf("%d splits", len(an.Splits))
	}
	s := an.Splits[0]
	// medians: CPU 2.1 s → 3.0 s, switches 1100 → 51100
	if !near(s.ExtraCPU, 0.9e9) || !near(s.ExtraSwitches, 50000) {
		t.Fatalf("extra CPU %v, switches %v; want 0.9e9, 50000", s.ExtraCPU, s.ExtraSwitches)
	}
	if !near(s.DirectNs, 50000*2000) || !near(s.RestNs, 0.9e9-1e8) || !near(s.DirectShare, 1e8/0.9e9) {
		t.Fatalf("direct %v, rest %v, share %v", s.DirectNs, s.RestNs, s.DirectShare)
	}
	if !s.CPURow.Significant || s.CPURow.Method != compare.MethodRanges {
		t.Errorf("3 vs 3 apart: %+v", s.CPURow)
	}
	text := strings.Join(s.Lines(), "\n")
	for _, want := range []string{
		"split T=2 → T=32, per run: extra CPU time +900 ms (2.1 s → 3 s; significant: the ranges of 3 and 3 runs are apart, which happens 1 time in 10 by chance)",
		"+50k switches × 2 µs per switch = +100 ms, 11% of the extra",
		"switch cost: 2 µs (pingpong/thread/futex/same-cpu in run R1: median round trip 6 µs ÷ 3.00 switches)",
		"not in the switch path: +800 ms, 89% of the extra",
		"This machine has no hardware counters (instructions: unsupported: " + noPMU + ")",
		"it is the indirect cost (caches and TLB cold after other threads ran) or contention",
		"beside it: user time +900 ms, system time +0 ns (rusage), run-queue wait 2 ms → 9 s (sampled from /proc), migrations 12 → 310 and page faults 4000 → 65k",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("split lines lack %q:\n%s", want, text)
		}
	}
	// the stored arms carry it too, under names that follow the convention
	arms := an.Arms()
	if got := arms[1].Metrics["direct-ns/op"]; !near(got, 1e8) {
		t.Errorf("direct-ns/op %v", got)
	}
	if got := arms[1].Metrics["not-in-switch-path-ns/op"]; !near(got, 8e8) {
		t.Errorf("not-in-switch-path-ns/op %v", got)
	}
	for _, arm := range arms {
		for k := range arm.Metrics {
			if !exp.ValidMetricName(k) {
				t.Errorf("metric %q does not follow %s", k, exp.NameConvention)
			}
		}
		for k, vs := range arm.RepMetrics {
			if !exp.ValidMetricName(k) || len(vs) != len(arm.RepMeans) {
				t.Errorf("rep_metric %q: %d figures for %d runs", k, len(vs), len(arm.RepMeans))
			}
		}
	}
	run := &result.Run{Schema: 1, ID: "x1", Suite: result.SuiteDiagnose, Arms: arms}
	if err := run.Validate(); err != nil {
		t.Errorf("the stored run is invalid: %v", err)
	}
	if arms[0].Switches == nil || arms[0].Switches.Involuntary != 500 || arms[1].Switches.Involuntary != 50000 {
		t.Errorf("switches per op: %+v %+v", arms[0].Switches, arms[1].Switches)
	}
	for _, c := range arms[0].Counters {
		if c.Name == "instructions" && (c.PerOp != nil || c.Unsupported != noPMU) {
			t.Errorf("an unsupported counter is stored as %+v, never 0", c)
		}
	}
}

// With hardware counters (a fake PMU here), the rest is explained by
// cycles against instructions, IPC and misses per 1 000 instructions.
func TestSplitWithCounters(t *testing.T) {
	hwA, hwB := [4]float64{4e9, 2e9, 4e6, 1e6}, [4]float64{4.04e9, 4e9, 16e6, 4e6}
	a := []run{{wall: 1e9, cpu: 2e9, sw: 100, hw: &hwA}, {wall: 1e9, cpu: 2e9, sw: 100, hw: &hwA}, {wall: 1e9, cpu: 2e9, sw: 100, hw: &hwA}}
	b := []run{{wall: 2e9, cpu: 3e9, sw: 10100, hw: &hwB}, {wall: 2e9, cpu: 3e9, sw: 10100, hw: &hwB}, {wall: 2e9, cpu: 3e9, sw: 10100, hw: &hwB}}
	an := grid(t, futexCost, a, b)
	text := strings.Join(an.Reading(), "\n")
	for _, want := range []string{
		"+10k switches × 2 µs per switch = +20 ms, 2.0% of the extra",
		"not in the switch path: +980 ms, 98% of the extra: cycles +100.0% for instructions +1.0% (IPC 2.00 → 1.01); LLC misses per 1k instructions 1 → 3.96; dTLB misses per 1k instructions 0.25 → 0.99: more cycles for the same instructions",
		"work: the same work — instructions per run within 1.0% across the values",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("reading lacks %q:\n%s", want, text)
		}
	}
	if s := an.Values[1].Fig(KeyIPC); !s.OK() || !near(s.Median, 4.04/4) {
		t.Errorf("IPC %+v", s)
	}
	// instructions 10% apart: not the same work
	hwC := [4]float64{4.4e9, 4e9, 16e6, 4e6}
	c := []run{{wall: 2e9, cpu: 3e9, sw: 10100, hw: &hwC}, {wall: 2e9, cpu: 3e9, sw: 10100, hw: &hwC}, {wall: 2e9, cpu: 3e9, sw: 10100, hw: &hwC}}
	an = grid(t, futexCost, a, c)
	if w := an.WorkCheck(); !strings.Contains(w, "not the same work — instructions per run differ by 10.0% (T=2 4G, T=32 4.4G)") {
		t.Errorf("work check: %s", w)
	}
	if text := strings.Join(an.Reading(), "\n"); !strings.Contains(text, "the instructions differ too, so part of it is more work") {
		t.Errorf("reading:\n%s", text)
	}
}

// The edges: no cost per switch (said, never made up), no extra CPU, a
// priced direct part larger than the extra.
func TestSplitEdges(t *testing.T) {
	a := []run{{wall: 1e9, cpu: 2e9, sw: 100}, {wall: 1e9, cpu: 2e9, sw: 100}, {wall: 1e9, cpu: 2e9, sw: 100}}
	more := []run{{wall: 1e9, cpu: 2.01e9, sw: 100100}, {wall: 1e9, cpu: 2.01e9, sw: 100100}, {wall: 1e9, cpu: 2.01e9, sw: 100100}}
	less := []run{{wall: 1e9, cpu: 1.9e9, sw: 200}, {wall: 1e9, cpu: 1.9e9, sw: 200}, {wall: 1e9, cpu: 1.9e9, sw: 200}}

	text := strings.Join(grid(t, Cost{Why: "no stored run of this host has a thread round trip"}, a, more).Splits[0].Lines(), "\n")
	if !strings.Contains(text, "+100k switches, not priced: no stored run of this host has a thread round trip") || strings.Contains(text, "not in the switch path") {
		t.Errorf("unpriced:\n%s", text)
	}
	s := grid(t, futexCost, a, more).Splits[0]
	if !s.DirectOverflows || !strings.Contains(strings.Join(s.Lines(), "\n"), "more than the extra CPU time") || strings.Contains(strings.Join(s.Lines(), "\n"), "not in the switch path") {
		t.Errorf("overflow: %+v\n%s", s, strings.Join(s.Lines(), "\n"))
	}
	arms := grid(t, futexCost, a, more).Arms()
	if _, ok := arms[1].Metrics["not-in-switch-path-ns/op"]; ok {
		t.Error("an overflowing split stored a rest")
	}
	text = strings.Join(grid(t, futexCost, a, less).Splits[0].Lines(), "\n")
	if !strings.Contains(text, "extra CPU time −100 ms") || !strings.Contains(text, "no extra CPU time: nothing to split") {
		t.Errorf("less CPU:\n%s", text)
	}
}

// The answer: the best wall time, and whether each other value differs
// significantly by compare's rules — ranges at 3 a side, the U test at 6,
// nothing at 2; "no significant difference" is an answer too.
func TestDecision(t *testing.T) {
	w := func(ws ...float64) []run {
		var out []run
		for _, x := range ws {
			out = append(out, run{wall: x, cpu: x, sw: 10})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		a, b  []run
		want  []string
		sig   bool
		best  int
		nsigs int
	}{
		{"apart at 3", w(1e9, 1.1e9, 1.05e9), w(2e9, 2.1e9, 2.2e9), []string{
			"decision: T=2 has the best wall time, 1.05 s (1–1.1), and every other value is significantly slower:",
			"T=32: 2.1 s (2–2.2), 2.00× the wall time; significant: the ranges of 3 and 3 runs are apart, which happens 1 time in 10 by chance"}, true, 0, 1},
		{"overlap at 3", w(1e9, 1.5e9, 1.2e9), w(1.1e9, 1.3e9, 1.6e9), []string{
			"but no significant difference from any other value",
			"no significant difference: the ranges of 3 and 3 runs overlap"}, false, 0, 0},
		{"U test at 6", w(2e9, 2.1e9, 2.2e9, 2.05e9, 2.15e9, 2.12e9), w(1e9, 1.1e9, 1.05e9, 1.02e9, 1.07e9, 1.08e9), []string{
			"decision: T=32 has the best wall time",
			"T=2: 2.11 s (2–2.2), 1.99× the wall time; significant: p = 0.0022, Mann-Whitney U over 6 and 6 runs"}, true, 1, 1},
		{"too few at 2", w(1e9, 1.1e9), w(2e9, 2.1e9), []string{
			"but with so few runs no difference can be called significant (--reps 3 or more)",
			"too few runs to tell (2 and 2; 3 a side at least)"}, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			an := grid(t, futexCost, tc.a, tc.b)
			d := an.Decision
			if d.Best != tc.best || d.Significant() != tc.sig {
				t.Errorf("best %d significant %v; want %d %v", d.Best, d.Significant(), tc.best, tc.sig)
			}
			text := strings.Join(d.Lines(an.Values), "\n")
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("decision lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

// With units of work the figures are per unit and the answer is the best
// throughput.
func TestPerUnit(t *testing.T) {
	an := &Analysis{Points: []Point{{Names: []string{"T"}, Values: []string{"1"}}, {Names: []string{"T"}, Values: []string{"2"}}}, Reps: 3}
	for i := range 3 {
		a := run{wall: 1e9, cpu: 1e9, sw: 10}.sample(0)
		a.Work = 1e6
		b := run{wall: 1e9, cpu: 2e9, sw: 10}.sample(1)
		b.Work = 4e6 // four times the work in the same time
		_ = i
		an.Samples = append(an.Samples, a, b)
	}
	Analyze(an, futexCost, nil, 0)
	if !an.PerUnit || an.Values[0].Wall.Median != 1000 || an.Values[1].Wall.Median != 250 {
		t.Fatalf("per unit %v, walls %v %v", an.PerUnit, an.Values[0].Wall, an.Values[1].Wall)
	}
	if c := an.Values[1].Fig(KeyCPU); c.Median != 500 {
		t.Errorf("CPU per unit %v", c)
	}
	text := strings.Join(an.Reading(), "\n")
	for _, want := range []string{"decision: T=2 has the best throughput, 4M/s units", "split T=1 → T=2, per unit: extra CPU time −500 ns"} {
		if !strings.Contains(text, want) {
			t.Errorf("reading lacks %q:\n%s", want, text)
		}
	}
	if an.Arms()[1].Op != "unit of work" || an.Arms()[1].Unit != "ns/unit" || an.Arms()[1].Ops != 4000000 {
		t.Errorf("arm: %+v", an.Arms()[1])
	}
}

// A value whose command failed has no figures and is not in the split or
// the answer; the values before and after it are.
func TestFailedValue(t *testing.T) {
	an := &Analysis{Points: []Point{{Names: []string{"V"}, Values: []string{"a"}}, {Names: []string{"V"}, Values: []string{"bad"}}, {Names: []string{"V"}, Values: []string{"c"}}}, Reps: 2}
	for i := range 2 {
		an.Samples = append(an.Samples, run{wall: 1e9, cpu: 1e9, sw: 10}.sample(0), run{wall: 2e9, cpu: 2e9, sw: 10}.sample(2))
		if i == 0 {
			an.Samples = append(an.Samples, Sample{Point: 1, Status: result.StatusFailed, Reason: "exit status 3: no such mode", ExitStatus: 3})
		}
	}
	Analyze(an, futexCost, nil, 0)
	v := an.Values[1]
	if v.OK() || v.Status != result.StatusFailed || v.Reason != "exit status 3: no such mode (1 of 1 runs)" {
		t.Errorf("failed value: %s %q", v.Status, v.Reason)
	}
	if len(an.Splits) != 1 || an.Splits[0].Other != "V=c" || an.Decision.Best != 0 || len(an.Decision.Rows) != 1 {
		t.Errorf("splits %+v, decision %+v", an.Splits, an.Decision)
	}
	var b strings.Builder
	if err := an.Table(&b, 120); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "V=bad: failed: exit status 3: no such mode (1 of 1 runs); its figures are not used") {
		t.Errorf("table:\n%s", b.String())
	}
	if a := an.Arms()[1]; a.Status != result.StatusFailed || len(a.RepMeans) != 0 {
		t.Errorf("failed arm: %+v", a)
	}
}

// A figure one run has and another lacks is no figure: never a mix.
func TestStatRefusesMixedRuns(t *testing.T) {
	hw := [4]float64{1, 1, 1, 1}
	with, without := run{wall: 1, cpu: 1, hw: &hw}.sample(0), run{wall: 1, cpu: 1}.sample(0)
	f, _ := FigureByKey(KeyInstructions)
	if st := statOf(f, []Sample{with, without}, false); st.OK() || st.Unsupported != noPMU {
		t.Errorf("mixed: %+v", st)
	}
	rus := without
	for i := range rus.Counters {
		if rus.Counters[i].Event.Name == "task-clock" {
			rus.Counters[i].Value, rus.Counters[i].Unsupported = nil, "not permitted"
		}
	}
	c, _ := FigureByKey(KeyCPU)
	if st := statOf(c, []Sample{with, rus}, false); st.OK() || !strings.Contains(st.Unsupported, "from task-clock in one run and rusage in another") {
		t.Errorf("mixed sources: %+v", st)
	}
}

// The indirect estimate faces the rest: each value's switches × the
// refill cost at its working set per thread, read off the curve (1 µs at
// 1 MiB, 3 µs at 8 MiB), and the share of the rest their difference
// explains; without the working set, or with --wss off, it says so or
// nothing.
func TestSplitIndirectEstimate(t *testing.T) {
	mkCurve := func(mode, w, wb string, median float64) result.Arm {
		sw := 2.0
		if mode == "per-switch-solo" {
			sw = 0
		}
		return result.Arm{Name: "cachecost/" + mode + "/W=" + w, Experiment: "cachecost", Status: result.StatusOK, Median: median,
			Params: map[string]string{"mode": mode, "W": w, "W_bytes": wb}, Switches: &result.Switches{Voluntary: sw}}
	}
	curve := &result.Run{ID: "C1", Arms: []result.Arm{mkCurve("per-switch", "0", "0", 6000),
		mkCurve("per-switch", "1MiB", "1048576", 16000), mkCurve("per-switch-solo", "1MiB", "1048576", 8000),
		mkCurve("per-switch", "8MiB", "8388608", 60000), mkCurve("per-switch-solo", "8MiB", "8388608", 48000)}}
	cost := futexCost
	cost.Curve = curve
	a := []run{{wall: 1e9, cpu: 2e9, sw: 1000, vol: 600, invol: 400}}
	b := []run{{wall: 2e9, cpu: 3e9, sw: 101000, vol: 600, invol: 100400}}
	an := grid(t, cost, a, b)
	withWSS := func(perThread int64) *wss.Reading {
		return &wss.Reading{Kind: "wss", Intervals: 3, MedianBytes: 2 * perThread, BusyThreads: 2, Alike: true, PerThreadBytes: perThread}
	}
	for i := range an.Samples {
		an.Samples[i].WSS = withWSS(1 << 20)
		if an.Samples[i].Point == 1 {
			an.Samples[i].WSS = withWSS(8 << 20)
		}
	}
	Analyze(an, cost, nil, 0)
	s := an.Splits[0]
	// A: 1000 × 1 µs = 1 ms; B: 101000 × 3 µs = 303 ms; Δ 302 ms. Extra CPU 1 s,
	// direct 100k × 2 µs = 200 ms, rest 800 ms: 38% of it.
	if e := s.Indirect; !e.OK || !near(e.A, 1e6) || !near(e.B, 303e6) || !near(e.Delta, 302e6) {
		t.Fatalf("estimate %+v", e)
	}
	text := strings.Join(s.Lines(), "\n")
	for _, w := range []string{"indirect estimate (from the working set and this host's refill curve): T=2 1000 switches × 1 µs at 1 MiB per thread = 1 ms; T=32 101k × 3 µs at 8 MiB = 303 ms: +302 ms, 38% of the rest (+800 ms)",
		"refill cost from cachecost/per-switch/pingpong/W=1MiB"} {
		if !strings.Contains(strings.ReplaceAll(text, "pingpong/", ""), strings.ReplaceAll(w, "pingpong/", "")) {
			t.Errorf("split lacks %q:\n%s", w, text)
		}
	}
	arms := an.Arms()
	if v, ok := arms[1].Metrics["extra-indirect-estimate-ns/op"]; !ok || !near(v, 302e6) {
		t.Errorf("stored arm's extra indirect estimate %v %v", v, ok)
	}
	if v, ok := arms[1].Metrics[KeyWSSThread]; !ok || v != 8<<20 {
		t.Errorf("stored arm's working set per thread %v %v", v, ok)
	}
	// An estimate above a value's CPU time is no figure there.
	an.Samples[1].WSS = withWSS(16 << 20) // 6 µs a switch × 101k = 606 ms … × 10 = more than 3 s
	for i := range an.Samples {
		if an.Samples[i].Point == 1 {
			for j, c := range an.Samples[i].Counters {
				if c.Event.Name == "context-switches" {
					u := uint64(1010000)
					an.Samples[i].Counters[j].Value = &u
				}
			}
		}
	}
	Analyze(an, cost, nil, 0)
	if l := strings.Join(an.Splits[0].Lines(), "\n"); !strings.Contains(l, "more than all the CPU time of T=32 (3 s of CPU time)") {
		t.Errorf("an estimate above the CPU time:\n%s", l)
	}
	// One value without a working set: said; --wss off: nothing.
	an.Samples[0].WSS = &wss.Reading{Kind: "wss", Unsupported: "no interval was read"}
	Analyze(an, cost, nil, 0)
	if l := strings.Join(an.Splits[0].Lines(), "\n"); !strings.Contains(l, "indirect estimate (from the working set): not made — working set at T=2: unsupported: no interval was read") {
		t.Errorf("no working set at T=2:\n%s", l)
	}
	for i := range an.Samples {
		an.Samples[i].WSS = nil
	}
	Analyze(an, cost, nil, 0)
	if l := strings.Join(an.Splits[0].Lines(), "\n"); strings.Contains(l, "indirect estimate") {
		t.Errorf("--wss off still estimates:\n%s", l)
	}
}
