// Package compare sets two runs side by side, arm by arm, over the
// per-repetition values. Where both sides have enough repetitions for a
// confidence interval it uses benchstat's statistics
// (golang.org/x/perf/benchmath): the median of each, its confidence
// interval, the ratio B/A, and a Mann-Whitney U test that says whether the
// difference is significant. With fewer — the quick suite's three — no
// interval exists and the U test cannot reach significance (its smallest
// p at 3 vs 3 is 0.1), so such an arm is decided by its ranges instead: a
// difference when A's and B's min–max ranges do not overlap, the strongest
// evidence three repetitions can give. The runs may come from different
// hosts; arms present on one side only are listed, not dropped.
package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"golang.org/x/perf/benchmath"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Confidence is the level of the confidence intervals, as benchstat uses.
const Confidence = 0.95

// MinRangeReps is the fewest repetitions a side needs for the range rule
// to call a difference: at 3 vs 3, ranges apart by chance alone happen 1
// time in 10; at 2 vs 2, 1 time in 3, which decides nothing.
const MinRangeReps = 3

// How a row was decided.
const (
	// MethodUTest: both sides have CIReps() repetitions or more:
	// benchstat's confidence intervals and Mann-Whitney U test.
	MethodUTest = "u-test"
	// MethodRanges: a side has fewer: a difference when the min–max
	// ranges do not overlap.
	MethodRanges = "ranges"
	// MethodTooFew: a side has fewer than MinRangeReps: no decision.
	MethodTooFew = "too-few"
)

var ciReps = sync.OnceValue(func() int {
	th := benchmath.DefaultThresholds
	for n := 2; n <= 50; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		s := benchmath.AssumeNothing.Summary(benchmath.NewSample(v, &th), Confidence)
		if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
			return n
		}
	}
	return 51
})

// CIReps is the fewest repetitions for which benchmath gives the median a
// finite confidence interval at Confidence (6 at 95%): asked of benchmath,
// not copied from it.
func CIReps() int { return ciReps() }

// ApartChance is the probability that na and nb repetitions of one and the
// same thing give ranges that do not overlap (2 / C(na+nb, na)): the exact
// p of a U test of fully separated samples, asked of benchmath. It is 0.1
// at 3 vs 3.
func ApartChance(na, nb int) float64 {
	if na <= 0 || nb <= 0 {
		return 1
	}
	a, b := make([]float64, na), make([]float64, nb)
	for i := range a {
		a[i] = float64(i)
	}
	for i := range b {
		b[i] = float64(na + i)
	}
	th := benchmath.DefaultThresholds
	return benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th)).P
}

// Side is one run's figures for one arm.
type Side struct {
	Median float64 `json:"median"`
	// Lo and Hi bound the median at Confidence; both are 0 when there are
	// too few repetitions for a finite interval (fewer than CIReps()).
	Lo float64 `json:"ci_lo"`
	Hi float64 `json:"ci_hi"`
	// Min and Max are the range of the repetitions' values.
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	N   int     `json:"n"` // repetitions
	// Noisy: the run marked the arm noisy (load, steal or spread while it
	// ran), so its figures are less sure.
	Noisy  bool      `json:"noisy,omitempty"`
	Values []float64 `json:"-"`
}

// Row is one arm present in both runs.
type Row struct {
	Arm        string `json:"arm"`
	Experiment string `json:"experiment,omitempty"`
	Unit       string `json:"unit"`
	A          Side   `json:"a"`
	B          Side   `json:"b"`
	// Method says how the row was decided: MethodUTest, MethodRanges or
	// MethodTooFew.
	Method string `json:"method"`
	// Ratio is B's median over A's. RatioLo/RatioHi bound it: under
	// MethodUTest by the two medians' confidence intervals (a conservative
	// interval), under MethodRanges by the two ranges (B's min ÷ A's max to
	// B's max ÷ A's min, which leaves out 1 exactly when the ranges do not
	// overlap); both are 0 when there is no such bound.
	Ratio   float64 `json:"ratio"`
	RatioLo float64 `json:"ratio_lo"`
	RatioHi float64 `json:"ratio_hi"`
	// P is the U test's p-value. Under MethodRanges it is not the
	// decision; for ranges apart it is the chance of that with nothing
	// changed (ApartChance).
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	// Significant says the two differ: P < Alpha under MethodUTest, the
	// ranges apart under MethodRanges, never under MethodTooFew.
	Significant bool `json:"significant"`
	// Delta is "~" when not significant, "?" when undecided, else the
	// change of the median in percent.
	Delta    string   `json:"delta"`
	Warnings []string `json:"warnings,omitempty"`
}

// Geomean is the geometric mean of the common arms' medians, per unit.
type Geomean struct {
	Unit  string  `json:"unit"`
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Ratio float64 `json:"ratio"`
	Arms  int     `json:"arms"`
}

// Comparison is run B set against run A.
type Comparison struct {
	RunA     RunInfo   `json:"run_a"`
	RunB     RunInfo   `json:"run_b"`
	Rows     []Row     `json:"rows"`
	Geomeans []Geomean `json:"geomeans,omitempty"`
	OnlyA    []string  `json:"only_a,omitempty"` // arms measured in A only
	OnlyB    []string  `json:"only_b,omitempty"`
	// Skipped are common arms without figures on one side (failed,
	// unsupported, too few ops).
	Skipped  []string `json:"skipped,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Pairs are the comparisons both runs measured side by side.
	Pairs []PairRow `json:"pairs,omitempty"`
}

// RunInfo identifies a compared run.
type RunInfo struct {
	ID    string `json:"id"`
	Host  string `json:"host"`
	Time  string `json:"time"`
	Suite string `json:"suite"`
}

func info(r *result.Run) RunInfo {
	return RunInfo{ID: r.ID, Host: r.Env.Hostname, Time: r.Time.UTC().Format("2006-01-02 15:04:05"), Suite: r.Suite}
}

// ErrNothingInCommon is wrapped when two runs share no arm with figures on
// both sides: there is nothing to compare, which is bad input, not an
// empty answer.
var ErrNothingInCommon = errors.New("nothing to compare")

// Compare sets b against a. It fails, wrapping ErrNothingInCommon, when
// the runs share no arm with figures on both sides.
func Compare(a, b *result.Run) (*Comparison, error) {
	if a == nil || b == nil {
		return nil, errors.New("compare: need two runs")
	}
	c := &Comparison{RunA: info(a), RunB: info(b)}
	if a.Env.Hostname != b.Env.Hostname {
		c.Warnings = append(c.Warnings, "the runs come from different hosts ("+a.Env.Hostname+", "+b.Env.Hostname+"): differences include the machines")
	}
	if a.Env.CgoEnabled != "" && b.Env.CgoEnabled != "" && a.Env.CgoEnabled != b.Env.CgoEnabled {
		c.Warnings = append(c.Warnings, "one run's ctxlab was built with cgo and the other's without (CGO_ENABLED "+a.Env.CgoEnabled+", "+b.Env.CgoEnabled+"): thread handoffs differ by the build, not only the machine")
	}
	inB := map[string]*result.Arm{}
	for i := range b.Arms {
		inB[b.Arms[i].Name] = &b.Arms[i]
	}
	inA := map[string]bool{}
	warned := map[string]bool{}
	type gm struct {
		la, lb float64
		n      int
	}
	geo := map[string]*gm{}
	var units []string
	for i := range a.Arms {
		aa := &a.Arms[i]
		inA[aa.Name] = true
		ba, ok := inB[aa.Name]
		if !ok {
			c.OnlyA = append(c.OnlyA, aa.Name)
			continue
		}
		va, vb := values(aa), values(ba)
		if len(va) == 0 || len(vb) == 0 || aa.Unit != ba.Unit {
			c.Skipped = append(c.Skipped, aa.Name)
			continue
		}
		row := Values(aa.Name, aa.Unit, va, vb)
		row.Experiment = aa.Experiment
		row.A.Noisy, row.B.Noisy = aa.Noise.Noisy, ba.Noise.Noisy
		for _, w := range row.Warnings {
			if !warned[w] {
				warned[w] = true
				c.Warnings = append(c.Warnings, w)
			}
		}
		c.Rows = append(c.Rows, row)
		if row.A.Median > 0 && row.B.Median > 0 {
			g := geo[row.Unit]
			if g == nil {
				g = &gm{}
				geo[row.Unit] = g
				units = append(units, row.Unit)
			}
			g.la += math.Log(row.A.Median)
			g.lb += math.Log(row.B.Median)
			g.n++
		}
	}
	for _, ba := range b.Arms {
		if !inA[ba.Name] {
			c.OnlyB = append(c.OnlyB, ba.Name)
		}
	}
	if len(c.Rows) == 0 {
		return nil, nothingInCommon(a, b, c.Skipped)
	}
	c.Pairs = pairRows(a, b)
	sort.Strings(c.OnlyA)
	sort.Strings(c.OnlyB)
	for _, u := range units {
		g := geo[u]
		if g.n < 2 {
			continue
		}
		ga, gb := math.Exp(g.la/float64(g.n)), math.Exp(g.lb/float64(g.n))
		c.Geomeans = append(c.Geomeans, Geomean{Unit: u, A: ga, B: gb, Ratio: gb / ga, Arms: g.n})
	}
	return c, nil
}

// nothingInCommon says why two runs have no row, naming both runs and a
// few of each one's arms so the user sees what they measured.
func nothingInCommon(a, b *result.Run, skipped []string) error {
	if len(skipped) > 0 {
		return fmt.Errorf("%w: runs %s and %s share %d arm(s), but none has figures in both (%s)",
			ErrNothingInCommon, a.ID, b.ID, len(skipped), few(skipped, 3))
	}
	names := func(r *result.Run) string {
		if len(r.Arms) == 0 {
			return "no arms"
		}
		var ns []string
		for _, x := range r.Arms {
			ns = append(ns, x.Name)
		}
		return fmt.Sprintf("%d arm(s): %s", len(ns), few(ns, 3))
	}
	return fmt.Errorf("%w: runs %s and %s have no arm in common (A has %s; B has %s); compare runs of the same experiments",
		ErrNothingInCommon, a.ID, b.ID, names(a), names(b))
}

// few is the first n names, then "…" for the rest.
func few(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + ", …"
}

// values are the arm's per-repetition figures, or its median alone; none
// from too few ops, which are no answer (a memory delta's median may be
// negative, so this is not result.Arm.HasFigure).
func values(a *result.Arm) []float64 {
	switch {
	case a.Status == result.StatusTooFewOps:
		return nil
	case len(a.RepMeans) > 0:
		return a.RepMeans
	case a.Status == result.StatusOK && a.Median > 0:
		return []float64{a.Median}
	}
	return nil
}

// Values sets the per-repetition figures vb against va by the rules
// Compare uses for an arm (the U test from CIReps() repetitions on both
// sides, the ranges from MinRangeReps, else no decision): the one place
// those rules live, for diagnose --vary's answer between values too.
// Both lists must hold at least one figure.
func Values(name, unit string, va, vb []float64) Row {
	th := benchmath.DefaultThresholds
	sa, sb := benchmath.NewSample(va, &th), benchmath.NewSample(vb, &th)
	ma := benchmath.AssumeNothing.Summary(sa, Confidence)
	mb := benchmath.AssumeNothing.Summary(sb, Confidence)
	cmp := benchmath.AssumeNothing.Compare(sa, sb)
	r := Row{Arm: name, Unit: unit, A: side(ma, va), B: side(mb, vb), P: cmp.P, Alpha: cmp.Alpha}
	if ma.Center != 0 {
		r.Ratio = mb.Center / ma.Center
	}
	switch n := min(len(va), len(vb)); {
	case n >= CIReps():
		r.Method = MethodUTest
		r.Significant = cmp.P < cmp.Alpha
		if ma.Center != 0 && r.A.Lo > 0 && r.B.Hi > 0 {
			r.RatioLo, r.RatioHi = r.B.Lo/r.A.Hi, r.B.Hi/r.A.Lo
		}
		// Warnings of a test that had enough samples are worth passing on.
		for _, ws := range [][]error{ma.Warnings, mb.Warnings, cmp.Warnings} {
			for _, w := range ws {
				r.Warnings = append(r.Warnings, w.Error())
			}
		}
	case n >= MinRangeReps:
		// benchmath's warnings here ("need >= 6 samples") are what the
		// range rule answers; the table says so once, not per row.
		r.Method = MethodRanges
		r.Significant = r.A.Max < r.B.Min || r.B.Max < r.A.Min
		if r.A.Min > 0 && r.A.Max > 0 {
			r.RatioLo, r.RatioHi = r.B.Min/r.A.Max, r.B.Max/r.A.Min
		}
	default:
		r.Method = MethodTooFew
	}
	r.Delta = delta(r)
	return r
}

// delta is the change of the median in percent with three significant
// figures at most (+100%, -4.56%), "~" when not shown to differ, "?" when
// the row could not be decided.
func delta(r Row) string {
	switch {
	case r.Method == MethodTooFew:
		return "?"
	case !r.Significant:
		return "~"
	case r.A.Median == 0:
		return "?"
	}
	pct := (r.B.Median/r.A.Median - 1) * 100
	switch a := math.Abs(pct); {
	case a >= 100:
		return fmt.Sprintf("%+.0f%%", pct)
	case a >= 10:
		return fmt.Sprintf("%+.1f%%", pct)
	}
	return fmt.Sprintf("%+.2f%%", pct)
}

func side(s benchmath.Summary, v []float64) Side {
	sd := Side{Median: s.Center, N: len(v), Values: v, Min: v[0], Max: v[0]}
	for _, x := range v {
		sd.Min, sd.Max = math.Min(sd.Min, x), math.Max(sd.Max, x)
	}
	if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) && !math.IsNaN(s.Lo) && !math.IsNaN(s.Hi) {
		sd.Lo, sd.Hi = s.Lo, s.Hi
	}
	return sd
}
