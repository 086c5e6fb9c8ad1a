package exp

import (
	"strconv"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Comparison is the run's comparison of arm a against arm b measured side
// by side (result.Experiment.Comparisons), if it has a ratio.
func (v *VerdictRun) Comparison(a, b string) (result.Comparison, bool) {
	for _, e := range v.Run.Experiments {
		for _, c := range e.Comparisons {
			if c.A == a && c.B == b && c.Rounds > 0 {
				return c, true
			}
		}
	}
	return result.Comparison{}, false
}

// PairWords words a comparison measured side by side the way Compare
// words two figures, with its interval, basis and pairing: "15× slower
// (14–16×, CPU time; wall 12× slower, 12 paired bursts)", "about the same
// (0.97–1.04×, wall time, 12 rounds by repetition)", and "undecided, 1.2×
// slower (0.98–1.3×, …)" where the interval straddles the two answers. A
// CPU-time answer has the wall time's ratio beside it: what the machine
// made the arms wait is in that one.
func PairWords(c result.Comparison, more, less string) string {
	r := c.Stated()
	lo, hi, x, word := r.Lo, r.Hi, r.Ratio, more
	if x < 1 {
		lo, hi, x, word = 1/r.Hi, 1/r.Lo, 1/r.Ratio, less
	}
	how := strconv.Itoa(c.Rounds) + " paired bursts"
	if c.Paired == result.PairedReps {
		how = strconv.Itoa(c.Rounds) + " rounds alternating by repetition"
	}
	basis := c.Basis
	if basis == result.BasisCPU {
		basis = "CPU time"
		switch w := c.Wall.Ratio; {
		case w >= 1/SameWithin && w <= SameWithin:
			basis += "; wall about the same"
		case w > 1:
			basis += "; wall " + Multiple(w) + " " + more
		case w > 0:
			basis += "; wall " + Multiple(1/w) + " " + less
		}
	}
	interval := " (" + plainNumber(lo) + "–" + plainNumber(hi) + "×, " + basis + ", " + how + ")"
	switch c.Answer {
	case result.AnswerSame:
		return "about the same" + interval
	case result.AnswerDiffer:
		return Multiple(x) + " " + word + interval
	}
	return "undecided, " + Multiple(x) + " " + word + interval
}
