package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// Markdown writes the run as GitHub-flavoured markdown: the environment in
// one line, then per experiment a table of arms, the checks and findings,
// ready to paste into an issue or a README.
func Markdown(w io.Writer, run *result.Run) error {
	fmt.Fprintf(w, "# ctxlab run %s\n\n", run.ID)
	fmt.Fprintf(w, "ctxlab %s · %s · %s · %d CPUs (%s)%s · Go %s%s%s · suite %s · %s\n",
		run.Version, run.Env.Hostname, run.Env.Kernel, run.Env.LogicalCPUs, run.Env.CPUModel,
		virt(run.Env), run.GoVersion, cgoMark(run.Env), syscallText(run), run.Suite, run.Time.UTC().Format("2006-01-02 15:04 UTC"))
	exps := experimentIndex(run)
	for _, name := range experimentOrder(run) {
		arms := armsOf(run, name)
		e := exps[name]
		op := e.Op
		if op == "" && len(arms) > 0 {
			op = arms[0].Op
		}
		fmt.Fprintf(w, "\n## %s\n\nop: %s\n\n", name, op)
		fmt.Fprintln(w, "| arm | median | min–max | p50 | p99 | switches/op | migr/op | status |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|")
		for _, a := range arms {
			cells := append(append([]string{short(name, a.Name)}, mdFigures(a)...), a.Status)
			if a.Noise.Noisy {
				cells[7] += " (noisy)"
			}
			if a.Reason != "" {
				cells[7] += ": " + a.Reason
			}
			for i := range cells {
				cells[i] = mdEscape(cells[i])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		if len(e.Checks) > 0 {
			fmt.Fprintln(w, "\nChecks:")
			for _, c := range e.Checks {
				fmt.Fprintf(w, "- %s **%s** — %s\n", checkMark(c), mdEscape(c.Name), mdEscape(c.Detail))
			}
		}
		if len(e.Findings) > 0 {
			fmt.Fprintln(w)
			for _, f := range e.Findings {
				fmt.Fprintf(w, "> %s\n", mdEscape(f))
			}
		}
		if len(e.Comparisons) > 0 {
			fmt.Fprintln(w, "\nSide by side (the two arms taking turns; ratio of the first over the second):")
			for _, l := range comparisonLines(e, "") {
				fmt.Fprintf(w, "- %s\n", mdEscape(l))
			}
		}
	}
	for _, wn := range run.Warnings {
		fmt.Fprintf(w, "\n*warning: %s*\n", mdEscape(wn))
	}
	return nil
}

func mdEscape(s string) string { return termsafe.MarkdownCell(s) }

func checkMark(c result.Check) string {
	switch {
	case c.Skipped:
		return "skipped"
	case c.Holds:
		return "holds ✓"
	}
	return "does not hold ✗"
}

// experimentOrder lists experiments in the order their first arm appears.
func experimentOrder(run *result.Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range run.Arms {
		if !seen[a.Experiment] {
			seen[a.Experiment] = true
			out = append(out, a.Experiment)
		}
	}
	return out
}

func armsOf(run *result.Run, experiment string) []result.Arm {
	var out []result.Arm
	for _, a := range run.Arms {
		if a.Experiment == experiment {
			out = append(out, a)
		}
	}
	return out
}

func experimentIndex(run *result.Run) map[string]result.Experiment {
	m := map[string]result.Experiment{}
	for _, e := range run.Experiments {
		m[e.Name] = e
	}
	return m
}

// mdFigures are an arm's figure cells: median, min–max, p50, p99,
// switches and migrations per op; all empty for an arm whose repetitions
// held too few ops, which are no answer (its status cell says why).
func mdFigures(a result.Arm) []string {
	cells := make([]string, 6)
	if a.Status == result.StatusTooFewOps {
		return cells
	}
	if a.Status == result.StatusOK || a.Median > 0 {
		cells[0] = result.FormatValue(a.Median, a.Unit)
		cells[1] = result.FormatValue(a.Min, a.Unit) + "–" + result.FormatValue(a.Max, a.Unit)
	}
	if p := a.Percentiles; p != nil {
		cells[2], cells[3] = result.FormatNs(p.P50), result.FormatNs(p.P99)
	}
	if s := a.Switches; s != nil {
		cells[4] = fmt.Sprintf("%.2f", s.Total())
	}
	if a.Migrations != nil {
		cells[5] = fmt.Sprintf("%.2f", *a.Migrations)
	}
	return cells
}
