// Package report renders results: the terminal table and JSON (and later
// csv, markdown, bench, html). It never measures; it only reads the result
// model, so any stored or imported run renders the same way.
package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// Formats are the output formats Write accepts.
var Formats = []string{"table", "json", "csv", "markdown", "bench", "html"}

// Write renders run in format.
func Write(w io.Writer, run *result.Run, format string) error {
	if format != "json" && format != "html" { // JSON and HTML escape for themselves
		run = termsafe.Strings(run) // names and warnings may come from an imported file
	}
	switch format {
	case "table", "":
		// The answer first, then the evidence.
		if err := Verdict(w, run); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return Table(w, run)
	case "json": // lossless, with C1 and bidi controls as \u escapes
		return run.Write(termsafe.JSON(w))
	case "csv":
		return CSV(w, run)
	case "markdown":
		return Markdown(w, run)
	case "bench":
		return Bench(w, run)
	case "html":
		return HTML(w, run)
	}
	return fmt.Errorf("unknown format %q (have %s)", format, strings.Join(Formats, ", "))
}

const barWidth = 20

// tailRatio is how far a median (a mean per op) may stand above the
// sampled p50 before the table explains the difference.
const tailRatio = 1.5

// The words the table puts after an arm's bar where its p50 needs them,
// each explained once under the table (no symbol a reader must look up).
const (
	slowTailMark   = "slow tail"   // the median stands above tailRatio × p50
	clockBoundMark = "clock-bound" // p50 below 10× the clock's cost
)

// Table prints one block per experiment: aligned columns with scaled
// units, each arm's multiple of the experiment's fastest arm (per op kind)
// and a bar, then the checks, findings and notes.
func Table(w io.Writer, run *result.Run) error {
	fmt.Fprintf(w, "ctxlab %s · %s · %s · %d CPUs (%s)%s · Go %s%s · clock %.0f ns/read%s\n",
		run.Version, run.Env.Hostname, run.Env.Kernel, run.Env.LogicalCPUs, run.Env.CPUModel,
		virt(run.Env), run.GoVersion, cgoMark(run.Env), run.ClockCostNs, syscallText(run))
	groups := map[string][]result.Arm{}
	var order []string
	for _, a := range run.Arms {
		if _, ok := groups[a.Experiment]; !ok {
			order = append(order, a.Experiment)
		}
		groups[a.Experiment] = append(groups[a.Experiment], a)
	}
	exps := map[string]result.Experiment{}
	for _, e := range run.Experiments {
		exps[e.Name] = e
	}
	shared := sharedNoise(run.Arms)
	if len(shared) > 0 {
		fmt.Fprintf(w, "noisy (said once, not per arm): %s\n", strings.Join(shared, "; "))
	}
	for _, name := range order {
		arms := groups[name]
		e := exps[name]
		op := e.Op
		if op == "" && len(arms) > 0 {
			op = arms[0].Op
		}
		fmt.Fprintf(w, "\n%s — op: %s\n", name, op)
		writeArms(w, name, arms, shared)
		writePerfStat(w, name, arms)
		writeHistograms(w, name, arms)
		writeChecks(w, e.Checks)
		for _, f := range e.Findings {
			fmt.Fprintf(w, "  → %s\n", f)
		}
		writeComparisons(w, e)
	}
	if run.Interrupted {
		fmt.Fprintln(w, "\ninterrupted: the table holds the arms that finished")
	}
	return nil // the run's warnings close the verdict, which comes first
}

func virt(e result.Env) string {
	if e.Hypervisor {
		return ", VM"
	}
	return ""
}

// cgoMark marks a cgo build, whose glibc-started threads make thread
// handoffs read higher than a CGO_ENABLED=0 build's.
func cgoMark(e result.Env) string {
	if e.CgoEnabled == "1" {
		return " (cgo)"
	}
	return ""
}

// syscallText is the calibrated system call and what Go's runtime-aware
// path adds to it (what a Go program pays on each blocking call; see
// measure.SyscallPath for which arms pay it).
func syscallText(run *result.Run) string {
	if run.SyscallNs <= 0 {
		return ""
	}
	return fmt.Sprintf(" · syscall %s, +%s through Go's runtime", result.FormatNs(run.SyscallNs), result.FormatNs(run.SyscallPathNs))
}

// sharedNoise are the noise reasons that more than one arm gives: the
// table says them once at the top instead of under every arm.
func sharedNoise(arms []result.Arm) []string {
	count := map[string]int{}
	var out []string
	for _, a := range arms {
		for _, r := range a.Noise.Reasons {
			count[r]++
			if count[r] == 2 {
				out = append(out, r)
			}
		}
	}
	return out
}

// writeArms is an experiment's table of arms: each arm's figures, its
// multiple of the fastest arm of its unit and a bar, then the notes under
// the table (noise that is the arm's own, the arms' notes, failures) and
// what the marks mean.
func writeArms(w io.Writer, experiment string, arms []result.Arm, shared []string) {
	// Fastest per unit, so ratios compare like with like.
	fastest, slowest := map[string]float64{}, map[string]float64{}
	for _, a := range arms {
		if a.Status == result.StatusOK && a.Median > 0 {
			if f, ok := fastest[a.Unit]; !ok || a.Median < f {
				fastest[a.Unit] = a.Median
			}
		}
		if a.Status == result.StatusOK && a.Median > slowest[a.Unit] {
			slowest[a.Unit] = a.Median
		}
	}
	rows := [][]string{{"arm", "median", "min–max", "p50", "p99", "sw/op vol+inv", "migr/op", "×fastest", ""}}
	var notes []string
	tail := false
	for _, a := range arms {
		name := short(experiment, a.Name)
		if a.Status == result.StatusTooFewOps { // its figures are no answer: the reason goes under the table
			rows = append(rows, []string{name, a.Status, "", "", "", "", "", "", ""})
			notes = append(notes, armNotes(a, name, shared)...)
			continue
		}
		if a.Status != result.StatusOK && a.Median == 0 {
			rows = append(rows, []string{name, a.Status, a.Reason, "", "", "", "", "", ""})
			continue
		}
		row, slow := armRow(a, name, fastest[a.Unit], slowest[a.Unit])
		tail = tail || slow
		rows = append(rows, row)
		notes = append(notes, armNotes(a, name, shared)...)
	}
	textcol.Write(w, rows, "  ", textcol.Middle)
	sort.Strings(notes)
	for _, n := range dedupe(notes) {
		fmt.Fprintf(w, "  · %s\n", n)
	}
	if tail {
		fmt.Fprintf(w, "  %s: median more than %.1f× the sampled p50: the median is of means per op (total time ÷ ops), which carry the slow tail (p99); p50 is the typical op\n", slowTailMark, tailRatio)
	}
	for _, a := range arms {
		if a.Percentiles != nil && a.Percentiles.NearClock {
			fmt.Fprintf(w, "  %s: p50 is below 10× the clock's cost: per-op percentiles are dominated by the timestamps\n", clockBoundMark)
			break
		}
	}
}

// armRow is a measured arm's row of the table, its multiple of fastest
// and its bar against slowest (of its unit), and the marks after the bar;
// slowTail says it carries the slow-tail mark.
func armRow(a result.Arm, name string, fastest, slowest float64) (row []string, slowTail bool) {
	row = []string{name, result.FormatValue(a.Median, a.Unit),
		result.FormatValue(a.Min, a.Unit) + "–" + result.FormatValue(a.Max, a.Unit), "", "", "", "", "", ""}
	var marks []string // words, explained once under the table
	if p := a.Percentiles; p != nil {
		row[3], row[4] = result.FormatNs(p.P50), result.FormatNs(p.P99)
		if p.NearClock {
			marks = append(marks, clockBoundMark)
		}
		if p.Samples > 0 && p.P50 > 0 && a.Median/p.P50 > tailRatio && (a.Unit == "" || a.Unit == "ns/op") {
			marks = append(marks, slowTailMark)
			slowTail = true
		}
	}
	if s := a.Switches; s != nil {
		row[5] = fmt.Sprintf("%.2f+%.2f", s.Voluntary, s.Involuntary)
	}
	if a.Migrations != nil {
		row[6] = fmt.Sprintf("%.2f", *a.Migrations)
	}
	if fastest > 0 {
		row[7] = fmt.Sprintf("%.1f×", a.Median/fastest)
		row[8] = bar(a.Median, slowest)
	}
	if a.Status != result.StatusOK {
		row[8] += " " + a.Status
	}
	for _, m := range marks {
		row[8] += " " + m
	}
	if a.Noise.Noisy {
		row[8] += " noisy"
	}
	return row, slowTail
}

// armNotes are what the table says under it about arm a: the noise
// reasons that are its own (not shared), its notes, and why it failed.
func armNotes(a result.Arm, name string, shared []string) []string {
	var notes []string
	if a.Noise.Noisy {
		var own []string
		for _, r := range a.Noise.Reasons {
			if !containsStr(shared, r) {
				own = append(own, r)
			}
		}
		if len(own) > 0 {
			notes = append(notes, fmt.Sprintf("%s is noisy: %s", name, strings.Join(own, "; ")))
		}
	}
	for _, n := range a.Notes {
		notes = append(notes, name+": "+n)
	}
	if a.Status != result.StatusOK && a.Reason != "" {
		notes = append(notes, name+": "+a.Status+": "+a.Reason)
	}
	return notes
}

func dedupe(xs []string) []string {
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func writeChecks(w io.Writer, checks []result.Check) {
	if len(checks) == 0 {
		return
	}
	fmt.Fprintln(w, "  checks:")
	for _, c := range checks {
		mark := "✓ holds"
		switch {
		case c.Skipped:
			mark = "- skipped"
		case !c.Holds:
			mark = "✗ does not hold"
		}
		fmt.Fprintf(w, "    %-16s %s — %s\n", mark, c.Name, c.Detail)
	}
}

// bar is a horizontal bar proportional to v/max (at least one block, so
// every measured arm shows).
func bar(v, max float64) string {
	if v <= 0 || max <= 0 {
		return ""
	}
	n := int(float64(barWidth)*v/max + 0.5)
	if n < 1 {
		n = 1
	}
	return strings.Repeat("█", n)
}
