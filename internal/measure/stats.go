package measure

import (
	"math"
	"sort"
)

// Quantile returns the q-quantile (q in 0..1) of sorted values, using the
// nearest-rank method: the smallest value with at least q of the data at or
// below it. sorted must be ascending and non-empty.
func Quantile(sorted []int64, q float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	if q <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

// Summary is the median and range of repetition means.
type Summary struct {
	Median, Min, Max float64
}

// Summarize returns median, min and max of xs (median of an even count is
// the mean of the two middle values). xs is not modified.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Median: med, Min: s[0], Max: s[n-1]}
}

// Spread is max/min of the summary, or +Inf when min is not positive.
func (s Summary) Spread() float64 {
	if s.Min <= 0 {
		if s.Max == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return s.Max / s.Min
}

// LogBuckets groups sorted latencies (ns) into buckets whose bounds grow by
// a factor of 2 (1, 2, 4 … ns), dropping empty ones at both ends.
func LogBuckets(sorted []int64) []Bucket {
	if len(sorted) == 0 {
		return nil
	}
	var out []Bucket
	lo, hi := int64(0), int64(1)
	i := 0
	for i < len(sorted) {
		var n int64
		for i < len(sorted) && sorted[i] < hi {
			n++
			i++
		}
		if n > 0 || len(out) > 0 {
			out = append(out, Bucket{Low: lo, High: hi, Count: n})
		}
		lo, hi = hi, hi*2
	}
	return out
}

// Bucket is one histogram bucket over [Low, High) ns.
type Bucket struct {
	Low, High int64
	Count     int64
}

// PairedRatio is the median of the ratios a[i]/b[i] of paired rounds (a
// round whose b is not positive is left out), with the order statistics
// that bracket that median with 95% confidence (the binomial's normal
// approximation; with few rounds, the extremes). n is the rounds used.
func PairedRatio(a, b []float64) (ratio, lo, hi float64, n int) {
	m := min(len(a), len(b))
	rs := make([]float64, 0, m)
	for i := 0; i < m; i++ {
		if b[i] > 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	if len(rs) == 0 {
		return 0, 0, 0, 0
	}
	sort.Float64s(rs)
	k := max(int(math.Floor((float64(len(rs))-1.96*math.Sqrt(float64(len(rs))))/2)), 0)
	return Summarize(rs).Median, rs[k], rs[len(rs)-1-k], len(rs)
}
