package report

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// fewOpsName is the arm the verdict's indirect-cost line reads at T ≫
// cores, and the one the issue saw shown from 3 ops per repetition.
const fewOpsName = "cachecost/sweep/seq/W=8MiB/T=32"

const fewOpsReason = "only 3 ops per repetition (< 10): sizing found 20 ms an op, so 10 would last 200 ms, over the 150 ms a repetition may"

// fewOpsRun is the real quick run with fewOpsName's repetitions holding
// too few ops: every figure of it a sentinel that no output may show
// (7.78 ms, 77.77 switches), and every experiment's checks and findings
// read again from the arms as the runner would have.
func fewOpsRun(t *testing.T) *result.Run {
	t.Helper()
	run := loadRunFile(t, "quick.json")
	a := run.Find(fewOpsName)
	if a == nil {
		t.Fatalf("%s not in quick.json", fewOpsName)
	}
	const s = 7_777_777
	a.Status, a.Reason, a.Ops = result.StatusTooFewOps, fewOpsReason, 3
	a.RepMeans, a.Median, a.Min, a.Max = []float64{s, s, s}, s, s, s
	a.Percentiles = &result.Percentiles{Samples: 9, P50: s, P90: s, P95: s, P99: s, P999: s, Max: s}
	a.Histogram = []result.Bucket{{LowNs: s - 1, HighNs: s + 1, Count: 9}}
	a.Switches = &result.Switches{Voluntary: 77.77}
	for k := range a.Metrics {
		a.Metrics[k] = s
	}
	for i, e := range run.Experiments {
		if spec, ok := exp.Lookup(e.Name); ok && spec.Findings != nil && spec.Checks != nil {
			run.Experiments[i].Checks, run.Experiments[i].Findings = spec.Checks(run.Arms), spec.Findings(run.Arms)
		}
	}
	return run
}

// noSentinel fails where out shows a figure of the too-few-ops arm.
func noSentinel(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range []string{"7.78 ms", "7778 µs", "7777777", "77.77"} {
		if strings.Contains(out, s) {
			t.Errorf("%s shows %q, a figure of an arm with too few ops:\n%s", what, s, out)
		}
	}
}

// flat is text with its line breaks and wrapping indents as single spaces.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// An arm below the runner's minimum ops shows "too few ops" with its
// reason in the suite's verdict, the full table, a selection's compact
// table, the HTML report, markdown and bench, and never a figure.
func TestTooFewOpsShowsNoFigure(t *testing.T) {
	run := fewOpsRun(t)
	screen := strings.Join(VerdictLines(run, true, VerdictWidth), "\n")
	noSentinel(t, "the verdict", screen)
	if !strings.Contains(screen, "8 MiB each, 2 → 32 threads: wall 1.88 ns (1.58–2.63) → too few ops") {
		t.Errorf("the verdict's indirect-cost line does not say too few ops:\n%s", screen)
	}
	if !strings.Contains(flat(screen), "too few ops, so no figure: "+fewOpsName+" — "+fewOpsReason) {
		t.Errorf("the verdict does not say why:\n%s", screen)
	}

	var table bytes.Buffer
	if err := Table(&table, run); err != nil {
		t.Fatal(err)
	}
	noSentinel(t, "the table", table.String())
	for _, want := range []string{"sweep/seq/W=8MiB/T=32        too few ops\n", "sweep/seq/W=8MiB/T=32: too few ops: " + fewOpsReason} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q", want)
		}
	}

	custom := *run
	custom.Suite = "custom" // a selection: compact tables
	compact := strings.Join(VerdictLines(&custom, true, VerdictWidth), "\n")
	noSentinel(t, "the compact table", compact)
	row := regexpLine(compact, "sweep/seq/W=8MiB/T=32 ")
	if !strings.Contains(row, "too few ops") {
		t.Errorf("the compact table's row %q does not say too few ops:\n%s", row, compact)
	}
	if !strings.Contains(flat(compact), "too few ops: sweep/seq/W=8MiB/T=32 — "+fewOpsReason) {
		t.Errorf("the compact table does not say why:\n%s", compact)
	}

	for _, format := range []string{"html", "markdown", "bench"} {
		var b bytes.Buffer
		if err := Write(&b, run, format); err != nil {
			t.Fatal(err)
		}
		noSentinel(t, format, b.String())
		if !strings.Contains(flat(html.UnescapeString(b.String())), fewOpsReason) {
			t.Errorf("%s does not say why %s has no figure", format, fewOpsName)
		}
	}
}

// regexpLine is the first line of s that contains sub.
func regexpLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
