package result

import "fmt"

// Comparison is one comparison an experiment's verdict states (threads vs
// goroutines, one CPU vs across CPUs, a hop vs direct), measured side by
// side: the two arms were set up together and took turns, in random order,
// so that a slow phase of the machine fell on both, and the ratio is read
// from the paired turns.
type Comparison struct {
	// Label names the comparison as the verdict words it ("threads vs goroutines").
	Label string `json:"label"`
	// A and B are the arms' names; every ratio is A's figure over B's.
	A string `json:"a"`
	B string `json:"b"`
	// Paired is how the turns were taken: PairedBursts (short bursts of
	// each arm, both set up at once) or PairedReps (arms that cannot run
	// under one placement, different GOMAXPROCS or CPU sets, alternate by
	// repetition-long turns).
	Paired string `json:"paired"`
	// Rounds is the number of paired turns the ratios are read from;
	// TurnNs the length a turn was sized to.
	Rounds int   `json:"rounds"`
	TurnNs int64 `json:"turn_ns"`
	// Wall is the ratio of wall time per op; CPU that of the CPU time per
	// op of all participants, where both arms' CPU time was read.
	Wall Ratio  `json:"wall"`
	CPU  *Ratio `json:"cpu,omitempty"`
	// Basis is the ratio the verdict states: BasisCPU wherever both arms'
	// CPU time was read (the wall time holds whatever the machine made the
	// arms wait), else BasisWall.
	Basis string `json:"basis"`
	// Answer is what the basis ratio says: AnswerSame (its interval within
	// SameWithin of 1), AnswerDiffer (wholly outside), or AnswerUndecided
	// (it straddles the two when the time for more turns ran out).
	Answer string `json:"answer"`
	// Alone is the same ratio on the same basis from the two arms' own
	// figures, each measured alone over its repetitions (CPU time per op,
	// or the medians for a wall-time answer), its range from their
	// repetitions' spread (the lowest of one over the highest of the
	// other); nil where one of them lacks it. Where the two ranges do not
	// meet, what an arm cost here changed with what ran beside it or when,
	// and the note says so.
	Alone *Ratio `json:"alone,omitempty"`
	// Note says what else the reader should know (more turns were added,
	// the budget ran out, a pair that could not be measured).
	Note string `json:"note,omitempty"`
}

// Ratio is a median ratio of paired turns with its interval: the order
// statistics that hold the median with 95% confidence.
type Ratio struct {
	Ratio float64 `json:"ratio"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// How a comparison's turns were paired, which ratio the verdict states,
// and what it says.
const (
	PairedBursts    = "bursts"
	PairedReps      = "repetitions"
	BasisCPU        = "cpu time"
	BasisWall       = "wall time"
	AnswerSame      = "about the same"
	AnswerDiffer    = "different"
	AnswerUndecided = "undecided"
)

// AloneOutside says whether the arms' own ratio (Alone), with its range,
// misses the stated interval.
func (c Comparison) AloneOutside() bool {
	r := c.Stated()
	return c.Alone != nil && c.Alone.Ratio > 0 && c.Rounds > 0 && (c.Alone.Hi < r.Lo || c.Alone.Lo > r.Hi)
}

// Stated is the ratio the verdict states (Basis).
func (c Comparison) Stated() Ratio {
	if c.Basis == BasisCPU && c.CPU != nil {
		return *c.CPU
	}
	return c.Wall
}

func (c *Comparison) validate(v *validator) {
	if c.A == "" || c.B == "" {
		v.fail("a or b is empty; want the two arms' names")
	}
	switch c.Paired {
	case PairedBursts, PairedReps:
	default:
		v.fail("paired %q: want %s or %s", c.Paired, PairedBursts, PairedReps)
	}
	v.intIn("rounds", int64(c.Rounds), 0, MaxCount)
	v.intIn("turn_ns", c.TurnNs, 0, MaxCount)
	rs := []struct {
		name string
		r    *Ratio
	}{{"wall", &c.Wall}, {"cpu", c.CPU}, {"alone", c.Alone}}
	for _, x := range rs {
		if x.r == nil {
			continue
		}
		v.nonNeg(x.name+".ratio", x.r.Ratio)
		v.nonNeg(x.name+".lo", x.r.Lo)
		v.nonNeg(x.name+".hi", x.r.Hi)
		if x.r.Lo > x.r.Ratio*(1+1e-9) || x.r.Ratio > x.r.Hi*(1+1e-9) {
			v.fail("%s: lo %s, ratio %s, hi %s: want lo ≤ ratio ≤ hi", x.name, num(x.r.Lo), num(x.r.Ratio), num(x.r.Hi))
		}
	}
}

// String is the comparison in one line: "threads vs goroutines: 15.1×
// (14.6–15.8) by cpu time, 24 paired bursts".
func (c Comparison) String() string {
	r := c.Stated()
	return fmt.Sprintf("%s: %.3g× (%.3g–%.3g) by %s, %s, %d paired %s", c.Label, r.Ratio, r.Lo, r.Hi, c.Basis, c.Answer, c.Rounds, c.Paired)
}
