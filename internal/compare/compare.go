// Package compare sets two runs side by side, arm by arm, with benchstat's
// statistics (golang.org/x/perf/benchmath) over the per-repetition values:
// the median of each, its confidence interval, the ratio B/A, and a
// Mann-Whitney U test that says whether the difference is significant.
// The runs may come from different hosts; arms present on one side only
// are listed, not dropped.
package compare

import (
	"errors"
	"math"
	"sort"

	"golang.org/x/perf/benchmath"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Confidence is the level of the confidence intervals, as benchstat uses.
const Confidence = 0.95

// Side is one run's figures for one arm.
type Side struct {
	Median float64 `json:"median"`
	// Lo and Hi bound the median at Confidence; both are 0 when there are
	// too few repetitions for a finite interval (fewer than 6 at 95%).
	Lo     float64   `json:"ci_lo"`
	Hi     float64   `json:"ci_hi"`
	N      int       `json:"n"` // repetitions
	Values []float64 `json:"-"`
}

// Row is one arm present in both runs.
type Row struct {
	Arm  string `json:"arm"`
	Unit string `json:"unit"`
	A    Side   `json:"a"`
	B    Side   `json:"b"`
	// Ratio is B's median over A's; RatioLo/RatioHi bound it by the two
	// medians' confidence intervals (a conservative interval); both are 0
	// when either interval is unbounded.
	Ratio   float64 `json:"ratio"`
	RatioLo float64 `json:"ratio_lo"`
	RatioHi float64 `json:"ratio_hi"`
	P       float64 `json:"p"`
	Alpha   float64 `json:"alpha"`
	// Significant is P < Alpha: the two samples differ.
	Significant bool `json:"significant"`
	// Delta is "~" when not significant, else the change in percent.
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
	// Skipped are common arms without figures on one side (failed, unsupported).
	Skipped  []string `json:"skipped,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
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

// Compare sets b against a.
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
		row := compareArm(aa.Name, aa.Unit, va, vb)
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

// values are the arm's per-repetition figures, or its median alone.
func values(a *result.Arm) []float64 {
	if len(a.RepMeans) > 0 {
		return a.RepMeans
	}
	if a.Status == result.StatusOK && a.Median > 0 {
		return []float64{a.Median}
	}
	return nil
}

func compareArm(name, unit string, va, vb []float64) Row {
	th := benchmath.DefaultThresholds
	sa, sb := benchmath.NewSample(va, &th), benchmath.NewSample(vb, &th)
	ma := benchmath.AssumeNothing.Summary(sa, Confidence)
	mb := benchmath.AssumeNothing.Summary(sb, Confidence)
	cmp := benchmath.AssumeNothing.Compare(sa, sb)
	r := Row{Arm: name, Unit: unit,
		A: side(ma, va),
		B: side(mb, vb),
		P: cmp.P, Alpha: cmp.Alpha,
		Delta: cmp.FormatDelta(ma.Center, mb.Center),
	}
	r.Significant = cmp.P < cmp.Alpha
	if ma.Center != 0 {
		r.Ratio = mb.Center / ma.Center
		if r.A.Lo > 0 && r.B.Hi > 0 {
			r.RatioLo, r.RatioHi = r.B.Lo/r.A.Hi, r.B.Hi/r.A.Lo
		}
	}
	for _, ws := range [][]error{ma.Warnings, mb.Warnings, cmp.Warnings} {
		for _, w := range ws {
			r.Warnings = append(r.Warnings, w.Error())
		}
	}
	return r
}

func side(s benchmath.Summary, v []float64) Side {
	sd := Side{Median: s.Center, N: len(v), Values: v}
	if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) && !math.IsNaN(s.Lo) && !math.IsNaN(s.Hi) {
		sd.Lo, sd.Hi = s.Lo, s.Hi
	}
	return sd
}
