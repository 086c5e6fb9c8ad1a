// Package quantum finds where latency samples pile up and names the
// scheduling quantum behind a pile when one fits: Go's sysmon preemption
// period, the kernel scheduler's slice, the timer tick. Tail latency under
// CPU hogs is not smeared out; it clusters at these quanta, and naming the
// quantum tells the user which scheduler to blame. When no known quantum
// fits, the package says so rather than guess.
//
// It is pure: the caller supplies sorted samples (ns) and the quanta that
// apply on its machine; nothing here reads the clock or the kernel.
package quantum

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Quantum is one known scheduling period.
type Quantum struct {
	Name        string // "Go async preemption (sysmon, 10 ms)"
	PeriodNs    int64
	MaxMultiple int     // largest k named; beyond it the cluster is not attributed
	Tol         float64 // a location within Tol of k×PeriodNs fits (0.1 = ±10 %)
	// Cause is the reading for a user: "the woken goroutine waited for Go to preempt a hog".
	Cause string
	// Unit names one period in the reading: "sysmon period", "tick".
	Unit string
}

// Match is a quantum that explains a cluster, and how many periods it spans.
type Match struct {
	Quantum  Quantum
	Multiple int
	// Err is |location/(k×period) − 1|.
	Err float64
}

// Cluster is a pile of samples above Options.FloorNs.
type Cluster struct {
	Count            int
	Fraction         float64 // of all samples
	LowNs, HighNs    int64   // smallest and largest sample in the cluster
	MedianNs         int64   // the cluster's location
	Cause            *Match  // nil: no known quantum fits (a refusal, not a guess)
	RefusalCandidate string  // when Cause is nil: the quanta that were tried
}

// Options tune detection; the zero value takes the defaults.
type Options struct {
	// FloorNs: samples below it are never clustered (no quantum is that short).
	FloorNs int64 // default 500 µs
	// Width: a cluster spans at most Width× its smallest sample.
	Width float64 // default 1.3
	// Contrast: a pile holds at least Contrast× the samples of the
	// equally wide window on either side of it; a smear is not a pile.
	Contrast float64 // default 2
	// MinCount: the fewest samples that make a cluster.
	MinCount int // default 3
	// MaxClusters: at most this many clusters are returned.
	MaxClusters int // default 5
}

func (o Options) withDefaults() Options {
	if o.FloorNs <= 0 {
		o.FloorNs = 500_000
	}
	if o.Width <= 1 {
		o.Width = 1.3
	}
	if o.Contrast <= 0 {
		o.Contrast = 2
	}
	if o.MinCount <= 0 {
		o.MinCount = 3
	}
	if o.MaxClusters <= 0 {
		o.MaxClusters = 5
	}
	return o
}

// Detect finds piles in sorted samples (ascending, ns) above the floor:
// repeatedly the densest window Width wide that stands out from its
// neighbours by Contrast, and names each pile's cause from qs. Clusters
// come back in ascending location.
func Detect(sorted []int64, qs []Quantum, o Options) []Cluster {
	o = o.withDefaults()
	if len(sorted) == 0 {
		return nil
	}
	start := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= o.FloorNs })
	type seg struct{ lo, hi int } // sorted[lo:hi], not yet taken
	segs := []seg{{start, len(sorted)}}
	var out []Cluster
	for len(out) < o.MaxClusters && len(segs) > 0 {
		bestSeg, bi, bj := -1, 0, 0
		for k, s := range segs {
			i0, j0 := densestPile(sorted, s.lo, s.hi, o)
			if j0-i0 >= o.MinCount && j0-i0 > bj-bi {
				bestSeg, bi, bj = k, i0, j0
			}
		}
		if bestSeg < 0 {
			break
		}
		n := bj - bi
		c := Cluster{
			Count: n, Fraction: float64(n) / float64(len(sorted)),
			LowNs: sorted[bi], HighNs: sorted[bj-1], MedianNs: sorted[bi+(n-1)/2],
		}
		c.Cause = Name(c.MedianNs, qs)
		if c.Cause == nil {
			c.RefusalCandidate = tried(qs)
		}
		out = append(out, c)
		s := segs[bestSeg]
		segs = append(segs[:bestSeg], segs[bestSeg+1:]...)
		if bi > s.lo {
			segs = append(segs, seg{s.lo, bi})
		}
		if bj < s.hi {
			segs = append(segs, seg{bj, s.hi})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MedianNs < out[j].MedianNs })
	return out
}

// densestPile returns the window sorted[i:j] within [lo, hi) holding the
// most samples with sorted[j-1] ≤ Width × sorted[i] that stands out from
// its neighbours; i == j when none does.
func densestPile(sorted []int64, lo, hi int, o Options) (int, int) {
	bi, bj := lo, lo
	j := lo
	for i := lo; i < hi; i++ {
		if j < i {
			j = i
		}
		for j < hi && float64(sorted[j]) <= o.Width*float64(sorted[i]) {
			j++
		}
		if j-i > bj-bi && j-i >= o.MinCount && standsOut(sorted, i, j, o) {
			bi, bj = i, j
		}
	}
	return bi, bj
}

// standsOut: the window holds Contrast× the samples of the window of the
// same relative width just below it, [lo/Width, lo), and just above it,
// (hi, hi×Width].
func standsOut(sorted []int64, i, j int, o Options) bool {
	lo, hi := float64(sorted[i]), float64(sorted[j-1])
	below := firstAtLeast(sorted, lo) - firstAtLeast(sorted, lo/o.Width)
	above := firstAbove(sorted, hi*o.Width) - firstAbove(sorted, hi)
	n := float64(j - i)
	return n >= o.Contrast*float64(below) && n >= o.Contrast*float64(above)
}

func firstAtLeast(sorted []int64, x float64) int {
	return sort.Search(len(sorted), func(k int) bool { return float64(sorted[k]) >= x })
}

func firstAbove(sorted []int64, x float64) int {
	return sort.Search(len(sorted), func(k int) bool { return float64(sorted[k]) > x })
}

// Name returns the quantum that explains a latency of ns, or nil. Among
// fitting quanta the smallest multiple wins, then the closest fit, then
// the order of qs (callers list the most likely first).
func Name(ns int64, qs []Quantum) *Match {
	var best *Match
	for _, q := range qs {
		if q.PeriodNs <= 0 {
			continue
		}
		maxK := q.MaxMultiple
		if maxK <= 0 {
			maxK = 4
		}
		var m *Match
		k := int(math.Round(float64(ns) / float64(q.PeriodNs)))
		if k >= 1 && k <= maxK {
			e := math.Abs(float64(ns)/float64(int64(k)*q.PeriodNs) - 1)
			tol := q.Tol
			if tol <= 0 {
				tol = 0.1
			}
			if e <= tol {
				m = &Match{Quantum: q, Multiple: k, Err: e}
			}
		}
		if m == nil {
			continue
		}
		if best == nil || m.Multiple < best.Multiple || (m.Multiple == best.Multiple && m.Err < best.Err) {
			best = m
		}
	}
	return best
}

func tried(qs []Quantum) string {
	var s []string
	for _, q := range qs {
		if q.PeriodNs > 0 {
			s = append(s, fmt.Sprintf("%s %s", q.Name, result.FormatNs(float64(q.PeriodNs))))
		}
	}
	if len(s) == 0 {
		return "no known quantum"
	}
	return strings.Join(s, ", ")
}

// Where says which of the usual percentiles of sorted fall inside c, e.g.
// "p50" or "p99, max"; empty when none does.
func (c Cluster) Where(sorted []int64) string {
	var in []string
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99.9", 0.999}} {
		v := measure.Quantile(sorted, p.q)
		if v >= c.LowNs && v <= c.HighNs {
			in = append(in, p.name)
		}
	}
	if len(sorted) > 0 {
		if m := sorted[len(sorted)-1]; m >= c.LowNs && m <= c.HighNs {
			in = append(in, "max")
		}
	}
	return strings.Join(in, ", ")
}

// Describe is the reading of a cluster for a user, e.g. "p50 sits at
// 20.1 ms (812 of 1000 samples, 10.2–39.8 ms): the woken goroutine waited
// for Go to preempt a hog (2 sysmon periods of 10 ms)".
func (c Cluster) Describe(sorted []int64) string {
	head := fmt.Sprintf("%d of %d samples pile up at %s (%s–%s)", c.Count, len(sorted),
		result.FormatNs(float64(c.MedianNs)), result.FormatNs(float64(c.LowNs)), result.FormatNs(float64(c.HighNs)))
	if w := c.Where(sorted); w != "" {
		first, rest, _ := strings.Cut(w, ", ")
		if rest != "" {
			rest = "; also " + rest
		}
		head = fmt.Sprintf("%s sits at %s (%d of %d samples, %s–%s%s)", first, result.FormatNs(float64(c.MedianNs)),
			c.Count, len(sorted), result.FormatNs(float64(c.LowNs)), result.FormatNs(float64(c.HighNs)), rest)
	}
	if c.Cause == nil {
		return head + ": no known quantum fits (tried " + c.RefusalCandidate + "); cause not named"
	}
	return head + ": " + c.Cause.Reading()
}

// Reading is the named cause with its multiple: "the woken goroutine waited
// for Go to preempt a hog (2 sysmon periods of 10 ms)".
func (m *Match) Reading() string {
	unit := m.Quantum.Unit
	if unit == "" {
		unit = "period"
	}
	plural := ""
	if m.Multiple != 1 {
		plural = "s"
	}
	return fmt.Sprintf("%s (%d %s%s of %s)", m.Quantum.Cause, m.Multiple, unit, plural, result.FormatNs(float64(m.Quantum.PeriodNs)))
}
