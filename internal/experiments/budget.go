package experiments

import (
	"slices"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What a rate of ops costs in CPU, the one way pingpong's verdict line and
// `ctxlab budget` price an arm: its on-CPU time per op (price.CPUPerOp:
// every participant's, never the wall time) × the rate, as a share of one
// core.

// Priced is one arm's CPU at a rate of ops per second.
type Priced struct {
	Arm    result.Arm
	PerOp  float64 // on-CPU ns per op
	Source string  // where PerOp comes from (price.CPUPerOp)
	Share  float64 // of one core: PerOp × rate; above 1 is more than a core
}

// PriceAt prices a at rate ops per second; ok is false when the arm
// recorded no CPU time per op.
func PriceAt(a result.Arm, rate float64) (Priced, bool) {
	c, src, ok := price.CPUPerOp(a)
	if !ok {
		return Priced{}, false
	}
	return priced(a, c, src, rate), true
}

// PriceByWall prices a by its wall time per op, for a run that recorded
// no CPU time at all: source says so.
func PriceByWall(a result.Arm, rate float64, source string) Priced {
	return priced(a, a.Median, source, rate)
}

func priced(a result.Arm, perOp float64, source string, rate float64) Priced {
	return Priced{Arm: a, PerOp: perOp, Source: source, Share: perOp * rate / 1e9}
}

// PriceSources are the distinct sources of ps, in order.
func PriceSources(ps []Priced) []string {
	var out []string
	for _, p := range ps {
		if !slices.Contains(out, p.Source) {
			out = append(out, p.Source)
		}
	}
	return out
}
