package experiments

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// The verdict's comparison of CPython's two builds: where a run (--python
// all) measured one arm on a free-threaded build and on the GIL build of
// the same version, a line per comparison below gives both figures, the
// free-threaded one over the GIL one in the verdict's words (measured
// side by side where the pair was: exp.Pair.Builds), and the guide's
// published finding about the builds beside it, its figures quoted from
// the experiment's published ones. A run with one build says nothing
// here; builds of two versions are compared, and said to be across
// versions.

// pyBuildCmp is one comparison between the builds.
type pyBuildCmp struct {
	what string       // "thread ring n=100"
	keys []exp.ArmKey // the arm's plan key; the first with both builds measured is shown
	per  string       // " per hop" after the figures
	tail bool         // compare the sampled p50 and p99, not the median
	// finding is the guide's published finding about the builds, whose
	// figures are refs' GIL and FT ones for the arm (both must exist).
	finding string
	refs    pyRefs
}

// pyPublishedVersion is the CPython the published figures (pyRefs) were
// taken on unless noted (pyReferenceSource); "t" marks its free-threaded build.
const pyPublishedVersion = "3.14"

// ringNoCheaper is the guide's finding on the free-threaded thread ring.
const ringNoCheaper = "removing the GIL did not make handoffs cheaper"

// pyBuildHandoff are the comparisons under the verdict's handoff table:
// the thread round trip on one CPU, the thread and task rings of 2 and 100
// workers.
var pyBuildHandoff = []pyBuildCmp{
	// on one CPU: unpinned, a round trip's cost is where the scheduler put
	// the two threads, and that changed with how long they had run (the
	// two builds' unpinned round trips read 46 and 48 µs as arms, 2.8×
	// apart in 15 ms turns)
	{what: "thread round trip on one CPU", keys: []exp.ArmKey{ppPlaced("pythread", "simplequeue", "same-cpu")}},
	{what: "thread ring n=2", keys: []exp.ArmKey{ringPyKey("pythread", "simplequeue", 2)}, per: " per hop", finding: ringNoCheaper, refs: ringPyRefs},
	{what: "thread ring n=100", keys: []exp.ArmKey{ringPyKey("pythread", "simplequeue", 100)}, per: " per hop", finding: ringNoCheaper, refs: ringPyRefs},
	{what: "task ring n=2", keys: []exp.ArmKey{ringPyKey("pytask", "asyncio-queue", 2)}, per: " per hop"},
	{what: "task ring n=100", keys: []exp.ArmKey{ringPyKey("pytask", "asyncio-queue", 100)}, per: " per hop"},
}

// pyBuildTail is the comparison in the verdict's tail block: the thread
// round trip beside one busy thread (the quick suite's cross-cpu arm,
// else the unpinned one).
var pyBuildTail = []pyBuildCmp{
	{what: "busy-thread round trip", keys: []exp.ArmKey{ifPyKey("pythread", "simplequeue", 1, "default", "cross-cpu"), ifPyKey("pythread", "simplequeue", 1, "default", "unpinned")},
		tail: true, finding: "on the free-threaded build the busy thread made no difference", refs: interferencePyRefs},
}

// pyBuildPairs are the comparisons of experiment's arms that the runner
// measures side by side on both builds: the medians (a tail comparison's
// percentiles are no time per op a turn can take).
func pyBuildPairs(experiment string) []exp.Pair {
	var out []exp.Pair
	for _, c := range pyBuildHandoff {
		for _, k := range c.keys {
			if k.Experiment == experiment {
				out = append(out, exp.Pair{Label: c.what, A: names(k)[0], Builds: true})
			}
		}
	}
	return out
}

// pyBuildLines are the verdict's lines comparing the builds for cmps.
func pyBuildLines(v *exp.VerdictRun, cmps []pyBuildCmp) []string {
	var out []string
	for _, c := range cmps {
		for _, k := range c.keys {
			pairs := pyBuildsOf(v, k)
			for _, p := range pairs {
				if l := c.line(v, p[0], p[1]); l != "" {
					out = append(out, l)
				}
			}
			if len(pairs) > 0 {
				break
			}
		}
	}
	return out
}

// pyBuildsOf pairs each free-threaded arm of the plan key k that the run
// measured with a GIL arm of it: the same version's, else the one whose
// version shares the most leading parts with it (the first in run order).
func pyBuildsOf(v *exp.VerdictRun, k exp.ArmKey) [][2]result.Arm {
	heard(k)
	arms := v.Where(k.Experiment, func(a result.Arm) bool {
		ak := keyOf(a)
		return ak.Interpreter != "" && ak.Plan().Equal(k)
	})
	var ft, gil []result.Arm
	for _, a := range arms {
		switch pyBuild(a) {
		case exp.BuildFreeThreaded:
			ft = append(ft, a)
		case exp.BuildGIL:
			gil = append(gil, a)
		}
	}
	var out [][2]result.Arm
	for _, f := range ft {
		best, shared := -1, -1
		for i, g := range gil {
			if n := sharedParts(pyVersion(f), pyVersion(g)); n > shared {
				best, shared = i, n
			}
		}
		if best >= 0 {
			out = append(out, [2]result.Arm{f, gil[best]})
		}
	}
	return out
}

// pyBuild is the build a CPython arm ran on: its python_build param, or
// for a run stored without one, its GIL at run time.
func pyBuild(a result.Arm) string {
	if b, ok := a.Params[exp.ParamPythonBuild]; ok {
		return b
	}
	switch a.Params["gil"] {
	case "disabled":
		return exp.BuildFreeThreaded
	case "enabled":
		return exp.BuildGIL
	}
	return ""
}

// pyVersion is the CPython version an arm ran on: the driver's "3.13.5"
// (before it answers, the interpreter's tag, "3.13.5t").
func pyVersion(a result.Arm) string {
	v := a.Params[exp.ParamPython]
	if v == "" {
		v = keyOf(a).Interpreter
	}
	return strings.TrimSuffix(v, "t")
}

// sharedParts counts the leading dot-separated parts two versions share:
// 3 for 3.13.5 and 3.13.5, 2 for 3.13.5 and 3.13.1.
func sharedParts(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	n := 0
	for n < len(pa) && n < len(pb) && pa[n] == pb[n] {
		n++
	}
	return n
}

// line is the comparison of ft against gil: "free-threaded 3.13.5t vs
// GIL 3.13.5: thread ring n=100 41 µs (40–42) vs 17 µs (16.8–17.5) per
// hop, 2.4× slower; published: …"; "" for a tail comparison without
// sampled percentiles.
func (c pyBuildCmp) line(v *exp.VerdictRun, ft, gil result.Arm) string {
	head := fmt.Sprintf("  free-threaded %s vs GIL %s", keyOf(ft).Interpreter, keyOf(gil).Interpreter)
	if pyVersion(ft) != pyVersion(gil) {
		head += fmt.Sprintf(", across versions (%s vs %s), not a build comparison", pyVersion(ft), pyVersion(gil))
	}
	var body string
	if c.tail {
		if ft.Percentiles == nil || gil.Percentiles == nil {
			return ""
		}
		f, g := ft.Percentiles, gil.Percentiles
		body = fmt.Sprintf("%s (%s) p50 %s vs %s, %s; p99 %s vs %s, %s", c.what, ft.Placement,
			result.FormatNs(f.P50), result.FormatNs(g.P50), exp.Compare(f.P50, g.P50, "slower", "faster"),
			result.FormatNs(f.P99), result.FormatNs(g.P99), exp.Compare(f.P99, g.P99, "slower", "faster"))
	} else {
		cmp := exp.Compare(ft.Median, gil.Median, "slower", "faster")
		if pc, ok := v.Comparison(ft.Name, gil.Name); ok { // measured side by side
			cmp = exp.PairWords(pc, "slower", "faster")
		}
		body = fmt.Sprintf("%s %s vs %s%s, %s", c.what, exp.Figure(ft), exp.Figure(gil), c.per, cmp)
	}
	line := head + ": " + body
	if p := c.published(keyOf(ft).Plan()); p != "" {
		line += "; published: " + p
	}
	return line
}

// published is the guide's finding with its figures for the arm k names,
// quoted from the published figures: "removing the GIL did not make
// handoffs cheaper (3.14t 5.22 vs 3.14 4.54 µs)"; "" where none is
// published.
func (c pyBuildCmp) published(k exp.ArmKey) string {
	ft, okFT := refText(c.refs.FT, k)
	gil, okGIL := refText(c.refs.GIL, k)
	if c.finding == "" || !okFT || !okGIL {
		return ""
	}
	f, g := publishedMicros(ft), publishedMicros(gil)
	if len(f) == 0 || len(f) != len(g) {
		return c.finding + " (" + pyPublishedVersion + "t " + ft + " vs " + pyPublishedVersion + " " + gil + ")"
	}
	what := ""
	if len(f) == 2 {
		what = "p50 / p99: "
	}
	return fmt.Sprintf("%s (%s%st %s vs %s %s µs)", c.finding, what, pyPublishedVersion, strings.Join(f, " / "),
		pyPublishedVersion, strings.Join(g, " / "))
}

// microsFigure is a figure in µs as the published texts write it:
// "4.64 µs", "5 096 µs" (thousands set apart by a space).
var microsFigure = regexp.MustCompile(`\b(\d{1,3}(?: \d{3})*(?:\.\d+)?) µs`)

// publishedMicros are the figures in µs of a published text, in its
// order, each as written there (never reformatted).
func publishedMicros(text string) []string {
	var out []string
	for _, m := range microsFigure.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}
