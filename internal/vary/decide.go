package vary

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/compare"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Significance says in words how compare decided a row: the U test's p
// from compare.CIReps() runs a side, else whether the ranges are apart,
// else that there are too few runs.
func Significance(r compare.Row) string {
	switch r.Method {
	case compare.MethodUTest:
		if r.Significant {
			return fmt.Sprintf("significant: p = %.2g, Mann-Whitney U over %d and %d runs", r.P, r.A.N, r.B.N)
		}
		return fmt.Sprintf("no significant difference: p = %.2g ≥ %.2g, Mann-Whitney U over %d and %d runs", r.P, r.Alpha, r.A.N, r.B.N)
	case compare.MethodRanges:
		if r.Significant {
			return fmt.Sprintf("significant: the ranges of %d and %d runs are apart, which happens 1 time in %.0f by chance", r.A.N, r.B.N, 1/compare.ApartChance(r.A.N, r.B.N))
		}
		return fmt.Sprintf("no significant difference: the ranges of %d and %d runs overlap", r.A.N, r.B.N)
	}
	return fmt.Sprintf("too few runs to tell (%d and %d; %d a side at least)", r.A.N, r.B.N, compare.MinRangeReps)
}

// Decision is the answer: the value with the best wall time (the best
// throughput with units of work), and each other value set against it by
// compare's statistics.
type Decision struct {
	Best    int  // index into the values; -1 when none finished
	PerUnit bool // decided by throughput (units per second)
	Rows    []compare.Row
	Others  []int // the values of Rows, in the same order
}

// Decide picks the value with the lowest median wall time (per unit of
// work when perUnit, the highest throughput) among the values that
// finished, and compares every other one with it (compare.Values, B
// against the best as A).
func Decide(vals []Value, perUnit bool) Decision {
	d := Decision{Best: -1, PerUnit: perUnit}
	for i, v := range vals {
		if v.OK() && (d.Best < 0 || v.Wall.Median < vals[d.Best].Wall.Median) {
			d.Best = i
		}
	}
	if d.Best < 0 {
		return d
	}
	best := vals[d.Best]
	for i, v := range vals {
		if i == d.Best || !v.OK() {
			continue
		}
		d.Rows = append(d.Rows, compare.Values(v.Point.Label(), "ns/op", best.Wall.Values, v.Wall.Values))
		d.Others = append(d.Others, i)
	}
	return d
}

// Significant says the best value differs significantly from every other
// finished one.
func (d Decision) Significant() bool {
	if d.Best < 0 || len(d.Rows) == 0 {
		return false
	}
	for _, r := range d.Rows {
		if !r.Significant {
			return false
		}
	}
	return true
}

// Lines is the decision in words.
func (d Decision) Lines(vals []Value) []string {
	if d.Best < 0 {
		return []string{"decision: none — no value finished a run"}
	}
	best := vals[d.Best]
	what, fig := "the best wall time", walls(best.Wall)
	if d.PerUnit {
		what, fig = "the best throughput", throughput(best.Wall)
	}
	if len(d.Rows) == 0 {
		return []string{fmt.Sprintf("decision: %s has %s (%s), but no other value finished to compare it with", best.Point.Label(), what, fig)}
	}
	var lines []string
	var same []string
	for i, r := range d.Rows {
		o := vals[d.Others[i]]
		of := walls(o.Wall)
		if d.PerUnit {
			of = throughput(o.Wall)
		}
		how := fmt.Sprintf("%.2f× the wall time", r.Ratio)
		if d.PerUnit {
			how = fmt.Sprintf("%.2f× the time per unit", r.Ratio)
		}
		lines = append(lines, fmt.Sprintf("  %s: %s, %s; %s", o.Point.Label(), of, how, Significance(r)))
		if !r.Significant {
			same = append(same, o.Point.Label())
		}
	}
	head := fmt.Sprintf("decision: %s has %s, %s", best.Point.Label(), what, fig)
	switch {
	case d.Significant():
		head += ", and every other value is significantly slower:"
	case undecided(d.Rows):
		head += fmt.Sprintf(", but with so few runs no difference can be called significant (--reps %d or more):", compare.MinRangeReps)
	case len(same) == len(d.Rows):
		head += ", but no significant difference from any other value: no difference between them is shown here:"
	default:
		head += fmt.Sprintf(", but no significant difference from %s:", strings.Join(same, ", "))
	}
	return append([]string{head}, lines...)
}

// undecided: every row had too few runs to decide.
func undecided(rows []compare.Row) bool {
	for _, r := range rows {
		if r.Method != compare.MethodTooFew {
			return false
		}
	}
	return true
}

// walls is a median wall time with its range.
func walls(s Stat) string { return FormatStat(KindNs, s) }

// throughput is units per second from a wall time per unit.
func throughput(s Stat) string {
	if s.Median <= 0 {
		return "no throughput"
	}
	r := func(ns float64) string { return result.FormatCount(1e9/ns) + "/s" }
	if len(s.Values) < 2 || s.Min <= 0 {
		return r(s.Median) + " units"
	}
	return fmt.Sprintf("%s units (%s–%s)", r(s.Median), r(s.Max), r(s.Min))
}
