package experiments

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// interference's CPython arms: a round trip beside busy pure-Python
// threads, at two GIL switch intervals, the remedy beside it, their checks
// and findings, the published figures and the verdict's CPython line.

// The seeds' remedy for GIL contention: the busy pure-Python loop moved
// into a child process (driver param busy_in=process), beside each
// unpinned busy-thread arm.

// busyInProcess is a busy-thread arm's twin with the spin in a process.
func busyInProcess(a pyArm) pyArm {
	b := a
	b.key = a.key.With(inProcess)
	b.params = maps.Clone(a.params)
	b.params["busy_in"] = "process"
	b.quick, b.freeThreaded = false, false
	return b
}

// busyProcessFactor: the remedy brings the round trip's p99 back within
// this factor of the no-busy arm's.
const busyProcessFactor = 2.0

// busyProcessBaseline is the no-busy arm a remedy arm compares with.
func busyProcessBaseline(k exp.ArmKey) exp.ArmKey {
	return busyBaseline(k.Without(inProcess.Key))
}

func busyProcessChecks(arms []result.Arm) []result.Check {
	by := okArms(arms)
	var out []result.Check
	for _, a := range arms {
		k := keyOf(a)
		if a.Status != result.StatusOK || a.Params["busy_in"] != "process" || a.Percentiles == nil {
			continue
		}
		b, ok := by.get(busyProcessBaseline(k))
		if !ok || b.Percentiles == nil || b.Percentiles.P99 <= 0 {
			continue
		}
		thread := ""
		if t, ok := by.get(k.Without(inProcess.Key)); ok && t.Percentiles != nil {
			thread = fmt.Sprintf("; the same spin in a thread: p50 %s, p99 %s", result.FormatNs(t.Percentiles.P50), result.FormatNs(t.Percentiles.P99))
		}
		ft := ""
		if a.Params["gil"] == "disabled" {
			ft = " (free-threaded build: the busy thread itself makes no difference here either)"
		}
		out = append(out, result.Check{
			Name:  fmt.Sprintf("the remedy: the busy loop in a child process brings the round-trip p99 back within %.0f× of no busy worker", busyProcessFactor),
			Holds: a.Percentiles.P99 <= busyProcessFactor*b.Percentiles.P99,
			Detail: fmt.Sprintf("%s: p50 %s, p99 %s = %.2f× the p99 with no busy worker (%s: p50 %s, p99 %s)%s%s", a.Name,
				result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99), a.Percentiles.P99/b.Percentiles.P99,
				b.Name, result.FormatNs(b.Percentiles.P50), result.FormatNs(b.Percentiles.P99), thread, ft),
			Arms: []string{a.Name, b.Name},
		})
	}
	return out
}

func busyProcessFindings(arms []result.Arm) []string {
	by := okArms(arms)
	var out []string
	for _, a := range arms {
		k := keyOf(a)
		if a.Status != result.StatusOK || a.Params["busy_in"] != "process" || a.Percentiles == nil {
			continue
		}
		t, ok := by.get(k.Without(inProcess.Key))
		if !ok || t.Percentiles == nil {
			continue
		}
		out = append(out, fmt.Sprintf("busy loop in a process instead of a thread%s (%s, switch interval %s): round trip p50 %s → %s, p99 %s → %s",
			onInterpreter(k.Interpreter), a.Substrate, a.Params["switch_interval"], result.FormatNs(t.Percentiles.P50), result.FormatNs(a.Percentiles.P50),
			result.FormatNs(t.Percentiles.P99), result.FormatNs(a.Percentiles.P99)))
	}
	return out
}

// ifPyKey is a CPython arm's key: its substrate, mechanism, busy threads,
// switch interval and placement (named when not unpinned):
// interference/pythread/simplequeue/busy=1/si=0.5ms/cross-cpu.
func ifPyKey(sub, mech string, busy int, si, place string) exp.ArmKey {
	k := exp.Key("interference", exp.Seg(sub), exp.Seg(mech), exp.KV("busy", busy), exp.KV("si", si))
	if place != "unpinned" {
		k = k.With(exp.Seg(place))
	}
	return k
}

// The busy thread's remedy: the same pure-Python spin in processes.
var inProcess = exp.KV("in", "process")

// interferencePyPlan is a CPython round trip beside busy pure-Python
// threads, at two GIL switch intervals (SPEC §5.9).
func interferencePyPlan(p exp.Params) []pyArm {
	// A busy thread makes each thread round trip wait for the switch
	// interval: size repetitions by round trips, not only by time.
	busyOps := map[string]int{exp.SuiteQuick: 20, exp.SuiteDefault: 100, exp.SuiteFull: 300}[p.Suite]
	if busyOps == 0 {
		busyOps = 100
	}
	busies := []int{0, 1}
	if p.Hogs != nil {
		busies = p.Hogs
	}
	var out []pyArm
	for _, sub := range []string{"pythread", "pytask"} {
		mech, bench := "simplequeue", "pingpong.simplequeue"
		places := []string{"unpinned", "cross-cpu"}
		if sub == "pytask" {
			mech, bench, places = "asyncio-queue", "pingpong.asyncio-queue", []string{"unpinned"}
		}
		for _, busy := range busies {
			sis := []string{"default", "0.5ms"}
			if busy == 0 {
				sis = []string{"default"}
			}
			for _, si := range sis {
				for _, place := range places {
					params := map[string]string{"busy": strconv.Itoa(busy)}
					if si == "0.5ms" {
						params["switch_interval_s"] = "0.0005"
					}
					key := ifPyKey(sub, mech, busy, si, place)
					a := pyArm{key: key, sub: sub, mech: mech, op: "round trip", bench: bench, params: params, place: place,
						quick:        sub == "pythread" && busy == 1 && si == "default" && place == "cross-cpu",
						freeThreaded: interferencePyRefs.hasFT(key)}
					if busy > 0 {
						a.minOps = busyOps
					}
					if busy > 64 {
						a.unsup = "more than 64 busy Python threads"
					}
					out = append(out, a)
					if busy > 0 && place == "unpinned" {
						out = append(out, busyInProcess(a))
					}
				}
			}
		}
	}
	return out
}

// busyMedianNs is "into milliseconds" for a busy thread's round trip.
const busyMedianNs = 1e6

func interferencePyChecks(arms []result.Arm) []result.Check {
	out := busyProcessChecks(arms)
	by := okArms(arms)
	for _, a := range arms {
		k := keyOf(a)
		if a.Substrate != "pythread" || a.Params["busy"] == "0" || a.Params["busy_in"] == "process" {
			continue
		}
		if k.Interpreter == freeThreadedTag && k.Plan().Equal(ifPyKey("pythread", "simplequeue", 1, "default", "unpinned")) {
			out = append(out, result.Check{Name: freeThreadedBusyCheck, Skipped: true,
				Detail: fmt.Sprintf("%s: unsupported: %s", a.Name, a.Reason), Arms: []string{a.Name}})
			continue
		}
		if a.Status != result.StatusOK || a.Percentiles == nil {
			continue
		}
		si := a.Params["switch_interval"]
		ms, err := strconv.ParseFloat(strings.TrimSuffix(si, "ms"), 64)
		if err != nil || ms <= 0 {
			continue
		}
		base := ""
		if b, ok := by.get(busyBaseline(k)); ok && b.Percentiles != nil {
			base = fmt.Sprintf("; no busy thread: %s", result.FormatNs(b.Percentiles.P50))
		}
		detail := fmt.Sprintf("%s: p50 %s = %.2f× the switch interval (%s), p99 %s%s", a.Name,
			result.FormatNs(a.Percentiles.P50), a.Percentiles.P50/(ms*1e6), si, result.FormatNs(a.Percentiles.P99), base)
		if a.Params["gil"] == "disabled" {
			// No GIL, no switch interval to wait for (published: 6.7 µs).
			out = append(out, result.Check{Name: freeThreadedBusyCheck, Holds: a.Percentiles.P50 < 0.5*ms*1e6, Detail: detail, Arms: []string{a.Name}})
			continue
		}
		out = append(out, result.Check{
			Name:   "one busy pure-Python thread moves the thread round-trip median to the GIL switch interval (p50 ≥ ½ interval: milliseconds at the default 5 ms)",
			Holds:  a.Percentiles.P50 >= 0.5*ms*1e6,
			Detail: detail,
			Arms:   []string{a.Name},
		})
	}
	return out
}

// freeThreadedBusyCheck is the check only a free-threaded build answers.
const freeThreadedBusyCheck = "without the GIL (free-threaded build), one busy pure-Python thread does not hold the thread round trip for the switch interval (p50 < ½ interval; published 6.7 µs)"

// busyBaseline is the busy=0 arm with the same placement (and
// interpreter) as a busy arm.
func busyBaseline(k exp.ArmKey) exp.ArmKey {
	return k.SetParam("busy", 0).SetParam("si", "default")
}

func interferencePyFindings(arms []result.Arm) []string {
	var out []string
	by := okArms(arms)
	for _, py := range interpreterTags(arms) {
		n := func(sub, mech string, busy int, si, place string) (result.Arm, bool) {
			return by.get(ifPyKey(sub, mech, busy, si, place).WithInterpreter(py))
		}
		sfx := onInterpreter(py)
		for _, place := range []string{"unpinned", "cross-cpu"} {
			t0, okA := n("pythread", "simplequeue", 0, "default", place)
			t1, okB := n("pythread", "simplequeue", 1, "default", place)
			t2, okC := n("pythread", "simplequeue", 1, "0.5ms", place)
			if !okB || t1.Percentiles == nil {
				continue
			}
			where := "unpinned"
			if place != "unpinned" {
				where = "the two threads on different CPUs, the busy one beside the measuring thread"
			}
			line := fmt.Sprintf("one busy thread%s, %s: thread round trip p50 %s, p99 %s at switch interval %s", sfx, where,
				result.FormatNs(t1.Percentiles.P50), result.FormatNs(t1.Percentiles.P99), t1.Params["switch_interval"])
			faster := ""
			if okA && t0.Percentiles != nil {
				line += fmt.Sprintf(" (none: p50 %s, p99 %s)", result.FormatNs(t0.Percentiles.P50), result.FormatNs(t0.Percentiles.P99))
				faster = busyFaster(t0, t1)
			}
			if okC && t2.Percentiles != nil {
				line += fmt.Sprintf("; at %s: p50 %s, p99 %s", t2.Params["switch_interval"], result.FormatNs(t2.Percentiles.P50), result.FormatNs(t2.Percentiles.P99))
			}
			switch {
			case t1.Percentiles.P50 >= busyMedianNs:
				line += ": the woken thread waits for the busy one to be forced off the GIL"
			case faster != "":
				line += ": " + faster
			default:
				line += ": the woken thread mostly took the GIL before the busy thread did; only the tail waits a switch interval"
			}
			out = append(out, line)
		}
		a0, okD := n("pytask", "asyncio-queue", 0, "default", "unpinned")
		a1, okE := n("pytask", "asyncio-queue", 1, "default", "unpinned")
		if okD && okE && a0.Percentiles != nil && a1.Percentiles != nil {
			out = append(out, fmt.Sprintf("one busy thread%s: asyncio round-trip median %s → %s, p99 %s → %s: tasks hand over without the GIL, but lose it to the busy thread each switch interval",
				sfx, result.FormatNs(a0.Percentiles.P50), result.FormatNs(a1.Percentiles.P50),
				result.FormatNs(a0.Percentiles.P99), result.FormatNs(a1.Percentiles.P99)))
		}
	}
	out = append(out, busyProcessFindings(arms)...)
	return append(out, interferencePyRefs.findings(arms)...)
}

// interferencePyRefs are SPEC §8's figures for CPython beside a busy thread.
var interferencePyRefs = pyRefs{tail: true, GIL: []pyRef{
	{ifPyKey("pythread", "simplequeue", 0, "default", "unpinned"), "median 5.9 µs, p99 16.6 µs"},
	{ifPyKey("pythread", "simplequeue", 1, "default", "unpinned"), "median 5 096 µs, p99 15 235 µs (5 ms interval; free-threaded 6.7 / 16.2 µs)"},
	{ifPyKey("pythread", "simplequeue", 1, "0.5ms", "unpinned"), "median 572 µs, p99 2 187 µs"},
	{ifPyKey("pythread", "simplequeue", 1, "default", "cross-cpu"), "median 5 096 µs, p99 15 235 µs (unpinned, 24 cores)"},
	{ifPyKey("pythread", "simplequeue", 1, "0.5ms", "cross-cpu"), "median 572 µs, p99 2 187 µs (unpinned, 24 cores)"},
	{ifPyKey("pytask", "asyncio-queue", 0, "default", "unpinned"), "median 4.0 µs, p99 6.9 µs"},
	{ifPyKey("pytask", "asyncio-queue", 1, "default", "unpinned"), "median 8.2 µs, p99 5 146 µs"},
}, FT: []pyRef{
	{ifPyKey("pythread", "simplequeue", 1, "default", "unpinned"), "median 6.7 µs, p99 16.2 µs (free-threaded)"},
	{ifPyKey("pythread", "simplequeue", 1, "default", "cross-cpu"), "median 6.7 µs, p99 16.2 µs (free-threaded, unpinned, 24 cores)"},
}}

// interferenceRefs are SPEC §8's published tails beside a busy worker,
// beside the CPython arms.
var interferenceRefs = []exp.Reference{
	{Substrates: []string{"pythread"}, Text: "CPython 3.14, one busy thread: thread round trip median 5.9 → 5 096 µs, p99 16.6 → 15 235 µs; switch interval 0.5 ms: 572 / 2 187 µs; free-threaded 6.7 / 16.2 µs"},
	{Substrates: []string{"pytask"}, Text: "CPython 3.14, one busy thread: asyncio round trip median 4.0 → 8.2 µs, p99 6.9 → 5 146 µs"},
}

// interferencePyVerdict: a CPython thread round trip beside one busy
// thread (a line of figures), and a note when the busy thread made the
// round trip faster, which is no GIL cost and must not read as one.
func interferencePyVerdict(v *exp.VerdictRun) (string, []string) {
	busy := v.Where("interference", func(a result.Arm) bool {
		return a.Substrate == "pythread" && a.Params["busy"] == "1" && a.Params["busy_in"] != "process" && a.Percentiles != nil
	})
	if len(busy) == 0 {
		return "  CPython: not measured (python3 missing or its arms not selected)", nil
	}
	a := busy[0]
	si := a.Params["switch_interval"]
	if si == "" {
		si = "—"
	}
	line := fmt.Sprintf("  CPython threads, a busy thread, switch interval %s: p50 %s, p99 %s", si, result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99))
	var notes []string
	if b, ok := pick(v, keyOf(a).SetParam("busy", 0)); ok && b.Percentiles != nil {
		line = fmt.Sprintf("  CPython threads, a busy thread, switch interval %s: p50 %s, p99 %s", si,
			exp.Change(b.Percentiles.P50, a.Percentiles.P50), exp.Change(b.Percentiles.P99, a.Percentiles.P99))
		if n := busyFaster(b, a); n != "" {
			notes = append(notes, "  CPython: "+n)
		}
	}
	if r, ok := pick(v, keyOf(a).With(inProcess)); ok && r.Percentiles != nil {
		notes = append(notes, fmt.Sprintf("  CPython, the busy loop in a process instead: p50 %s, p99 %s", result.FormatNs(r.Percentiles.P50), result.FormatNs(r.Percentiles.P99)))
	}
	return line, notes
}

// busyFaster says so when a round trip beside a busy thread (busy) is
// faster than without it (quiet): the busy thread keeps the CPU awake, so
// no idle CPU has to wake for the handoff; it is not a GIL cost. Empty
// when it is not faster beyond the noise (exp.SameWithin).
func busyFaster(quiet, busy result.Arm) string {
	q, b := quiet.Percentiles.P50, busy.Percentiles.P50
	if b <= 0 || q < b*exp.SameWithin {
		return ""
	}
	return fmt.Sprintf("%s with a busy thread (p50 %s → %s): the busy thread keeps the CPU awake (no idle wake-up); not a GIL cost",
		exp.Compare(b, q, "slower", "faster"), result.FormatNs(q), result.FormatNs(b))
}
