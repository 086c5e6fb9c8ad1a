package price

import (
	"fmt"
	"math"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Refill is the indirect cost of one switch for a thread whose working set
// is Bytes, read off a run's refill curve (IndirectCurve): interpolated
// linearly between the two measured points around it; below the smallest,
// on the line from no cost at 0 bytes to it; above the largest, that
// point's cost scaled by size (an extrapolation: Beyond). A point that
// read below 0 is noise around no cost, and counts as 0; a point below a
// smaller working set's is noise too (refilling more cannot cost less),
// and counts as that one's figure: the curve is read as non-decreasing.
type Refill struct {
	Ns     float64
	Bytes  int64
	RunID  string
	Lo, Hi exp.CostPoint // Lo.Bytes == 0 below the smallest point; Lo == Hi beyond the largest
	Beyond bool
	// Calibrated says the curve was measured now, not read from a stored run.
	Calibrated bool
}

// RefillAt is the Refill of a working set of bytes on run's curve; ok is
// false when run has no curve or bytes is not above 0.
func RefillAt(run *result.Run, bytes int64) (Refill, bool) {
	c := IndirectCurve(run)
	if len(c) == 0 || bytes <= 0 {
		return Refill{}, false
	}
	r := Refill{Bytes: bytes, RunID: run.ID}
	lo := exp.CostPoint{}
	for _, p := range c {
		p.Ns = math.Max(p.Ns, lo.Ns) // ≥ 0, and non-decreasing
		if p.Bytes >= bytes {
			r.Lo, r.Hi = lo, p
			f := float64(bytes-lo.Bytes) / float64(p.Bytes-lo.Bytes)
			r.Ns = lo.Ns + f*(p.Ns-lo.Ns)
			return r, true
		}
		lo = p
	}
	r.Lo, r.Hi, r.Beyond = lo, lo, true
	r.Ns = lo.Ns * float64(bytes) / float64(lo.Bytes)
	return r, true
}

// Source says where the figure comes from: the arms, their figures and
// the run, and how it was read off them.
func (r Refill) Source() string {
	in := "in run " + r.RunID
	if r.Calibrated {
		in = "measured now (a brief calibration, a busy machine reads high)"
	}
	pt := func(p exp.CostPoint) string { return fmt.Sprintf("%s (%s)", p.Arm, result.FormatNs(p.Ns)) }
	switch {
	case r.Beyond:
		return fmt.Sprintf("%s %s, scaled by size: beyond the largest working set measured, an extrapolation", pt(r.Hi), in)
	case r.Hi.Bytes == r.Bytes:
		return pt(r.Hi) + " " + in
	case r.Lo.Bytes == 0:
		return fmt.Sprintf("%s %s, scaled down from it (below the smallest working set measured)", pt(r.Hi), in)
	}
	return fmt.Sprintf("between %s and %s %s, interpolated", pt(r.Lo), pt(r.Hi), in)
}
