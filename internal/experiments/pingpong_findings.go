package experiments

import (
	"fmt"
	"math"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What pingpong reads from its arms: the checks on switches per round
// trip, the findings, the published figures, and its rows and lines on
// the verdict screen.

// Thresholds of the pingpong checks (SPEC §5.1).
const (
	minThreadSwitches = 1.5 // a blocking handoff: ≈ 2 per round trip
	minWordSwitches   = 1   // shmfutex: a side may not sleep (below)
)

func pingpongChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	byName := indexArms(arms, func(result.Arm) bool { return true })
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Switches == nil {
			continue
		}
		sw := a.Switches.Total()
		row, _ := mech.RowOf(a.Mechanism)
		sub, _ := mech.SubstrateOf(a.Substrate)
		switch {
		// Unpinned only: across two CPUs the partner may already have
		// replied before the waker reaches its wait (a polling idle vCPU),
		// and on one CPU the waker is preempted; both are reported, not checked.
		// Each shmfutex side checks the shared word before it sleeps, and
		// the raw child answers fast: across CPUs the parent often finds
		// the reply already there and does not sleep (1.30 switches in one
		// quick run, 1.92 in the next), and the child can find the next
		// message posted while it is still in its wake call. ≥ 1 is the
		// floor measured, not a guarantee: below it, neither side sleeps
		// most round trips and the arm measures spinning, not a handoff.
		case sub.Kernel && row.Trip == mech.TripMayFindPosted && a.Placement == "unpinned":
			out = append(out, result.Check{
				Name:   "a futex handoff between processes costs about 1–2 OS switches per round trip (≥ 1: either side may find the other's word already posted and not sleep)",
				Holds:  sw >= minWordSwitches,
				Detail: fmt.Sprintf("%s: %.2f switches per round trip (%.2f voluntary, %.2f involuntary)", a.Name, sw, a.Switches.Voluntary, a.Switches.Involuntary),
				Arms:   []string{a.Name},
			})
		case sub.Kernel && row.Trip == mech.TripBlocks && a.Placement == "unpinned":
			out = append(out, result.Check{
				Name:   "a blocking handoff between OS threads costs about 2 OS switches per round trip (≥ 1.5)",
				Holds:  sw >= minThreadSwitches,
				Detail: fmt.Sprintf("%s: %.2f switches per round trip (%.2f voluntary, %.2f involuntary)", a.Name, sw, a.Switches.Voluntary, a.Switches.Involuntary),
				Arms:   []string{a.Name},
			})
		// Spinning on two CPUs: neither side sleeps. Unpinned, the two may
		// share a CPU for a while and yield to each other.
		case sub.Kernel && row.Trip == mech.TripSpins && a.Placement == "cross-cpu":
			out = append(out, noSwitchCheck(a, fmt.Sprintf("a %s round trip between two threads on two CPUs", a.Mechanism), "round trip"))
		case a.Substrate == mech.SubGoroutine && a.GOMAXPROCS == 1:
			out = append(out, noSwitchCheck(a, "a goroutine handoff at GOMAXPROCS=1", "round trip"))
		}
	}
	// Pinning both threads on one CPU: switches per round trip rise
	// (published: 3.0); kernels differ, and the check says which holds here.
	for _, a := range arms {
		if row, _ := mech.RowOf(a.Mechanism); a.Substrate != mech.SubThread || a.Placement != "same-cpu" || !row.Wait.Kernel() || a.Switches == nil {
			continue
		}
		u, ok := byName.get(keyOf(a).Replace(exp.Seg("same-cpu"), exp.Seg("unpinned")))
		if !ok || u.Switches == nil || u.Status != result.StatusOK {
			continue
		}
		out = append(out, result.Check{
			// The published model: on one CPU the woken thread preempts the
			// waker, which is switched out once more before it blocks.
			Name:  "pinning both threads on one CPU raises switches per round trip by ≥ 10% (published: 3.0 on one CPU)",
			Holds: a.Switches.Total() >= u.Switches.Total()*1.1,
			Detail: fmt.Sprintf("%s %s: %.2f switches per round trip on one CPU (%.2f involuntary) vs %.2f unpinned",
				a.Substrate, a.Mechanism, a.Switches.Total(), a.Switches.Involuntary, u.Switches.Total()),
			Arms: []string{a.Name, u.Name},
		})
	}
	return out
}

func pingpongFindings(arms []result.Arm) []string {
	var out []string
	byName := okArms(arms)
	for _, k := range []struct{ sub, m string }{{"thread", "futex"}, {"thread", "pipe"}, {"process", "pipe"}, {"process", "shmfutex"}} {
		s, ok1 := byName.get(ppPlaced(k.sub, k.m, "same-cpu"))
		c, ok2 := byName.get(ppPlaced(k.sub, k.m, "cross-cpu"))
		if ok1 && ok2 && s.Median > 0 {
			out = append(out, fmt.Sprintf("placement: a %s %s round trip costs %s on one CPU and %s across two (%.1f×); an idle CPU must be woken to take the handoff",
				k.sub, k.m, result.FormatNs(s.Median), result.FormatNs(c.Median), c.Median/s.Median))
		}
	}
	g, ok1 := byName.get(ppGoroutine("chan", "1"))
	t, ok2 := byName.get(ppPlaced("thread", "futex", "unpinned"))
	if ok1 && ok2 && g.Median > 0 {
		out = append(out, fmt.Sprintf("a goroutine channel round trip (%s) is %.0f× cheaper than an OS thread futex round trip (%s) here",
			result.FormatNs(g.Median), t.Median/g.Median, result.FormatNs(t.Median)))
	}
	tc, ok3 := byName.get(ppPlaced("thread", "chan", "unpinned"))
	if ok2 && ok3 && tc.Switches != nil && t.Switches != nil {
		out = append(out, fmt.Sprintf("a Go channel between two locked threads costs %s and %.1f OS switches per round trip vs %.1f for a raw futex: the runtime hands the wake-up through its own threads",
			result.FormatNs(tc.Median), tc.Switches.Total(), t.Switches.Total()))
	}
	return append(out, mechFindings(byName)...)
}

// pingpongRefs are SPEC §8's published round trips, each beside the
// CPython arms of its kind.
var pingpongRefs = []exp.Reference{
	{Substrates: []string{"pythread"}, Ns: 7200, Text: "CPython 3.14, 24-core Linux: thread round trip via two SimpleQueues 7.2 µs (7.15–7.63), 2.0 OS switches; Event pair 11.0–11.3 µs"},
	{Substrates: []string{"pythread"}, Match: []string{"pipe"}, Ns: 2850, Text: "CPython 3.13, 8 cores, kernel 6.12: pipe RTT p50, thread 2.85 µs"},
	{Substrates: []string{"pyprocess"}, Match: []string{"pipe"}, Ns: 3200, Text: "CPython 3.13, 8 cores, kernel 6.12: pipe RTT p50, process 3.2 µs (3.35)"},
	{Substrates: []string{"pytask"}, Match: []string{"asyncio-queue", "future"}, Ns: 4300, Text: "CPython 3.14: asyncio.Queue round trip 4.3 µs (4.25–4.49); bare futures 3.4 µs (3.38–3.52)"},
	{Substrates: []string{"pytask"}, Match: []string{"asyncio-event"}, Ns: 5300, Text: "CPython 3.13, 8 cores, kernel 6.12: asyncio.Event round trip 5.3 µs (threading.Event 9.3 µs)"},
}

// The verdict's handoff table: the Go, OS and CPython kinds of worker, each
// on one CPU and across CPUs (or unpinned), most telling arm first. Labels
// are short: the table must fit 80 columns.
var pingpongHeadline = []exp.Headline{
	{Label: "goroutines, channel", One: names(ppGoroutine("chan", "1")), Across: names(ppGoroutine("chan", "all"))},
	{Label: "OS threads, futex", One: names(ppPlaced("thread", "futex", "same-cpu")), Across: placedAcross("thread", "futex")},
	{Label: "processes, pipe", One: names(ppPlaced("process", "pipe", "same-cpu")), Across: placedAcross("process", "pipe"),
		Published: "p50 3.2 µs", PublishedP50: true},
	{Label: "CPython threads, queue", One: names(ppPlaced("pythread", "simplequeue", "same-cpu")),
		Across: placedAcross("pythread", "simplequeue"), Published: "7.2 µs, 2.0 switches"},
	{Label: "asyncio tasks, queue", One: names(ppPlaced("pytask", "asyncio-queue", "same-cpu")),
		Across: names(ppPlaced("pytask", "asyncio-queue", "unpinned")), Published: "4.3 µs (4.25–4.49)"},
}

// placedAcross are a placed pair's arms across CPUs, in order of
// preference: on two CPUs, else unpinned.
func placedAcross(sub, m string) []string {
	return names(ppPlaced(sub, m, "cross-cpu"), ppPlaced(sub, m, "unpinned"))
}

// pingpongSwitchCost: a raw futex handoff between two threads is the
// kernel floor of a switch, a pipe the next best; on one CPU wall time is
// CPU time (price.DirectCost).
var pingpongSwitchCost = names(ppPlaced("thread", "futex", "same-cpu"), ppPlaced("thread", "pipe", "same-cpu"))

// pingpongVerdict says under the handoff table what the gaps are made of,
// and what handoffs at the verdict's rate cost in CPU.
func pingpongVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	gap, notes := pingpongGap(v)
	return []exp.VerdictSection{
		// the builds' comparisons give way on a full screen (--python all)
		{Block: exp.BlockHandoff, Lines: gap, More: pyBuildLines(v, pyBuildHandoff), Notes: notes},
		{Block: exp.BlockBudget, Heading: fmt.Sprintf("what %s round trips a second cost in CPU, as a share of one core", fmtThousands(exp.VerdictRate)),
			Lines: pingpongBudget(v)},
	}
}

// pingpongGap says what the thread/goroutine gap is made of (a line of
// figures), and in notes what the across/one CPU and process/thread gaps
// are, from the switch counts and (where recorded) CPU time.
func pingpongGap(v *exp.VerdictRun) (lines, notes []string) {
	goChan, futexOne := ppGoroutine("chan", "1"), ppPlaced("thread", "futex", "same-cpu")
	g, okG := pick(v, goChan)
	// Same CPU only: unpinned or across CPUs the round trip also waits for
	// another CPU to wake, which is not a cost per switch.
	t, okT := pick(v, futexOne)
	if okG && okT && t.Switches != nil {
		gs := 0.0
		if g.Switches != nil {
			gs = g.Switches.Total()
		}
		cmp := exp.Compare(t.Median, g.Median, "slower", "faster")
		if c, ok := v.Comparison(futexOne.String(), goChan.String()); ok {
			cmp = exp.PairWords(c, "slower", "faster")
		}
		lines = append(lines, fmt.Sprintf("  threads vs goroutines: %s, %.2f vs %.2f OS switches", cmp, t.Switches.Total(), gs))
	} else if f, few := tooFew(v, goChan, futexOne); few {
		lines = append(lines, "  threads vs goroutines: too few ops in "+f.Name)
	} else {
		lines = append(lines, "  gap: not measured (needs "+goChan.String()+" and "+futexOne.String()+")")
	}
	lines = append(lines, pyTasksVsThreads(v)...)
	if c, ok := price.DirectCost(v.Run); ok {
		lines = append(lines, "  "+c.Line())
	}
	one, ok1 := pick(v, futexOne)
	x, ok2 := pick(v, ppPlaced("thread", "futex", "cross-cpu"))
	if ok1 && ok2 {
		cmp := exp.Compare(x.Median, one.Median, "slower", "faster")
		if c, ok := v.Comparison(x.Name, one.Name); ok {
			cmp = exp.PairWords(c, "slower", "faster")
		}
		line := "  across CPUs a thread round trip is " + cmp + " than on one CPU"
		if strings.HasPrefix(cmp, "about the same") {
			line = "  across CPUs a thread round trip costs about the same as on one CPU"
		}
		if c, _, ok := price.CPUPerOp(x); ok && x.Median > one.Median && c < x.Median/exp.SameWithin {
			line += fmt.Sprintf("; %s of its %s on CPU, the rest waits for the other CPU to wake", result.FormatNs(c), result.FormatNs(x.Median))
		} else if x.Median > one.Median*exp.SameWithin {
			line += ": each handoff wakes the other CPU from idle"
		}
		if v.Run.Env.Hypervisor && x.Median > one.Median*exp.SameWithin {
			line += " (a VM: an idle vCPU)"
		}
		notes = append(notes, line)
	}
	tp, okTP := pick(v, ppPlaced("thread", "pipe", "same-cpu"))
	pp, okPP := pick(v, ppPlaced("process", "pipe", "same-cpu"))
	if okTP && okPP && tp.Switches != nil && pp.Switches != nil && tp.Switches.Total() > 0 {
		notes = append(notes, processVsThread(pp, tp))
	}
	return lines, notes
}

// processVsThread reads a process pipe round trip against a thread one on
// one CPU: it speaks of an extra cost per switch only when the process is
// slower by more than the noise and makes about the same switches.
func processVsThread(pp, tp result.Arm) string {
	ps, ts := pp.Switches.Total(), tp.Switches.Total()
	cmp := exp.Compare(pp.Median, tp.Median, "slower", "faster")
	line := fmt.Sprintf("  processes vs threads over a pipe on one CPU: %s, %s vs %s, %.2f vs %.2f switches",
		cmp, exp.Figure(pp), exp.Figure(tp), ps, ts)
	sameSwitches := math.Abs(ps/ts-1) < 0.1
	switch {
	case pp.Median < tp.Median*exp.SameWithin:
		if cmp == "about the same" && sameSwitches {
			line += ": a process switch costs no more than a thread switch here"
		}
	case sameSwitches:
		line += ": the extra is per switch (address space, the child's own runtime)"
	default:
		line += fmt.Sprintf(": the process arm makes %+.2f switches per round trip", ps-ts)
	}
	return line
}

// pingpongBudget prices exp.VerdictRate handoffs per second in CPU with
// each kind of worker's on-CPU time per round trip (PriceAt).
func pingpongBudget(v *exp.VerdictRun) []string {
	var parts []string
	var ps []Priced
	for _, k := range []struct {
		label string
		keys  []exp.ArmKey
	}{
		{"goroutines", []exp.ArmKey{ppGoroutine("chan", "1")}},
		{"threads, one CPU", []exp.ArmKey{ppPlaced("thread", "futex", "same-cpu"), ppPlaced("thread", "futex", "unpinned")}},
		{"threads across CPUs", []exp.ArmKey{ppPlaced("thread", "futex", "cross-cpu")}},
		{"processes", []exp.ArmKey{ppPlaced("process", "pipe", "same-cpu"), ppPlaced("process", "pipe", "unpinned")}},
	} {
		a, ok := pick(v, k.keys...)
		if !ok {
			if _, few := tooFew(v, k.keys...); few {
				parts = append(parts, k.label+" too few ops")
			}
			continue
		}
		p, ok := PriceAt(a, exp.VerdictRate)
		if !ok {
			continue
		}
		label := k.label
		if k.label == "threads, one CPU" && a.Placement != "same-cpu" {
			label = "threads, unpinned"
		}
		each := ""
		if len(ps) == 0 {
			each = " on CPU each"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s%s)", label, price.Percent(p.Share), result.FormatNs(p.PerOp), each))
		ps = append(ps, p)
	}
	if len(parts) == 0 {
		return []string{"  not measured: this run recorded no CPU time per op for the pingpong arms"}
	}
	line := "  " + strings.Join(parts, " · ")
	if srcs := PriceSources(ps); len(srcs) > 1 || len(srcs) == 1 && srcs[0] != "CPU time of all participants" {
		line += " — from " + strings.Join(srcs, ", ")
	}
	return []string{line}
}
