package experiments

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// pingpong's CPython arms: round trips between CPython threads, asyncio
// tasks and a forked process, their checks and the published figures.

// pingpongPyPlan is CPython's round trips: threads, asyncio tasks and a
// forked process (SPEC §5.9).
func pingpongPyPlan(exp.Params) []pyArm {
	var out []pyArm
	pp := func(sub, mech, bench string, place string, quick bool) {
		out = append(out, pyArm{key: ppPlaced(sub, mech, place), sub: sub, mech: mech, op: "round trip",
			bench: bench, place: place, quick: quick})
	}
	pp("pythread", "simplequeue", "pingpong.simplequeue", "unpinned", true)
	pp("pythread", "simplequeue", "pingpong.simplequeue", "same-cpu", true)
	pp("pythread", "simplequeue", "pingpong.simplequeue", "cross-cpu", false)
	pp("pythread", "event", "pingpong.event", "unpinned", false)
	pp("pythread", "pipe", "pingpong.pipe-thread", "unpinned", false)
	pp("pyprocess", "pipe", "pingpong.pipe-fork", "unpinned", false)
	pp("pytask", "asyncio-queue", "pingpong.asyncio-queue", "unpinned", true)
	pp("pytask", "asyncio-queue", "pingpong.asyncio-queue", "same-cpu", true) // the verdict's one-CPU cell
	pp("pytask", "future", "pingpong.future", "unpinned", false)
	pp("pytask", "asyncio-event", "pingpong.asyncio-event", "unpinned", true)
	return out
}

// Thresholds of the CPython pingpong checks.
const (
	minPyThreadSwitches = 1.5 // a blocking thread handoff: ≈ 2 per round trip
)

func pingpongPyChecks(arms []result.Arm) []result.Check {
	out := eventPairChecks(arms)
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Switches == nil {
			continue
		}
		sw := a.Switches.Total()
		switch {
		case (a.Substrate == "pythread" || a.Substrate == "pyprocess") && a.Placement != "same-cpu":
			out = append(out, result.Check{
				Name:   "a CPython thread (or process) round trip costs about 2 OS switches (≥ 1.5)",
				Holds:  sw >= minPyThreadSwitches,
				Detail: fmt.Sprintf("%s: %.2f switches per round trip (%.2f voluntary, %.2f involuntary)", a.Name, sw, a.Switches.Voluntary, a.Switches.Involuntary),
				Arms:   []string{a.Name},
			})
		case a.Substrate == "pytask":
			out = append(out, noSwitchCheck(a, "an asyncio task round trip", "round trip"))
		}
	}
	return out
}

func pingpongPyFindings(arms []result.Arm) []string {
	var out []string
	by := okArms(arms)
	for _, py := range interpreterTags(arms) {
		queue := func(place string) (result.Arm, bool) {
			return by.get(ppPlaced("pythread", "simplequeue", place).WithInterpreter(py))
		}
		u, ok1 := queue("unpinned")
		s, ok2 := queue("same-cpu")
		c, ok3 := queue("cross-cpu")
		if ok1 && ok2 {
			line := fmt.Sprintf("placement%s: a CPython thread round trip costs %s unpinned (%s switches) and %s with both threads on one CPU (%s switches)",
				onInterpreter(py), result.FormatNs(u.Median), swText(u), result.FormatNs(s.Median), swText(s))
			if ok3 {
				line += fmt.Sprintf(", %s on two CPUs (%s switches)", result.FormatNs(c.Median), swText(c))
			}
			out = append(out, line)
		}
		out = append(out, eventPairFindings(by, py)...)
	}
	return append(out, pingpongPyRefs.findings(arms)...)
}

// pingpongPyRefs are SPEC §8's figures for the CPython round trips.
var pingpongPyRefs = pyRefs{switches: true, GIL: []pyRef{
	{ppPlaced("pythread", "simplequeue", "unpinned"), "7.2 µs (7.15–7.63), 2.0 OS switches"},
	{ppPlaced("pythread", "event", "unpinned"), "11.0–11.3 µs (CPython 3.13, 8 cores: 9.3 µs)"},
	{ppPlaced("pythread", "pipe", "unpinned"), "p50 2.85 µs (CPython 3.13, 8 cores)"},
	{ppPlaced("pyprocess", "pipe", "unpinned"), "p50 3.2 µs (CPython 3.13, 8 cores)"},
	{ppPlaced("pytask", "asyncio-queue", "unpinned"), "4.3 µs (4.25–4.49)"},
	{ppPlaced("pytask", "future", "unpinned"), "3.4 µs (3.38–3.52)"},
	{ppPlaced("pytask", "asyncio-event", "unpinned"), "5.3 µs (CPython 3.13, 8 cores; threading.Event 9.3 µs there)"},
}}

// pyTasksVsThreads is the verdict's answer to "are asyncio tasks cheaper
// than CPython threads here?": the asyncio.Queue round trip against the
// SimpleQueue one, on one CPU and across CPUs (the handoff table's arms),
// with the OS switches each makes and the published figures beside them.
// It is empty when neither kind ran (no python3).
func pyTasksVsThreads(v *exp.VerdictRun) []string {
	const label = "  asyncio tasks vs CPython threads: "
	oneT, oneQ := ppPlaced("pytask", "asyncio-queue", "same-cpu"), ppPlaced("pythread", "simplequeue", "same-cpu")
	acrossT := []exp.ArmKey{ppPlaced("pytask", "asyncio-queue", "unpinned")}
	acrossQ := []exp.ArmKey{ppPlaced("pythread", "simplequeue", "cross-cpu"), ppPlaced("pythread", "simplequeue", "unpinned")}
	var parts []string
	var sw, word string
	for _, side := range []struct {
		where string
		task  []exp.ArmKey
		queue []exp.ArmKey
	}{{"on one CPU", []exp.ArmKey{oneT}, []exp.ArmKey{oneQ}}, {"across CPUs", acrossT, acrossQ}} {
		t, okT := pick(v, side.task...)
		q, okQ := pick(v, side.queue...)
		if !okT || !okQ {
			continue
		}
		cmp := exp.Compare(t.Median, q.Median, "slower", "faster")
		if c, ok := v.Comparison(t.Name, q.Name); ok { // measured side by side
			cmp = exp.PairWords(c, "slower", "faster")
		} else if len(parts) == 1 && cmp != "about the same" && strings.HasSuffix(cmp, word) {
			cmp = strings.TrimSuffix(cmp, " "+word) // "2.2× faster on one CPU, 2.3× across CPUs"
		}
		parts = append(parts, cmp+" "+side.where)
		_, word, _ = strings.Cut(cmp, " ")
		if sw == "" && t.Switches != nil && q.Switches != nil {
			sw = fmt.Sprintf("%.2f vs %.2f OS switches", t.Switches.Total(), q.Switches.Total())
		}
	}
	if len(parts) == 0 {
		if f, few := tooFew(v, append(append([]exp.ArmKey{oneT, oneQ}, acrossT...), acrossQ...)...); few {
			return []string{label + "too few ops in " + f.Name}
		}
		return nil
	}
	line := label + strings.Join(parts, ", ")
	if sw != "" {
		line += ", " + sw
	}
	task, okT := refNs(pingpongRefs, "pytask", "asyncio-queue", oneT)
	queue, okQ := refNs(pingpongRefs, "pythread", "simplequeue", oneQ)
	if okT && okQ {
		line += fmt.Sprintf("; published %s (%s vs %s)", exp.Compare(task, queue, "slower", "faster"),
			strings.TrimSuffix(result.FormatNs(task), " µs"), result.FormatNs(queue))
	}
	return []string{line}
}

// refNs is the first published figure of refs that belongs beside the arm
// k names (of substrate sub, mechanism mech) (exp.Reference.Matches), in ns.
func refNs(refs []exp.Reference, sub, mech string, k exp.ArmKey) (float64, bool) {
	a := result.Arm{Name: k.String(), Substrate: sub, Mechanism: mech}
	for _, r := range refs {
		if r.Ns > 0 && r.Matches(a) {
			return r.Ns, true
		}
	}
	return 0, false
}
