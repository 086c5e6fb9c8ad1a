package compare

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/result"
)

// PairRow is one comparison measured side by side in both runs (a
// result.Comparison with the same two arms): each run's stated ratio with
// its interval and basis, and whether the two intervals are apart.
type PairRow struct {
	Label string       `json:"label"`
	ArmA  string       `json:"arm_a"` // the comparison's first arm (the numerator)
	ArmB  string       `json:"arm_b"`
	A     result.Ratio `json:"a"`
	B     result.Ratio `json:"b"`
	// BasisA and BasisB are the bases the runs stated (cpu time, wall time).
	BasisA string `json:"basis_a"`
	BasisB string `json:"basis_b"`
	// Apart: the two runs' intervals do not overlap.
	Apart bool `json:"apart"`
}

// pairRows are the comparisons with a ratio in both runs, in a's order.
func pairRows(a, b *result.Run) []PairRow {
	inB := map[[2]string]result.Comparison{}
	for _, e := range b.Experiments {
		for _, c := range e.Comparisons {
			if c.Rounds > 0 {
				inB[[2]string{c.A, c.B}] = c
			}
		}
	}
	var out []PairRow
	for _, e := range a.Experiments {
		for _, ca := range e.Comparisons {
			cb, ok := inB[[2]string{ca.A, ca.B}]
			if ca.Rounds == 0 || !ok {
				continue
			}
			ra, rb := ca.Stated(), cb.Stated()
			out = append(out, PairRow{Label: ca.Label, ArmA: ca.A, ArmB: ca.B, A: ra, B: rb, BasisA: ca.Basis, BasisB: cb.Basis,
				Apart: ra.Hi < rb.Lo || rb.Hi < ra.Lo})
		}
	}
	return out
}

// String is the row in one line: "threads vs goroutines: A 13× (11.5–16.1×,
// cpu time) · B 14× (12–15×, cpu time), the same within the intervals".
func (p PairRow) String() string {
	r := func(x result.Ratio, basis string) string {
		return fmt.Sprintf("%.3g× (%.3g–%.3g×, %s)", x.Ratio, x.Lo, x.Hi, basis)
	}
	verdict := "the intervals overlap"
	if p.Apart {
		verdict = "the intervals are apart"
	}
	return fmt.Sprintf("%s: A %s · B %s, %s", p.Label, r(p.A, p.BasisA), r(p.B, p.BasisB), verdict)
}
