package report

import (
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// RefMatch is a reference figure beside our arm (Arm empty: the reference
// applies to the experiment as a whole).
type RefMatch struct {
	Arm  string
	Ours string
	Ref  exp.Reference
}

// Matches returns the published figures (SPEC §8) that experiment name
// declares (exp.Spec.References) for its arms: per arm where an arm
// matches, and figures about the experiment as a whole once, when it
// measured anything. An experiment this build does not know has none.
func Matches(name string, arms []result.Arm) []RefMatch {
	spec, ok := exp.Lookup(name)
	if !ok {
		return nil
	}
	var out []RefMatch
	for _, r := range spec.References {
		matched := false
		for _, a := range arms {
			if !measured(a) || !r.Matches(a) {
				continue
			}
			matched = true
			if !r.PerArm() {
				break // experiment-wide: shown once below
			}
			out = append(out, RefMatch{Arm: a.Name, Ours: result.FormatValue(a.Median, a.Unit), Ref: r})
		}
		if matched && !r.PerArm() {
			out = append(out, RefMatch{Ref: r})
		}
	}
	return out
}
