package vary

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
)

// Comparisons are the decision's rows as comparisons measured side by
// side: the values took turns round by round, each round in a new shuffled
// order, so each round pairs one run of the other value with one of the
// best; the ratio is the median of the rounds' ratios (the other's wall
// time over the best's, per unit of work when known), with its interval.
// A row whose values share fewer than two finished rounds has none.
func (a *Analysis) Comparisons() []result.Comparison {
	d := a.Decision
	if d.Best < 0 {
		return nil
	}
	best := a.Values[d.Best]
	var out []result.Comparison
	for _, i := range d.Others {
		o := a.Values[i]
		x, y := byRound(o), byRound(best)
		var ox, by []float64
		for r, w := range x {
			if v, ok := y[r]; ok {
				ox, by = append(ox, w), append(by, v)
			}
		}
		ratio, lo, hi, n := measure.PairedRatio(ox, by)
		if n < 2 {
			continue
		}
		c := result.Comparison{Label: fmt.Sprintf("%s vs %s", o.Point.Label(), best.Point.Label()),
			A: o.Point.ArmName(), B: best.Point.ArmName(), Paired: result.PairedReps, Rounds: n,
			Wall: result.Ratio{Ratio: ratio, Lo: lo, Hi: hi}, Basis: result.BasisWall}
		c.Answer = runner.PairAnswer(c.Wall)
		out = append(out, c)
	}
	return out
}

// byRound is a value's wall time of each finished run by its round.
func byRound(v Value) map[int]float64 {
	m := map[int]float64{}
	for i, s := range v.OKRuns {
		if i < len(v.Wall.Values) {
			m[s.Round] = v.Wall.Values[i]
		}
	}
	return m
}
