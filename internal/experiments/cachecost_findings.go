package experiments

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What cachecost reads from its arms: the sweep's pairs of T, the
// per-switch curve, the checks, findings and its part of the verdict.

// sweepPair is a (pattern, W) with its T = cores and T ≫ cores arms.
type sweepPair struct {
	pattern   string
	w         int64
	few, many *result.Arm
	rt        *result.Arm // T ≫ cores at GOMAXPROCS = cores
}

func sweepPairs(arms []result.Arm) []sweepPair {
	idx := map[string]*sweepPair{}
	var keys []string
	for i := range arms {
		a := &arms[i]
		if a.Params["mode"] != "sweep" || a.Status != result.StatusOK {
			continue
		}
		w, _ := strconv.ParseInt(a.Params["W_bytes"], 10, 64)
		k := a.Params["pattern"] + "/" + a.Params["W_bytes"]
		sp := idx[k]
		if sp == nil {
			sp = &sweepPair{pattern: a.Params["pattern"], w: w}
			idx[k] = sp
			keys = append(keys, k)
		}
		switch {
		case a.Params["multiplexer"] == "go-runtime":
			sp.rt = a
		case a.Params["T"] == a.Params["cores"]:
			sp.few = a
		default:
			sp.many = a
		}
	}
	var out []sweepPair
	for _, k := range keys {
		out = append(out, *idx[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].pattern != out[j].pattern {
			return out[i].pattern < out[j].pattern
		}
		return out[i].w < out[j].w
	})
	return out
}

// indirectCurve is the per-switch indirect cost at each W > 0 where the
// pingpong, solo and W=0 arms were all measured: (RT(W) − solo(W) − RT(0)) / 2,
// and the W=0 round trip it starts from.
type indirectPoint struct {
	w        int64
	ns       float64
	arms     []string
	rt, solo float64
	switches float64 // measured switches per round trip at W
}

func indirectCurve(arms []result.Arm) (points []indirectPoint, zero result.Arm, ok bool) {
	rt := map[int64]result.Arm{}
	so := map[int64]result.Arm{}
	for _, a := range arms {
		if a.Status != result.StatusOK {
			continue
		}
		w, _ := strconv.ParseInt(a.Params["W_bytes"], 10, 64)
		switch a.Params["mode"] {
		case "per-switch":
			rt[w] = a
		case "per-switch-solo":
			so[w] = a
		}
	}
	zero, ok = rt[0]
	if !ok {
		return nil, zero, false
	}
	var ws []int64
	for w := range rt {
		if _, ok := so[w]; ok && w > 0 {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	for _, w := range ws {
		pt := indirectPoint{w: w, ns: (rt[w].Median - so[w].Median - zero.Median) / 2,
			arms: []string{rt[w].Name, so[w].Name, zero.Name}, rt: rt[w].Median, solo: so[w].Median}
		if sw := rt[w].Switches; sw != nil {
			pt.switches = sw.Total()
		}
		points = append(points, pt)
	}
	return points, zero, true
}

const (
	minIndirectW = 8 * result.MiB // the check's "W ≥ 8 MiB random"
	// maxSharedWait: run-queue wait per on-CPU time at T = cores above
	// which the CPUs were not the workers' own.
	maxSharedWait = 0.25
)

func cachecostChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for _, sp := range sweepPairs(arms) {
		if sp.pattern != "random" || sp.w < minIndirectW || sp.few == nil || sp.many == nil {
			continue
		}
		// "Measurably": every repetition at T ≫ cores is slower than every
		// repetition at T = cores.
		c := result.Check{
			Name:  fmt.Sprintf("at W ≥ %s random, T ≫ cores is slower per element than T = cores (min of one > max of the other)", result.SizeName(minIndirectW)),
			Holds: sp.many.Min > sp.few.Max,
			Detail: fmt.Sprintf("W=%s: T=%s %s (%s–%s) vs T=%s %s (%s–%s), %+.0f%%", result.SizeName(sp.w),
				sp.many.Params["T"], result.FormatNs(sp.many.Median), result.FormatNs(sp.many.Min), result.FormatNs(sp.many.Max),
				sp.few.Params["T"], result.FormatNs(sp.few.Median), result.FormatNs(sp.few.Min), result.FormatNs(sp.few.Max),
				100*(sp.many.Median/sp.few.Median-1)),
			Arms: []string{sp.many.Name, sp.few.Name},
		}
		// The model assumes the T = cores workers own the CPUs. When other
		// processes held them (run-queue wait above a quarter of on-CPU
		// time), wall time compares shares of the CPUs, not caches: the
		// check cannot be evaluated, and says why.
		if rq, cpu := sp.few.Metrics["runq-wait-ns/element"], sp.few.Metrics["oncpu-ns/element"]; cpu > 0 && rq > maxSharedWait*cpu {
			c.Holds, c.Skipped = false, true
			c.Detail += fmt.Sprintf("; not evaluated: at T=%s the workers waited %s per element for a CPU against %s on one, so other processes held these CPUs (on-CPU per element: %s at T=%s vs %s)",
				sp.few.Params["T"], result.FormatNs(rq), result.FormatNs(cpu), pct(sp.many.Metrics["oncpu-ns/element"], cpu), sp.many.Params["T"], sp.few.Params["T"])
		}
		out = append(out, c)
	}
	if pts, _, ok := indirectCurve(arms); ok && len(pts) >= 2 {
		first, last := pts[0], pts[len(pts)-1]
		var curve []string
		var names []string
		for _, p := range pts {
			curve = append(curve, fmt.Sprintf("%s %s", result.SizeName(p.w), result.FormatNs(p.ns)))
			names = append(names, p.arms[0], p.arms[1])
		}
		out = append(out, result.Check{
			Name:   "the per-switch indirect cost grows with W (largest W > smallest W)",
			Holds:  last.ns > first.ns && last.ns > 0,
			Detail: "indirect cost per switch: " + strings.Join(curve, " · "),
			Arms:   append(names, first.arms[2]),
		})
	}
	return out
}

func cachecostFindings(arms []result.Arm) []string {
	var out []string
	for _, sp := range sweepPairs(arms) {
		if sp.few == nil || sp.many == nil {
			continue
		}
		f, m := sp.few, sp.many
		line := fmt.Sprintf("sweep %s W=%s: T=%s vs T=%s wall %s per element (%s → %s)", sp.pattern, result.SizeName(sp.w),
			m.Params["T"], f.Params["T"], pct(m.Median, f.Median), result.FormatNs(f.Median), result.FormatNs(m.Median))
		if fc, mc := f.Metrics["oncpu-ns/element"], m.Metrics["oncpu-ns/element"]; fc > 0 && mc > 0 {
			line += fmt.Sprintf(", on-CPU time per element %s (how much slower it ran on a CPU: the indirect cost)", pct(mc, fc))
		}
		if rq, ok := m.Metrics["runq-wait-ns/element"]; ok {
			line += fmt.Sprintf(", run-queue wait %s per element (waited for a CPU)", result.FormatNs(rq))
		}
		if sw := m.Metrics["involuntary-switches/ms"] + m.Metrics["voluntary-switches/ms"]; sw > 0 {
			line += fmt.Sprintf(", %.1f switches/ms", sw)
		}
		if rq := f.Metrics["runq-wait-ns/element"]; rq > 0.1*f.Median {
			line += fmt.Sprintf("; other processes shared these CPUs (T=%s waited %s per element too): on-CPU is the cleaner figure", f.Params["T"], result.FormatNs(rq))
		}
		out = append(out, line)
		if rt := sp.rt; rt != nil {
			l := fmt.Sprintf("sweep %s W=%s: Go runtime multiplexing (GOMAXPROCS=%d) vs the kernel's: wall %s", sp.pattern, result.SizeName(sp.w), rt.GOMAXPROCS, pct(rt.Median, m.Median))
			if a, b := rt.Metrics["oncpu-ns/element"], m.Metrics["oncpu-ns/element"]; a > 0 && b > 0 {
				l += ", on-CPU " + pct(a, b)
			}
			out = append(out, l)
		}
	}
	if pts, zero, ok := indirectCurve(arms); ok {
		var curve []string
		for _, p := range pts {
			curve = append(curve, fmt.Sprintf("W=%s %s", result.SizeName(p.w), result.FormatNs(p.ns)))
		}
		// The W=0 round trip as it is: the cost of one switch is pingpong's
		// (price.DirectCost), which findings, seeing only these arms, cannot give.
		line := fmt.Sprintf("per-switch: round trip without data (W=0) %s", result.FormatNs(zero.Median))
		if zero.Switches != nil {
			line += fmt.Sprintf(", %.2f switches", zero.Switches.Total())
		}
		line += "; indirect cost per switch " + strings.Join(curve, " · ")
		if n := len(pts); n > 0 && pts[n-1].switches > 3 {
			line += fmt.Sprintf("; at W=%s a round trip took %.0f switches, not 2: other processes preempted the workers mid-traversal, and their cache damage counts in", result.SizeName(pts[n-1].w), pts[n-1].switches)
		}
		out = append(out, line)
	}
	var fast, slow *result.Arm
	for i := range arms {
		a := &arms[i]
		if a.Params["mode"] == "slice" && a.Status == result.StatusOK {
			if a.Params["block_every"] == sliceEvery[0].name {
				fast = a
			} else {
				slow = a
			}
		}
	}
	if fast != nil && slow != nil {
		fc, sc := fast.Metrics["worker-oncpu-ns/element"], slow.Metrics["worker-oncpu-ns/element"]
		if fc > 0 && sc > 0 {
			out = append(out, fmt.Sprintf("slice: blocking every %s, the fixed work ran at %.0f M elements/s on-CPU vs %.0f M at every %s (%s per element); wall %s",
				fast.Params["block_every"], 1e3/fc, 1e3/sc, slow.Params["block_every"], pct(fc, sc), pct(fast.Median, slow.Median)))
		}
	}
	return out
}

// cachecostMetrics declares the figures cachecost arms add beside the median.
var cachecostMetrics = []exp.Metric{
	{Name: "oncpu-ns/element", Unit: "ns", Better: exp.LowerIsBetter, Doc: "on-CPU time per element, all workers (the runner's schedstat reading of their threads): the indirect cost shows here"},
	{Name: "runq-wait-ns/element", Unit: "ns", Better: exp.LowerIsBetter, Doc: "run-queue wait per element (schedstat): time runnable but not running"},
	{Name: "voluntary-switches/ms", Unit: "switches", Better: exp.NotRanked, Doc: "voluntary OS switches per ms of wall time"},
	{Name: "involuntary-switches/ms", Unit: "switches", Better: exp.NotRanked, Doc: "involuntary OS switches (preemptions) per ms of wall time"},
	{Name: "migrations/ms", Unit: "migrations", Better: exp.NotRanked, Doc: "CPU migrations per ms of wall time"},
	{Name: "worker-oncpu-ns/element", Unit: "ns", Better: exp.LowerIsBetter, Doc: "slice: the blocking worker's own on-CPU time per element"},
	{Name: "turn-elements", Unit: "elements", Better: exp.NotRanked, Doc: "slice: elements each side handles per turn"},
}

// cachecostRefs: SPEC §8's published indirect cost, about the experiment as a whole.
var cachecostRefs = []exp.Reference{
	{Text: "8 vs 128 threads, 4 MB working sets, 8 cores: context switches 2 410 → 248 300, migrations 180 → 41 700, instructions ≈ equal, cycles +118%, IPC 2.40 → 1.10, LLC misses ×3.3, dTLB misses ×3.9, task-clock +29%; direct switch cost ≈ 1 µs"},
}

// cachecostCurve is the per-switch indirect cost at each W > 0 the arms
// measured, by W: what a round trip over two W-byte sets costs beyond the
// same traversals without a switch (solo) and beyond a round trip without
// data (W=0), per switch. It takes CPU time per op where all three arms
// recorded it — (RT(W) − solo(W) − RT(0)) ÷ the switches RT(W) made
// beyond solo(W)'s, which counts preemptions by other processes too (each
// one also leaves the caches cold); from wall time it keeps only points
// whose round trip switched about twice, ÷ those switches (a preempted
// op's wall time holds other processes' turns).
func cachecostCurve(arms []result.Arm) []exp.CostPoint {
	rt, solo := map[string]result.Arm{}, map[string]result.Arm{}
	var zero *result.Arm
	for i, a := range arms {
		if a.Experiment != "cachecost" || a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		switch a.Params["mode"] {
		case "per-switch":
			if a.Params["W_bytes"] == "0" {
				zero = &arms[i]
			} else {
				rt[a.Params["W_bytes"]] = a
			}
		case "per-switch-solo":
			solo[a.Params["W_bytes"]] = a
		}
	}
	if zero == nil {
		return nil
	}
	cpuOnly := func(a result.Arm) (float64, bool) {
		c, _, ok := price.CPUPerOp(a)
		return c, ok
	}
	z, zok := cpuOnly(*zero)
	var out []exp.CostPoint
	for wb, r := range rt {
		s, ok := solo[wb]
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(wb, 10, 64)
		rc, rok := cpuOnly(r)
		sc, sok := cpuOnly(s)
		switch {
		case zok && rok && sok && r.Switches != nil:
			extra := r.Switches.Total()
			if s.Switches != nil {
				extra -= s.Switches.Total()
			}
			if extra >= 1 {
				out = append(out, exp.CostPoint{Bytes: n, Label: r.Params["W"], Ns: (rc - sc - z) / extra, Arm: r.Name})
			}
		case r.Switches != nil && r.Switches.Total() >= 1.5 && r.Switches.Total() <= 2.5 && (s.Switches == nil || s.Switches.Total() < 0.5):
			// Wall time only from round trips that switched about twice
			// (not preempted), divided by the switches they made.
			out = append(out, exp.CostPoint{Bytes: n, Label: r.Params["W"], Ns: (r.Median - s.Median - zero.Median) / r.Switches.Total(), Arm: r.Name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Bytes < out[j].Bytes })
	return out
}

// cachecostVerdict: the per-switch curve, and wall time per element
// with few and many threads at the largest working set swept (a line of
// figures, "too few ops" in place of an arm's whose repetitions held too
// few), their on-CPU time in a note: what the indirect cost is.
func cachecostVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	var lines, notes []string
	// per-switch curve: (RT(W) − solo(W) − RT(0)) / switches at each W.
	var parts []string
	for _, p := range cachecostCurve(v.Run.Arms) {
		parts = append(parts, p.Label+" "+result.FormatNs(p.Ns))
	}
	if len(parts) > 0 {
		lines = append(lines, "  per switch, on top of the direct cost, by working set touched: "+strings.Join(parts, " · "))
	}
	if l, n, ok := sweepVerdict(v); ok {
		lines, notes = append(lines, l), append(notes, n...)
	} else if len(lines) == 0 {
		lines = append(lines, "  "+unmeasured(v, "cachecost", "run cachecost"))
	}
	return []exp.VerdictSection{{Block: exp.BlockIndirect, Heading: "the indirect cost: cold caches after other workers ran, time per element visited",
		Lines: lines, Notes: notes,
		Foot: []string{"  published: 4 MB sets, 128 vs 8 threads on 8 cores: cycles +118% for ≈ equal instructions, IPC 2.40 → 1.10, LLC misses ×3.3, task-clock +29%; direct switch ≈ 1 µs"}}}
}

// sweepVerdict is the verdict's line of wall time per element with the
// fewest and the most threads at the largest working set swept, and the
// note on their on-CPU time; ok is false when no working set has both.
func sweepVerdict(v *exp.VerdictRun) (line string, notes []string, ok bool) {
	isSweep := func(a result.Arm) bool { return a.Params["mode"] == "sweep" && a.Params["compare"] != "" }
	groups := map[string][]result.Arm{}
	var key string
	var keyW int64 = -1
	for _, a := range append(v.Where("cachecost", isSweep), v.WhereTooFew("cachecost", isSweep)...) {
		k := a.Params["compare"]
		groups[k] = append(groups[k], a)
		if wb, _ := strconv.ParseInt(a.Params["W_bytes"], 10, 64); wb > keyW {
			key, keyW = k, wb
		}
	}
	g := groups[key]
	if len(g) < 2 {
		return "", nil, false
	}
	threads := func(a result.Arm) int { n, _ := strconv.Atoi(a.Params["T"]); return n }
	sort.Slice(g, func(i, j int) bool { return threads(g[i]) < threads(g[j]) })
	lo, hi := g[0], g[len(g)-1]
	line = fmt.Sprintf("  %s each, %s → %s threads: wall %s → %s", result.FormatBytes(float64(keyW)),
		lo.Params["T"], hi.Params["T"], wallFigure(lo), wallFigure(hi))
	if !lo.HasFigure() || !hi.HasFigure() {
		return line, nil, true
	}
	if c, ok := v.Comparison(hi.Name, lo.Name); ok {
		notes = append(notes, fmt.Sprintf("    side by side, %s → %s threads: %s per element", lo.Params["T"], hi.Params["T"], exp.PairWords(c, "slower", "faster")))
	}
	if fc, mc := lo.Metrics["oncpu-ns/element"], hi.Metrics["oncpu-ns/element"]; fc > 0 && mc > 0 {
		cmp := exp.Compare(mc, fc, "more", "less")
		note := fmt.Sprintf("    on CPU %s → %s, %s", result.FormatNs(fc), result.FormatNs(mc), cmp)
		if mc > fc*exp.SameWithin {
			note += ": the indirect cost (cold caches); the rest of the wall time is waiting for a CPU"
		} else {
			note += ": no indirect cost shows at this size"
		}
		notes = append(notes, note)
	}
	return line, notes, true
}

// wallFigure is a sweep arm's wall time per element with its spread, or
// its status where its figures are no answer (too few ops).
func wallFigure(a result.Arm) string {
	if !a.HasFigure() {
		return a.Status
	}
	return result.FormatNs(a.Median) + " (" + exp.Spread(a) + ")"
}
