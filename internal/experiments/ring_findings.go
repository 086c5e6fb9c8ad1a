package experiments

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What ring reads from its arms: each 2-thread ring's hop against half its
// reference round trip, how a hop's cost grows with N, and the published
// figures.

// Bounds of "about half a round trip" for the 2-worker ring's hop.
const (
	hopHalfRTLow  = 0.67
	hopHalfRTHigh = 1.5
)

type ringSeriesKey struct{ sub, mech, placement, gmp string }

// ringSeries groups the finished arms by substrate, mechanism, placement
// (and --gomaxprocs value), each sorted by N.
func ringSeries(arms []result.Arm) (map[ringSeriesKey][]result.Arm, []ringSeriesKey) {
	series := map[ringSeriesKey][]result.Arm{}
	var keys []ringSeriesKey
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Median <= 0 || isRingRef(a) {
			continue
		}
		k := ringSeriesKey{a.Substrate, a.Mechanism, a.Placement, ""}
		if _, ok := keyOf(a).Param("gomaxprocs"); ok {
			k.gmp = strconv.Itoa(a.GOMAXPROCS)
		}
		if _, ok := series[k]; !ok {
			keys = append(keys, k)
		}
		series[k] = append(series[k], a)
	}
	for _, s := range series {
		sort.Slice(s, func(i, j int) bool { return ringN(s[i]) < ringN(s[j]) })
	}
	return series, keys
}

func ringN(a result.Arm) int {
	n, _ := strconv.Atoi(a.Params["n"])
	return n
}

// growth is the hop cost at N=hi over that at N=lo, if both were measured.
func growth(s []result.Arm, lo, hi int) (float64, result.Arm, result.Arm, bool) {
	var a, b result.Arm
	var okA, okB bool
	for _, x := range s {
		if ringN(x) == lo {
			a, okA = x, true
		}
		if ringN(x) == hi {
			b, okB = x, true
		}
	}
	if !okA || !okB || a.Median <= 0 {
		return 0, a, b, false
	}
	return b.Median / a.Median, a, b, true
}

// ringDerive adds to each 2-thread ring arm its hop over half the round
// trip of the reference ping-pong arm with the same mechanism and placement.
func ringDerive(arms []result.Arm) {
	refs := indexArms(arms, func(a result.Arm) bool { return isRingRef(a) && a.Status == result.StatusOK && a.Median > 0 })
	for i := range arms {
		// The reference arms are thread pairs, beside the 2-thread rings.
		if isRingRef(arms[i]) || arms[i].Substrate != "thread" {
			continue
		}
		ref, ok := refs.get(keyOf(arms[i]).Replace(ringTwo, ringRef))
		if !ok || arms[i].Status != result.StatusOK {
			continue
		}
		arms[i].SetMetric("pingpong-rt-ns", ref.Median)
		arms[i].SetMetric("half-rt-ratio", arms[i].Median/(ref.Median/2))
	}
}

func ringChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for _, a := range arms {
		if r, ok := a.Metrics["half-rt-ratio"]; ok {
			ref := keyOf(a).Replace(ringTwo, ringRef).String()
			out = append(out, result.Check{
				Name:  fmt.Sprintf("a 2-thread ring's hop is about half a ping-pong round trip (%.2f–%.2f× of RT/2)", hopHalfRTLow, hopHalfRTHigh),
				Holds: r >= hopHalfRTLow && r <= hopHalfRTHigh,
				Detail: fmt.Sprintf("%s: hop %s, ping-pong RT %s in %s (RT/2 = %s): %.2f×",
					a.Name, result.FormatNs(a.Median), result.FormatNs(a.Metrics["pingpong-rt-ns"]), ref, result.FormatNs(a.Metrics["pingpong-rt-ns"]/2), r),
				Arms: []string{a.Name},
			})
		}
	}
	// The published shape: thread handoffs grow much faster with N than
	// goroutine handoffs (threads +92%, tasks +30% from 2 to 1000 workers).
	series, keys := ringSeries(arms)
	for _, tk := range keys {
		if tk.sub != "thread" {
			continue
		}
		gk := ringSeriesKey{"goroutine", "chan", tk.placement, tk.gmp}
		gs, ok := series[gk]
		if !ok {
			continue
		}
		ts := series[tk]
		lo, hi := commonRange(ts, gs)
		if lo == hi {
			continue
		}
		tg, ta, tb, ok1 := growth(ts, lo, hi)
		gg, ga, gb, ok2 := growth(gs, lo, hi)
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, result.Check{
			Name:  "a thread ring's hop cost grows faster with N than a goroutine ring's (published: threads +92%, tasks +30% from 2 to 1000)",
			Holds: tg > gg,
			Detail: fmt.Sprintf("%s, N %d→%d: thread %s %s→%s (%+.0f%%), goroutine chan %s→%s (%+.0f%%)",
				tk.placement, lo, hi, tk.mech, result.FormatNs(ta.Median), result.FormatNs(tb.Median), 100*(tg-1),
				result.FormatNs(ga.Median), result.FormatNs(gb.Median), 100*(gg-1)),
			Arms: []string{ta.Name, tb.Name, ga.Name, gb.Name},
		})
	}
	return out
}

// commonRange is the smallest and largest N both series measured.
func commonRange(a, b []result.Arm) (lo, hi int) {
	in := map[int]bool{}
	for _, x := range a {
		in[ringN(x)] = true
	}
	lo, hi = -1, -1
	for _, x := range b {
		n := ringN(x)
		if !in[n] {
			continue
		}
		if lo < 0 || n < lo {
			lo = n
		}
		if n > hi {
			hi = n
		}
	}
	return lo, hi
}

func ringFindings(arms []result.Arm) []string {
	var out []string
	series, keys := ringSeries(arms)
	for _, k := range keys {
		s := series[k]
		if len(s) < 2 {
			continue
		}
		a, b := s[0], s[len(s)-1]
		g := b.Median / a.Median
		sw := ""
		if a.Switches != nil && b.Switches != nil {
			sw = fmt.Sprintf("; OS switches per hop %.2f → %.2f", a.Switches.Total(), b.Switches.Total())
		}
		label := fmt.Sprintf("%s/%s %s", k.sub, k.mech, k.placement)
		if k.gmp != "" {
			label += " gomaxprocs=" + k.gmp
		}
		out = append(out, fmt.Sprintf("growth: %s hop %s at N=%d → %s at N=%d (%.2f×, %+.0f%%)%s",
			label, result.FormatNs(a.Median), ringN(a), result.FormatNs(b.Median), ringN(b), g, 100*(g-1), sw))
	}
	return out
}

// ringMetrics declares the figures ring arms add beside the median.
var ringMetrics = []exp.Metric{
	{Name: "pingpong-rt-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the round trip of the reference arm ring/thread/M/pingpong/P (same mechanism, placement and GOMAXPROCS)"},
	{Name: "half-rt-ratio", Unit: "ratio", Better: exp.NotRanked, Doc: "the hop as a multiple of half that round trip (a 2-worker ring's hop is half a round trip)"},
}

// ringRefs are SPEC §8's published ring hops, beside the CPython arms.
var ringRefs = []exp.Reference{
	{Substrates: []string{"pythread"}, Param: "n", Value: "2", Ns: 3980, Text: "CPython 3.14: ring per hop, threads, 2 workers 3.98 µs (free-threaded 4.64 µs)"},
	{Substrates: []string{"pythread"}, Param: "n", Value: "100", Ns: 4540, Text: "CPython 3.14: ring per hop, threads, 100 workers 4.54 µs (free-threaded 5.22 µs)"},
	{Substrates: []string{"pythread"}, Param: "n", Value: "1000", Ns: 7650, Text: "CPython 3.14: ring per hop, threads, 1000 workers 7.65 µs"},
	{Substrates: []string{"pytask"}, Param: "n", Value: "2", Ns: 2370, Text: "CPython 3.14: ring per hop, asyncio tasks, 2 workers 2.37 µs"},
	{Substrates: []string{"pytask"}, Param: "n", Value: "100", Ns: 2220, Text: "CPython 3.14: ring per hop, asyncio tasks, 100 workers 2.22 µs"},
	{Substrates: []string{"pytask"}, Param: "n", Value: "1000", Ns: 3070, Text: "CPython 3.14: ring per hop, asyncio tasks, 1000 workers 3.07 µs"},
	{Substrates: []string{"pythread", "pytask"}, Match: []string{"same-cpu", "pinned"}, Ns: 6450, Text: "CPython 3.14: two threads pinned to one core 6.45 µs and 3.0 switches per hop (tasks 2.65 µs)"},
}

// ringPyFindings: the published figure beside each CPython ring, then the
// free-threaded build against the GIL build of the same version.
func ringPyFindings(arms []result.Arm) []string {
	return append(ringPyRefs.findings(arms), ringFreeThreaded(arms)...)
}

// ringFTCheaper is how much cheaper the free-threaded hop must be than
// the GIL build's for "removing the GIL made handoffs cheaper" to hold.
const ringFTCheaper = 0.9

// ringFreeThreaded answers the published finding "removing the GIL did
// not make handoffs cheaper" for each ring it was published for, where
// both builds of one version ran (--python all): the free-threaded hop
// against the GIL build's, the published pair beside them, quoted.
func ringFreeThreaded(arms []result.Arm) []string {
	by := okArms(arms)
	var out []string
	for _, a := range arms {
		k := keyOf(a)
		ftRef, ok := refText(ringPyRefs.FT, k.Plan())
		if !ok || a.Status != result.StatusOK || a.Params["gil"] != "disabled" || !strings.HasSuffix(k.Interpreter, "t") {
			continue
		}
		g, ok := by.get(k.Plan().WithInterpreter(strings.TrimSuffix(k.Interpreter, "t")))
		if !ok || g.Params["gil"] == "disabled" {
			continue
		}
		gilRef, _ := refText(ringPyRefs.GIL, k.Plan())
		r := a.Median / g.Median
		verdict := "no: the published finding holds here"
		if r < ringFTCheaper {
			verdict = fmt.Sprintf("yes (under %.1f×): the published finding does not hold here", ringFTCheaper)
		}
		cpu := ""
		if a.CPUNsPerOp != nil && g.CPUNsPerOp != nil {
			cpu = fmt.Sprintf(", CPU time %s against %s per hop", result.FormatNs(*a.CPUNsPerOp), result.FormatNs(*g.CPUNsPerOp))
		}
		out = append(out, fmt.Sprintf("%s, free-threaded against GIL, CPython %s: %s against %s per hop (%.2f×%s); did removing the GIL make handoffs cheaper? %s (published, 3.14: %s against %s)",
			k.Plan(), strings.TrimSuffix(k.Interpreter, "t"), result.FormatNs(a.Median), result.FormatNs(g.Median), r, cpu, verdict, ftRef, gilRef))
	}
	return out
}
