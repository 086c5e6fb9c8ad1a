package experiments

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What callchain reads from its arms: each chain's and item's multiple of
// the plain one, the checks and findings, and the CPython chains.

// callchainDerive adds each chain arm's multiple of the plain chain and each
// item arm's multiple of the inline loop ("plain-ratio", "inline-ratio").
func callchainDerive(arms []result.Arm) {
	var plain, inline float64
	for _, a := range arms {
		if a.Status != result.StatusOK {
			continue
		}
		switch a.Params["kind"] {
		case "plain":
			plain = a.Median
		case "items-inline":
			inline = a.Median
		}
	}
	for i := range arms {
		a := &arms[i]
		if a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		base, key := plain, "plain-ratio"
		if a.Op == "item" {
			base, key = inline, "inline-ratio"
		}
		if base > 0 {
			a.SetMetric(key, a.Median/base)
		}
	}
}

// Check thresholds for callchain.
const (
	ccMinAsyncMultiple   = 10 // a goroutine per level ≫ three calls
	ccMaxDynamicMultiple = 4  // an interface or closure call stays near a plain call
)

func callchainChecks(arms []result.Arm) []result.Check {
	by := ccByKind(arms)
	var out []result.Check
	plain, ok := by["plain"]
	if ok {
		for _, kind := range []string{"interface", "closure"} {
			if a, ok := by[kind]; ok {
				r := a.Median / plain.Median
				out = append(out, result.Check{
					Name:   fmt.Sprintf("a chain through %ss costs about what plain calls cost (within %d×)", kind, ccMaxDynamicMultiple),
					Holds:  r <= ccMaxDynamicMultiple,
					Detail: fmt.Sprintf("%s %s vs plain %s (%.2f×)", kind, result.FormatNs(a.Median), result.FormatNs(plain.Median), r),
					Arms:   []string{plain.Name, a.Name},
				})
			}
		}
		for _, a := range arms {
			if a.Status == result.StatusOK && a.Params["kind"] == "goroutine" {
				r := a.Median / plain.Median
				out = append(out, result.Check{
					Name:   fmt.Sprintf("a goroutine per level costs far more than plain calls (≥ %d×)", ccMinAsyncMultiple),
					Holds:  r >= ccMinAsyncMultiple,
					Detail: fmt.Sprintf("%s %s vs plain %s (%.0f×)", a.Name, result.FormatNs(a.Median), result.FormatNs(plain.Median), r),
					Arms:   []string{plain.Name, a.Name},
				})
			}
		}
	}
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Params["kind"] != "task-per-item" {
			continue
		}
		for _, bt := range arms {
			if bt.Status == result.StatusOK && bt.Params["kind"] == "task-per-batch" && bt.GOMAXPROCS == a.GOMAXPROCS {
				out = append(out, result.Check{
					Name:  "batching amortises the task: a goroutine per batch costs less per item than a goroutine per item",
					Holds: bt.Median < a.Median,
					Detail: fmt.Sprintf("GOMAXPROCS=%d: %s per item per batch of %s vs %s per item alone (%.1f×)",
						a.GOMAXPROCS, result.FormatNs(bt.Median), bt.Params["batch"], result.FormatNs(a.Median), a.Median/bt.Median),
					Arms: []string{a.Name, bt.Name},
				})
			}
		}
	}
	return out
}

func ccByKind(arms []result.Arm) map[string]result.Arm {
	by := map[string]result.Arm{}
	for _, a := range arms {
		if a.Status == result.StatusOK && a.Median > 0 {
			by[a.Params["kind"]] = a
		}
	}
	return by
}

func callchainFindings(arms []result.Arm) []string {
	var out []string
	by := ccByKind(arms)
	if plain, ok := by["plain"]; ok {
		line := fmt.Sprintf("a chain of 3 calls: plain %s (//go:noinline)", result.FormatNs(plain.Median))
		for _, a := range arms {
			if a.Status != result.StatusOK || a.Op != "chain" || a.Params["kind"] == "plain" {
				continue
			}
			label := a.Params["kind"]
			if g := a.Params["gomaxprocs"]; g != "" {
				label += " at GOMAXPROCS=" + g
			}
			line += fmt.Sprintf(" · %s %s (%.1f×)", label, result.FormatNs(a.Median), a.Median/plain.Median)
		}
		out = append(out, line)
	}
	if in, ok := by["items-inline"]; ok {
		for _, a := range arms {
			if a.Status != result.StatusOK || a.Params["kind"] != "task-per-item" {
				continue
			}
			cost := "so starting and awaiting one costs ≈ " + result.FormatNs(a.Median-in.Median)
			if a.Median <= in.Median { // noise: never a negative cost
				cost = "no measurable cost of starting and awaiting one here"
			}
			line := fmt.Sprintf("%s tiny items at GOMAXPROCS=%d: inline %s per item · a goroutine per item %s (%.0f×, %s)",
				a.Params["items"], a.GOMAXPROCS, result.FormatNs(in.Median), result.FormatNs(a.Median), a.Median/in.Median, cost)
			for _, bt := range arms {
				if bt.Status == result.StatusOK && bt.Params["kind"] == "task-per-batch" && bt.GOMAXPROCS == a.GOMAXPROCS {
					line += fmt.Sprintf(" · a goroutine per batch of %s %s per item (%.1f×)", bt.Params["batch"], result.FormatNs(bt.Median), bt.Median/in.Median)
				}
			}
			out = append(out, line)
		}
	}
	return out
}

// callchainMetrics declares the figures callchain arms add beside the median.
var callchainMetrics = []exp.Metric{
	{Name: "plain-ratio", Unit: "ratio", Better: exp.LowerIsBetter, Doc: "the chain as a multiple of plain calls"},
	{Name: "inline-ratio", Unit: "ratio", Better: exp.LowerIsBetter, Doc: "the item as a multiple of doing it inline"},
}

// callchainPyPlan is the chain in CPython: plain calls, coroutines, and a
// task per item (SPEC §5.9).
func callchainPyPlan(exp.Params) []pyArm {
	return []pyArm{
		{key: ccKey(exp.Seg("pythread"), exp.Seg("plain")), sub: "pythread", mech: "call", op: "3-level call", bench: "callchain.plain", place: "unpinned"},
		{key: ccKey(exp.Seg("pytask"), exp.Seg("coroutine")), sub: "pytask", mech: "await", op: "3-level call", bench: "callchain.coroutine", place: "unpinned"},
		{key: ccKey(exp.Seg("pytask"), exp.Seg("create-task")), sub: "pytask", mech: "create_task", op: "task", bench: "callchain.task", place: "unpinned"},
	}
}

// callchainPyRefs are SPEC §8's figures for the CPython chains.
var callchainPyRefs = pyRefs{GIL: []pyRef{
	{ccKey(exp.Seg("pythread"), exp.Seg("plain")), "55 ns"},
	{ccKey(exp.Seg("pytask"), exp.Seg("coroutine")), "149 ns"},
	{ccKey(exp.Seg("pytask"), exp.Seg("create-task")), "~2 µs per task, ~2.2 KiB per task"},
}}

// callchainRefs: SPEC §8's published call chain, about the experiment as a whole.
var callchainRefs = []exp.Reference{
	{Text: "CPython 3.14: 3-level call chain 55 ns plain, 149 ns as coroutines; ~2 µs per task"},
}
