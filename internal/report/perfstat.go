package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// writePerfStat prints what the perf counters add to an experiment's
// table. Arms that share a Params["compare"] key are shown side by side in
// the layout of a two-column perf-stat comparison with a delta column (the
// first arm is the baseline); other arms with counters get one row each.
// Counters that could not be opened are listed once with their reason —
// never as 0.
func writePerfStat(w io.Writer, experiment string, arms []result.Arm) {
	groups := map[string][]result.Arm{}
	var keys []string
	var loose []result.Arm
	unsupported := map[string][]string{} // reason -> counter names
	for _, a := range arms {
		if a.Status != result.StatusOK {
			continue
		}
		for _, c := range a.Counters {
			if c.Unsupported != "" && !containsStr(unsupported[c.Unsupported], c.Name) {
				unsupported[c.Unsupported] = append(unsupported[c.Unsupported], c.Name)
			}
		}
		if k := a.Params["compare"]; k != "" {
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], a)
		} else if len(a.Counters) > 0 {
			loose = append(loose, a)
		}
	}
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		writeComparison(w, k, g[0], g[1])
	}
	if len(loose) > 0 {
		writeCounterRows(w, experiment, loose)
	}
	var reasons []string
	for r := range unsupported {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  counters unsupported here: %s — %s\n", strings.Join(unsupported[r], ", "), r)
	}
}

// statRow is one line of a comparison: a label and how to read it from an arm.
type statRow struct {
	label string
	get   func(a result.Arm) (float64, bool)
}

func metric(name string) func(a result.Arm) (float64, bool) {
	return func(a result.Arm) (float64, bool) { v, ok := a.Metrics[name]; return v, ok }
}

func counterPerOp(name string) func(a result.Arm) (float64, bool) {
	return func(a result.Arm) (float64, bool) {
		for _, c := range a.Counters {
			if c.Name == name && c.Unsupported == "" && c.PerOp != nil {
				return *c.PerOp, true
			}
		}
		return 0, false
	}
}

func comparisonRows(unit string) []statRow {
	rows := []statRow{
		{unit + " (wall)", func(a result.Arm) (float64, bool) { return a.Median, a.Median > 0 }},
		{"on-CPU ns/element", metric("oncpu-ns/element")},
		{"run-queue wait ns/element", metric("runq-wait-ns/element")},
		{"voluntary switches/ms", metric("voluntary-switches/ms")},
		{"involuntary switches/ms", metric("involuntary-switches/ms")},
		{"migrations/ms", metric("migrations/ms")},
	}
	for _, c := range []string{"task-clock", "context-switches", "cpu-migrations", "page-faults", "instructions", "cycles", "branch-misses", "LLC-load-misses", "dTLB-load-misses"} {
		rows = append(rows, statRow{c + "/op", counterPerOp(c)})
	}
	for _, m := range []string{"ipc", "llc-load-misses/1k-instructions", "dtlb-load-misses/1k-instructions", "branch-misses/1k-instructions"} {
		rows = append(rows, statRow{m, metric(m)})
	}
	return rows
}

func writeComparison(w io.Writer, key string, base, other result.Arm) {
	col := func(a result.Arm) string { return exp.LastSegment(a.Name) }
	table := [][]string{{key, col(base), col(other), "delta"}}
	for _, r := range comparisonRows(base.Unit) {
		b, ok1 := r.get(base)
		o, ok2 := r.get(other)
		if !ok1 && !ok2 {
			continue
		}
		row := []string{r.label, statCell(r.label, b, ok1), statCell(r.label, o, ok2), ""}
		if ok1 && ok2 && b != 0 {
			row[3] = fmt.Sprintf("%+.1f%%", 100*(o/b-1))
		}
		table = append(table, row)
	}
	fmt.Fprintln(w)
	textcol.Write(w, table, "  ", textcol.Middle)
}

func writeCounterRows(w io.Writer, experiment string, arms []result.Arm) {
	var names []string
	for _, a := range arms {
		for _, c := range a.Counters {
			if c.Unsupported == "" && !containsStr(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	head := []string{"counters per op"}
	for _, n := range names {
		if n == "task-clock" {
			n += " (CPU time)"
		}
		head = append(head, n)
	}
	table := [][]string{head}
	for _, a := range arms {
		row := []string{short(experiment, a.Name)}
		for _, n := range names {
			v, ok := counterPerOp(n)(a)
			row = append(row, statCell(n, v, ok))
		}
		table = append(table, row)
	}
	fmt.Fprintln(w)
	textcol.Write(w, table, "  ", textcol.Middle)
}

// statCell renders one figure in a human scale: times (ns-based rows and
// task-clock, which counts ns) as 38.4 µs, rare events per op as
// "1 per 1.4M", other figures as plain numbers.
func statCell(label string, v float64, ok bool) string {
	switch {
	case !ok:
		return "—"
	case strings.HasPrefix(label, "task-clock") || strings.HasPrefix(label, "ns/") || strings.Contains(label, " ns/"):
		return result.FormatNs(v)
	case v > 0 && v < 0.01:
		return "1 per " + result.FormatCount(1/v)
	}
	return statNum(v, ok)
}

func statNum(v float64, ok bool) string {
	switch {
	case !ok:
		return "—"
	case v == 0:
		return "0"
	case v >= 1e6 || v < 0.001 && v > -0.001:
		return fmt.Sprintf("%.3g", v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
