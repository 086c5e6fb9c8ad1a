package experiments

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
)

// buildArm is a measured CPython arm of plan key k on interpreter tag,
// of version and build, its median ns with a ±2% spread.
func buildArm(k exp.ArmKey, tag, version, build string, ns float64) result.Arm {
	return result.Arm{Name: k.WithInterpreter(tag).String(), Experiment: k.Experiment, Substrate: "pythread",
		Mechanism: "simplequeue", Status: result.StatusOK, Median: ns, Min: ns * 0.98, Max: ns * 1.02, Placement: "unpinned",
		Params: map[string]string{exp.ParamPython: version, exp.ParamPythonBuild: build}}
}

func buildLines(arms ...result.Arm) string {
	v := exp.NewVerdictRun(&result.Run{Arms: arms})
	return strings.Join(append(pyBuildLines(v, pyBuildHandoff), pyBuildLines(v, pyBuildTail)...), "\n")
}

// The verdict's build comparison, from constructed arms (no timing): the
// free-threaded figure against the GIL one with both spreads, the ratio's
// direction, "about the same" within the verdict's one rule
// (exp.SameWithin), the published finding beside the rings, nothing from
// one build, and builds of two versions said to be across versions.
func TestPyBuildVerdict(t *testing.T) {
	ring := ringPyKey("pythread", "simplequeue", 100)
	gil := buildArm(ring, "3.13.5", "3.13.5", exp.BuildGIL, 17000)
	ft := buildArm(ring, "3.13.5t", "3.13.5", exp.BuildFreeThreaded, 41000)
	want := "  free-threaded 3.13.5t vs GIL 3.13.5: thread ring n=100 41 µs (40.2–41.8) vs 17 µs (16.7–17.3) per hop, 2.4× slower; " +
		"published: removing the GIL did not make handoffs cheaper (3.14t 5.22 vs 3.14 4.54 µs)"
	if got := buildLines(gil, ft); got != want {
		t.Errorf("both builds:\n got %q\nwant %q", got, want)
	}
	faster := buildArm(ring, "3.13.5t", "3.13.5", exp.BuildFreeThreaded, 8500)
	if got := buildLines(gil, faster); !strings.Contains(got, "8.5 µs (8.33–8.67) vs 17 µs (16.7–17.3) per hop, 2.0× faster;") {
		t.Errorf("a faster free-threaded build: %q", got)
	}
	near := buildArm(ring, "3.13.5t", "3.13.5", exp.BuildFreeThreaded, 17800) // spreads overlap, 1.05×
	if got := buildLines(gil, near); !strings.Contains(got, "per hop, about the same;") {
		t.Errorf("overlapping figures: %q", got)
	}
	if got := buildLines(gil); got != "" {
		t.Errorf("the GIL build alone: %q", got)
	}
	if got := buildLines(ft); got != "" {
		t.Errorf("the free-threaded build alone: %q", got)
	}
	older := buildArm(ring, "3.11.7", "3.11.7", exp.BuildGIL, 17000)
	if got := buildLines(older, ft); !strings.HasPrefix(got, "  free-threaded 3.13.5t vs GIL 3.11.7, across versions (3.13.5 vs 3.11.7), not a build comparison: thread ring n=100 41 µs") {
		t.Errorf("builds of two versions: %q", got)
	}
	if got := buildLines(older, gil, ft); strings.Contains(got, "3.11.7") || strings.Count(got, "\n") != 0 {
		t.Errorf("with the same version's GIL build there, the other version is not compared: %q", got)
	}
}

// Measured side by side (exp.Pair.Builds), the comparison is worded with
// the pair's interval; a task ring and the thread round trip, with no
// published free-threaded figure, have no published part; a busy-thread
// comparison gives p50 and p99.
func TestPyBuildVerdictPairedAndTail(t *testing.T) {
	rt := ppPlaced("pythread", "simplequeue", "same-cpu")
	gil, ft := buildArm(rt, "3.13.5", "3.13.5", exp.BuildGIL, 13800), buildArm(rt, "3.13.5t", "3.13.5", exp.BuildFreeThreaded, 57000)
	run := &result.Run{Arms: []result.Arm{gil, ft}, Experiments: []result.Experiment{{Name: "pingpong", Comparisons: []result.Comparison{{
		A: ft.Name, B: gil.Name, Rounds: 12, Paired: result.PairedReps, Basis: result.BasisWall, Answer: result.AnswerDiffer,
		Wall: result.Ratio{Ratio: 4.1, Lo: 3.9, Hi: 4.3}}}}}}
	got := strings.Join(pyBuildLines(exp.NewVerdictRun(run), pyBuildHandoff), "\n")
	want := "  free-threaded 3.13.5t vs GIL 3.13.5: thread round trip on one CPU 57 µs (55.9–58.1) vs 13.8 µs (13.5–14.1), 4.1× slower (3.9–4.3×, wall time, 12 rounds alternating by repetition)"
	if got != want {
		t.Errorf("paired:\n got %q\nwant %q", got, want)
	}
	busy := ifPyKey("pythread", "simplequeue", 1, "default", "cross-cpu")
	bg, bf := buildArm(busy, "3.13.5", "3.13.5", exp.BuildGIL, 6e6), buildArm(busy, "3.13.5t", "3.13.5", exp.BuildFreeThreaded, 50e3)
	bg.Placement, bf.Placement = "cross-cpu", "cross-cpu"
	if got := buildLines(bg, bf); got != "" {
		t.Errorf("no percentiles, no tail line: %q", got)
	}
	bg.Percentiles, bf.Percentiles = &result.Percentiles{P50: 6.33e6, P99: 20.2e6}, &result.Percentiles{P50: 45.7e3, P99: 138e3}
	want = "  free-threaded 3.13.5t vs GIL 3.13.5: busy-thread round trip (cross-cpu) p50 45.7 µs vs 6.33 ms, 139× faster; p99 138 µs vs 20.2 ms, 146× faster; " +
		"published: on the free-threaded build the busy thread made no difference (p50 / p99: 3.14t 6.7 / 16.2 vs 3.14 5 096 / 15 235 µs)"
	if got := buildLines(bg, bf); got != want {
		t.Errorf("tail:\n got %q\nwant %q", got, want)
	}
}

// The published figures beside a comparison are the experiment's own
// published texts' figures, each as written there, never adjusted.
func TestPyBuildPublishedQuoted(t *testing.T) {
	for _, cmps := range [][]pyBuildCmp{pyBuildHandoff, pyBuildTail} {
		for _, c := range cmps {
			for _, k := range c.keys {
				p := c.published(k)
				if c.finding == "" {
					if p != "" {
						t.Errorf("%s: published %q without a finding", k, p)
					}
					continue
				}
				ft, _ := refText(c.refs.FT, k)
				gil, _ := refText(c.refs.GIL, k)
				if p == "" || !strings.HasPrefix(p, c.finding+" (") {
					t.Errorf("%s: published %q", k, p)
				}
				for _, f := range append(publishedMicros(ft), publishedMicros(gil)...) {
					if !strings.Contains(p, f) {
						t.Errorf("%s: %q lacks the published %s", k, p, f)
					}
				}
			}
		}
	}
	if got := publishedMicros("median 5 096 µs, p99 15 235 µs (unpinned, 24 cores)"); strings.Join(got, "|") != "5 096|15 235" {
		t.Errorf("figures %q", got)
	}
}

// The builds a comparison pairs are named as the driver names them, and
// the pairs the runner measures side by side are the median comparisons,
// each declared by the experiment whose arm it is.
func TestPyBuildNamesAndPairs(t *testing.T) {
	if g, f := (&pydriver.Interpreter{}).Build(), (&pydriver.Interpreter{FreeThreaded: true}).Build(); g != exp.BuildGIL || f != exp.BuildFreeThreaded {
		t.Errorf("the driver's builds %q and %q, the verdict's %q and %q", g, f, exp.BuildGIL, exp.BuildFreeThreaded)
	}
	n := 0
	for _, name := range []string{"pingpong", "ring"} {
		spec, _ := exp.Lookup(name)
		pr, ok := exp.Hook[exp.Pairer](spec)
		if !ok {
			t.Fatalf("%s declares no pairs", name)
		}
		for _, p := range pr.Pairs() {
			if p.Builds {
				n++
				if exp.ExperimentOf(p.A) != name || p.B != "" {
					t.Errorf("%s declares %+v", name, p)
				}
			}
		}
	}
	if n != len(pyBuildHandoff) {
		t.Errorf("%d build pairs declared, want %d", n, len(pyBuildHandoff))
	}
}
