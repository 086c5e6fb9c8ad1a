package experiments

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// pyRefs are an experiment's published figures (SPEC §8) for its CPython
// arms, by the arms' keys in its plan (without --python all's
// interpreter): GIL the default build's, FT a free-threaded build's where
// published. tail shows an arm's p50 and p99 beside them rather than its
// median, switches its OS switches per op too.
type pyRefs struct {
	GIL, FT        []pyRef
	tail, switches bool
}

// pyRef is one arm's published figure.
type pyRef struct {
	key  exp.ArmKey
	text string
}

// text is the figure published for the arm k names in the plan, if any.
func refText(refs []pyRef, k exp.ArmKey) (string, bool) {
	for _, r := range refs {
		if r.key.Equal(k) {
			return r.text, true
		}
	}
	return "", false
}

// hasFT says whether a free-threaded build's figure is published for k.
func (r pyRefs) hasFT(k exp.ArmKey) bool {
	_, ok := refText(r.FT, k)
	return ok
}

// keys are every arm the figures are published for.
func (r pyRefs) keys() []exp.ArmKey {
	var out []exp.ArmKey
	for _, refs := range [][]pyRef{r.GIL, r.FT} {
		for _, x := range refs {
			out = append(out, x.key)
		}
	}
	return out
}

// pyReferenceSource says where the figures come from.
const pyReferenceSource = "CPython 3.14 on 24-core Linux unless noted (README: Published figures)"

// findings puts the published figure beside each CPython arm that
// measured, and says where a free-threaded arm could not run.
func (r pyRefs) findings(arms []result.Arm) []string {
	var refs []string
	for _, a := range arms {
		k := keyOf(a)
		placeholder := k.Interpreter == freeThreadedTag
		ref, has := refText(r.GIL, k.Plan())
		ft, hasFT := refText(r.FT, k.Plan())
		if hasFT && (a.Params["gil"] == "disabled" || placeholder) {
			ref, has = ft, true
		}
		if !has {
			continue
		}
		if a.Status == result.StatusUnsupported && placeholder {
			refs = append(refs, fmt.Sprintf("%s: unsupported: %s; published %s", a.Name, a.Reason, ref))
			continue
		}
		if a.Status != result.StatusOK {
			continue
		}
		here := result.FormatNs(a.Median)
		if a.Percentiles != nil && r.tail {
			here = "median " + result.FormatNs(a.Percentiles.P50) + ", p99 " + result.FormatNs(a.Percentiles.P99)
		}
		if a.Switches != nil && r.switches {
			here += fmt.Sprintf(", %.1f OS switches", a.Switches.Total())
		}
		line := fmt.Sprintf("%s: here %s; published %s", a.Name, here, ref)
		if notComparable(a) {
			line += " — not comparable: this arm carries harness cost the published plain loop did not (its note says which)"
		}
		refs = append(refs, line)
	}
	if len(refs) == 0 {
		return nil
	}
	return append([]string{"published figures for the CPython arms, " + pyReferenceSource + ", beside ours:"}, refs...)
}

// notComparable reports whether the driver said that the arm carries
// harness cost a plain loop (the published figures') would not: its notes
// then start with "not comparable".
func notComparable(a result.Arm) bool {
	for _, n := range a.Notes {
		if strings.HasPrefix(n, "not comparable") {
			return true
		}
	}
	return false
}
