package experiments

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Thresholds of the interference checks (issue 4).
const (
	badP50Ns       = 1e6 // the woken goroutine behind one goroutine hog waits ≥ 1 ms at p50
	fixP99Factor   = 10  // a fix lowers p99 at least 10×
	pairP50Factor  = 2.0 // "unaffected": the pair's p50 stays within 2× of no hogs
	quantumMinimum = 1   // ops of the pair that must show a whole preemption stall
)

func interferenceChecks(arms []result.Arm) []result.Check {
	by := indexArms(arms, func(a result.Arm) bool { return a.Status == result.StatusOK && a.Percentiles != nil })
	ok := by.get
	var out []result.Check
	for _, shape := range []string{shapeTimer, shapeNetpoll} {
		badKey := ifKey(shape, "goroutine-spin", 1, 1)
		badName := badKey.String()
		bad, okBad := ok(badKey)
		if !okBad {
			continue
		}
		periods := bad.Metrics["p50-go-preempt-periods"]
		out = append(out, result.Check{
			Name:  fmt.Sprintf("a goroutine woken from outside the Go scheduler (%s) next to one goroutine hog at GOMAXPROCS=1 waits ≥ 1 ms at p50, piled at Go's preemption quantum", shape),
			Holds: bad.Percentiles.P50 >= badP50Ns && periods >= 1,
			Detail: fmt.Sprintf("%s: p50 %s, %s", badKey.InExperiment(), result.FormatNs(bad.Percentiles.P50),
				periodText(periods, p50What(bad))),
			Arms: []string{badName},
		})
		for _, fix := range []struct {
			key  exp.ArmKey
			what string
		}{
			{ifKey(shape, "process-spin", 1, 1), "the hog in a separate process"},
			{ifKey(shape, "goroutine-spin", 1, 2), "GOMAXPROCS=2 with one hog"},
			{ifKey(shape, "goroutine-gosched", 1, 1), "runtime.Gosched() in the hog's loop"},
		} {
			f, okFix := ok(fix.key)
			if !okFix {
				continue
			}
			out = append(out, result.Check{
				Name:  fmt.Sprintf("fix for %s: %s lowers p99 at least %d×", shape, fix.what, fixP99Factor),
				Holds: f.Percentiles.P99*fixP99Factor <= bad.Percentiles.P99,
				Detail: fmt.Sprintf("p99 %s with the fix vs %s (%s)", result.FormatNs(f.Percentiles.P99),
					result.FormatNs(bad.Percentiles.P99), exp.Compare(f.Percentiles.P99, bad.Percentiles.P99, "higher", "lower")),
				Arms: []string{f.Name, badName},
			})
		}
	}
	base, okBase := ok(ifKey(shapeChanPair, "none", 0, 1))
	hog, okHog := ok(ifKey(shapeChanPair, "goroutine-spin", 1, 1))
	if okBase && okHog {
		stalled := hog.Metrics["go-preempt-samples"]
		out = append(out, result.Check{
			Name:  fmt.Sprintf("a goroutine pair over a channel hands its time slice on: p50 with one goroutine hog stays within %.0f× of no hog, while its tail shows Go's preemption quantum", pairP50Factor),
			Holds: hog.Percentiles.P50 <= pairP50Factor*base.Percentiles.P50 && stalled >= quantumMinimum,
			Detail: fmt.Sprintf("p50 %s vs %s without the hog; %.0f of %d ops stalled a whole number of sysmon periods; max %s",
				result.FormatNs(hog.Percentiles.P50), result.FormatNs(base.Percentiles.P50), stalled, hog.Percentiles.Samples,
				result.FormatNs(hog.Percentiles.Max)),
			Arms: []string{hog.Name, base.Name},
		})
	}
	for _, a := range arms {
		if a.Mechanism != shapeStarve {
			continue
		}
		if a.Params["hog"] == "goroutine-spin" {
			out = append(out, result.Check{
				Name:   "a hog that is never preempted (asyncpreemptoff=1, GOMAXPROCS=1) ends the arm as timed out, not a hang",
				Holds:  a.Status == result.StatusTimedOut,
				Detail: fmt.Sprintf("status %s; %.0f wake-ups arrived, %.0f after the hog started", a.Status, a.Metrics["starve-samples"], a.Metrics["starve-samples-after-hog"]),
				Arms:   []string{a.Name},
			})
		} else {
			out = append(out, result.Check{
				Name:   "with runtime.Gosched() in the hog's loop the same child finishes even with asyncpreemptoff=1",
				Holds:  a.Status == result.StatusOK,
				Detail: fmt.Sprintf("status %s", a.Status),
				Arms:   []string{a.Name},
			})
		}
	}
	return out
}

func p50What(a result.Arm) string {
	if a.Metrics["p50-in-pile"] == 0 {
		return "p50 (in no pile)"
	}
	return "the pile p50 sits in"
}

func periodText(periods float64, what string) string {
	if periods < 1 {
		return what + " is not attributed to Go's preemption"
	}
	return fmt.Sprintf("%s attributed to Go's preemption (%.0f sysmon period(s))", what, periods)
}

// interferenceFindings: each bad case with its remedies beside it, in numbers.
func interferenceFindings(arms []result.Arm) []string {
	by := indexArms(arms, func(a result.Arm) bool { return a.Status == result.StatusOK && a.Percentiles != nil })
	hogCounts := map[int]bool{}
	for _, a := range arms {
		var n int
		fmt.Sscanf(a.Params["hogs"], "%d", &n)
		if n > 0 {
			hogCounts[n] = true
		}
	}
	var out []string
	pct := func(a result.Arm) string {
		return fmt.Sprintf("p50 %s, p99 %s, max %s", result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99), result.FormatNs(a.Percentiles.Max))
	}
	var counts []int
	for n := range hogCounts {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	for _, shape := range []string{shapeTimer, shapeNetpoll, shapeChanPair} {
		for _, n := range counts {
			bad, ok := by.get(ifKey(shape, "goroutine-spin", n, 1))
			if !ok {
				continue
			}
			line := fmt.Sprintf("%s with %d goroutine hog(s) at GOMAXPROCS=1: %s", shape, n, pct(bad))
			if b0, ok := by.get(ifKey(shape, "none", 0, 1)); ok {
				line += fmt.Sprintf(" (no hog: %s)", pct(b0))
			}
			for _, fix := range []struct {
				key  exp.ArmKey
				what string
			}{
				{ifKey(shape, "process-spin", n, 1), "hogs in a process"},
				{ifKey(shape, "goroutine-spin", n, n+1), fmt.Sprintf("GOMAXPROCS=%d", n+1)},
				{ifKey(shape, "goroutine-gosched", n, 1), "Gosched in the hog"},
			} {
				if f, ok := by.get(fix.key); ok {
					line += fmt.Sprintf("; %s → p99 %s", fix.what, result.FormatNs(f.Percentiles.P99))
				}
			}
			if v, ok := bad.Metrics["go-sched-latency-p99-ns"]; ok {
				line += fmt.Sprintf("; Go's own /sched/latencies p99 ≤ %s", result.FormatNs(v))
			}
			out = append(out, line)
			if g, ok := by.get(ifKey(shape, "goroutine-gosched", n, 1)); ok && g.Metrics["p50-go-preempt-periods"] >= 1 {
				out = append(out, fmt.Sprintf("%s: even with runtime.Gosched() in the hog, p50 %s sits at Go's preemption quantum: a yielding hog keeps the P busy, and the runtime polls the network only when a P runs out of work or when sysmon looks (every 10 ms)",
					shape, result.FormatNs(g.Percentiles.P50)))
			}
		}
	}
	return out
}

// interferenceVerdict: for each shape with and without one busy
// goroutine beside it at the same GOMAXPROCS, the sampled p50 and p99 (the
// shapes that share a GOMAXPROCS and a hog under one line that names
// them), and in notes what the other hogs (a process, more Ps) did to the
// p99 instead.
func interferenceVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	var lines, notes []string
	param := func(a result.Arm, k string) string { return a.Params[k] }
	base := v.WhereAny("interference", func(a result.Arm) bool { return param(a, "hogs") == "0" && a.Percentiles != nil })
	under := "" // the GOMAXPROCS and hog the lines below it share
	for _, b := range base {
		hogs := v.WhereAny("interference", func(a result.Arm) bool {
			return param(a, "shape") == param(b, "shape") && param(a, "hogs") == "1" && a.Percentiles != nil
		})
		var same, fixes []result.Arm
		for _, h := range hogs {
			switch {
			case h.GOMAXPROCS == b.GOMAXPROCS && strings.Contains(param(h, "hog"), "goroutine"):
				same = append(same, h)
			case h.HasFigure():
				fixes = append(fixes, h)
			}
		}
		if len(same) == 0 {
			continue
		}
		h := same[0]
		if u := fmt.Sprintf("  Go, GOMAXPROCS=%d, beside %s:", b.GOMAXPROCS, hogWords(param(h, "hog"))); u != under {
			under = u
			lines = append(lines, u)
		}
		lines = append(lines, tailLine(b, h))
		if !b.HasFigure() {
			continue
		}
		var fx []string
		for _, f := range fixes {
			how := hogWords(param(f, "hog")) + " instead"
			if f.GOMAXPROCS != b.GOMAXPROCS {
				how = fmt.Sprintf("GOMAXPROCS=%d", f.GOMAXPROCS)
				if param(f, "hog") != param(h, "hog") {
					how += " and " + hogWords(param(f, "hog"))
				}
			}
			fx = append(fx, fmt.Sprintf("%s: p99 %s", how, result.FormatNs(f.Percentiles.P99)))
		}
		if len(fx) > 0 {
			notes = append(notes, fmt.Sprintf("  %s, the fixes: %s", shortOp(b.Op), strings.Join(fx, "; ")))
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "  Go: "+unmeasured(v, "interference", "run interference"))
	}
	py, pyNotes := interferencePyVerdict(v)
	lines = append(lines, py)
	return []exp.VerdictSection{{Block: exp.BlockTail, Heading: "one busy worker, the tail: sampled p50 and p99, without → with it",
		Lines: lines, More: pyBuildLines(v, pyBuildTail), Notes: append(notes, pyNotes...),
		Foot: []string{"  published (CPython 3.14, one busy thread): p50 5.9 µs → 5 096 µs, p99 16.6 µs → 15 235 µs"}}}
}

// tailLine is the verdict's line of an op's sampled p50 and p99 without
// a hog (b) → with it (h), or "too few ops" on the side whose repetitions
// held too few for a figure.
func tailLine(b, h result.Arm) string {
	pb, ph := b.Percentiles, h.Percentiles
	switch {
	case !b.HasFigure() && !h.HasFigure():
		return fmt.Sprintf("    %s: too few ops, without the hog and with it", shortOp(b.Op))
	case !h.HasFigure():
		return fmt.Sprintf("    %s: p50 %s, p99 %s; with the hog: too few ops", shortOp(b.Op), result.FormatNs(pb.P50), result.FormatNs(pb.P99))
	case !b.HasFigure():
		return fmt.Sprintf("    %s: without the hog too few ops; with it p50 %s, p99 %s", shortOp(b.Op), result.FormatNs(ph.P50), result.FormatNs(ph.P99))
	}
	return fmt.Sprintf("    %s: p50 %s, p99 %s", shortOp(b.Op), exp.Change(pb.P50, ph.P50), exp.Change(pb.P99, ph.P99))
}

// shortOp is what one op is without its parenthesis: "1 ms timer sleep".
func shortOp(op string) string {
	if i := strings.Index(op, " ("); i > 0 {
		return op[:i]
	}
	return op
}

// hogWords says what a hog ("goroutine-spin", "process-spin",
// "goroutine-gosched") is in words: "a spinning goroutine".
func hogWords(hog string) string {
	place, kind, _ := strings.Cut(hog, "-")
	switch kind {
	case hogSpin:
		return "a spinning " + place
	case hogStream:
		return "a " + place + " streaming through memory"
	case hogGosched:
		return "a spinning " + place + " that calls Gosched"
	}
	return "a " + hog + " hog"
}
