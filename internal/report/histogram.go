package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// tailFactor: an arm gets a histogram line when its max is at least this
// many times its p50 — where the tail, not the median, is the story.
const tailFactor = 10

var levels = []rune("▁▂▃▄▅▆▇█")

// writeHistograms prints a one-line log₂ histogram for each arm with a
// long tail, so a pile at a scheduling quantum shows at a glance. Bar
// heights follow the log of the count: three samples at 20 ms stay
// visible next to thousands at 30 µs.
func writeHistograms(w io.Writer, experiment string, arms []result.Arm) {
	var rows [][]string
	for _, a := range arms {
		line, lo, hi := HistogramLine(a.Histogram)
		p := a.Percentiles
		if line == "" || p == nil || p.P50 <= 0 || p.Max < tailFactor*p.P50 || a.Status == result.StatusTooFewOps {
			continue
		}
		rows = append(rows, []string{short(experiment, a.Name), lo, line + " " + hi})
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "  latency histograms, arms whose max is ≥ %d× p50 (log₂ buckets, · empty, height ~ log count):\n", tailFactor)
	textcol.Write(w, rows, "    ", textcol.Middle)
}

// HistogramLine renders buckets as one row of block characters, one per
// log₂ bucket from the first non-empty to the last, with the range's
// bounds; "" when there are fewer than two buckets.
func HistogramLine(bs []result.Bucket) (line, low, high string) {
	first, last := -1, -1
	var max int64
	for i, b := range bs {
		if b.Count > 0 {
			if first < 0 {
				first = i
			}
			last = i
			if b.Count > max {
				max = b.Count
			}
		}
	}
	if first < 0 || last == first {
		return "", "", ""
	}
	var sb strings.Builder
	for _, b := range bs[first : last+1] {
		if b.Count == 0 {
			sb.WriteRune('·')
			continue
		}
		lv := int(math.Ceil(float64(len(levels)-1) * math.Log1p(float64(b.Count)) / math.Log1p(float64(max))))
		lv = min(max0(lv), len(levels)-1)
		sb.WriteRune(levels[lv])
	}
	return sb.String(), result.FormatNs(bs[first].LowNs), result.FormatNs(bs[last].HighNs)
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
