package report

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// ComparisonLine is one comparison measured side by side, for the tables,
// markdown, the HTML report and compare: "threads vs goroutines
// (pingpong/thread/futex/same-cpu ÷ pingpong/goroutine/chan/gomaxprocs=1):
// 13× slower (11.5–16.1×, CPU time, 12 rounds alternating by repetition);
// wall 12.1× (10.5–14.8×)", and its note. One that could not be measured
// says why.
func ComparisonLine(c result.Comparison) string {
	head := fmt.Sprintf("%s (%s ÷ %s): ", c.Label, c.A, c.B)
	if c.Rounds == 0 {
		return head + orDash(c.Note)
	}
	l := head + exp.PairWords(c, "slower", "faster")
	if other := otherBasis(c); other != "" {
		l += "; " + other
	}
	if c.Note != "" {
		l += "; " + c.Note
	}
	return l
}

// otherBasis is the ratio the verdict does not state, in short: "wall
// 12.1× (10.5–14.8×)" beside a CPU-time answer (whose words have the
// wall ratio alone), and the CPU one beside a wall-time answer (runs
// stored before every comparison with both CPU times stated that one).
func otherBasis(c result.Comparison) string {
	r, name := c.CPU, "CPU time"
	if c.Basis == result.BasisCPU {
		r, name = &c.Wall, "wall interval"
	}
	if r == nil || r.Ratio <= 0 {
		return ""
	}
	if c.Basis == result.BasisCPU {
		return fmt.Sprintf("%s %.3g–%.3g×", name, r.Lo, r.Hi)
	}
	return fmt.Sprintf("%s %.3g× (%.3g–%.3g×)", name, r.Ratio, r.Lo, r.Hi)
}

// comparisonLines are an experiment's comparisons, each prefixed.
func comparisonLines(e result.Experiment, prefix string) []string {
	var out []string
	for _, c := range e.Comparisons {
		out = append(out, prefix+ComparisonLine(c))
	}
	return out
}

// writeComparisons writes an experiment's comparisons under its table.
func writeComparisons(w interface{ Write([]byte) (int, error) }, e result.Experiment) {
	if len(e.Comparisons) == 0 {
		return
	}
	fmt.Fprintln(w, "  side by side (the two arms taking turns, ratio of the first over the second):")
	fmt.Fprintln(w, strings.Join(comparisonLines(e, "    "), "\n"))
}
