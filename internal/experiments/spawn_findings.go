package experiments

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What spawn reads from its arms: the memory checks, the findings and the
// published figure.

// Bounds of the goroutine memory check: within 2× of the starting stack
// plus bookkeeping (the g itself and its scheduling state, about 1 KiB).
const goroutineBookkeeping = 1024

func spawnChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	rss := map[string]float64{}
	var names []string
	for _, a := range arms {
		if a.Status != result.StatusOK {
			continue
		}
		if v, ok := a.Metrics["rss-bytes/worker"]; ok {
			rss[a.Substrate] = v
			names = append(names, a.Name)
		}
		if a.Substrate == "goroutine" {
			if v, ok := a.Metrics["rss-bytes/worker"]; ok {
				start := a.Metrics["stack-start-bytes"]
				bound := 2 * (start + goroutineBookkeeping)
				out = append(out, result.Check{
					Name:  "an idle goroutine weighs within 2× of its starting stack plus bookkeeping",
					Holds: start > 0 && v > 0 && v <= bound,
					Detail: fmt.Sprintf("%s: %s resident per goroutine; starting stack %s + %s bookkeeping, ×2 = %s",
						a.Name, result.FormatBytes(v), result.FormatBytes(start), result.FormatBytes(goroutineBookkeeping), result.FormatBytes(bound)),
					Arms: []string{a.Name},
				})
			}
		}
	}
	g, ok1 := rss["goroutine"]
	t, ok2 := rss["thread"]
	p, ok3 := rss["process"]
	if ok1 && ok2 && ok3 {
		out = append(out, result.Check{
			Name:   "memory per idle worker is ordered goroutine < thread < process",
			Holds:  g > 0 && g < t && t < p,
			Detail: fmt.Sprintf("resident per worker: goroutine %s, thread %s, process %s", result.FormatBytes(g), result.FormatBytes(t), result.FormatBytes(p)),
			Arms:   names,
		})
	}
	return out
}

func spawnFindings(arms []result.Arm) []string {
	// By substrate and mechanism: the spawn arms, and each kind's idle-memory.
	type kind struct{ sub, mech string }
	by := map[kind]result.Arm{}
	for _, a := range arms {
		if a.Status == result.StatusOK {
			by[kind{a.Substrate, a.Mechanism}] = a
		}
	}
	var out []string
	g, ok1 := by[kind{"goroutine", "go"}]
	t, ok2 := by[kind{"thread", "locked"}]
	p, ok3 := by[kind{"process", "exec"}]
	if ok1 && ok2 && g.Median > 0 {
		out = append(out, fmt.Sprintf("creating and joining a locked OS thread (%s) costs %.0f× a goroutine (%s)",
			result.FormatNs(t.Median), t.Median/g.Median, result.FormatNs(g.Median)))
	}
	if ok2 && ok3 && t.Median > 0 {
		out = append(out, fmt.Sprintf("a process (exec of ctxlab, %s) costs %.0f× a thread", result.FormatNs(p.Median), p.Median/t.Median))
	}
	if tr, ok := by[kind{"process", "true"}]; ok && ok3 {
		out = append(out, fmt.Sprintf("/bin/true takes %s to start and reap; ctxlab's child mode %s (the Go runtime's start-up is the difference)",
			result.FormatNs(tr.Median), result.FormatNs(p.Median)))
	}
	var mem []string
	for _, sub := range []string{"goroutine", "thread", "process"} {
		if a, ok := by[kind{sub, "idle"}]; ok {
			if v, ok := a.Metrics["rss-bytes/worker"]; ok {
				s := fmt.Sprintf("%s %s (%s–%s over %d weighings)", a.Substrate, result.FormatBytes(v), result.FormatBytes(a.Min), result.FormatBytes(a.Max), len(a.RepMeans))
				if pss, ok := a.Metrics["pss-bytes/worker"]; ok {
					s += fmt.Sprintf(" (PSS %s)", result.FormatBytes(pss))
				}
				mem = append(mem, s)
			}
		}
	}
	if len(mem) > 0 {
		out = append(out, "resident memory per idle worker: "+strings.Join(mem, ", "))
	}
	return out
}

// spawnMetrics declares the figures spawn arms add beside the median.
var spawnMetrics = []exp.Metric{
	{Name: "idle-workers", Unit: "workers", Better: exp.NotRanked, Doc: "how many idle workers the memory figures were taken over"},
	{Name: "rss-bytes/worker", Unit: "bytes", Better: exp.LowerIsBetter, Doc: "resident memory per idle worker"},
	{Name: "pss-bytes/worker", Unit: "bytes", Better: exp.LowerIsBetter, Doc: "proportional set size per idle child process (shared pages split)"},
	{Name: "stack-bytes/worker", Unit: "bytes", Better: exp.LowerIsBetter, Doc: "goroutine stack in use per idle goroutine"},
	{Name: "stack-start-bytes", Unit: "bytes", Better: exp.NotRanked, Doc: "the runtime's starting goroutine stack size"},
	{Name: "kernel-stack-bytes/worker", Unit: "bytes", Better: exp.LowerIsBetter, Doc: "kernel stack per idle thread (not in RSS)"},
}

// spawnRefs: SPEC §8's published task cost, about the experiment as a whole.
var spawnRefs = []exp.Reference{
	{Text: "CPython 3.14: ~2 µs and ~2.2 KiB per asyncio task"},
}
