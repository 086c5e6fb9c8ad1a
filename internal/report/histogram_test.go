package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func TestHistogramLine(t *testing.T) {
	bs := []result.Bucket{
		{LowNs: 16384, HighNs: 32768, Count: 5000},
		{LowNs: 32768, HighNs: 65536, Count: 40},
		{LowNs: 65536, HighNs: 131072, Count: 0},
		{LowNs: 131072, HighNs: 262144, Count: 3},
	}
	line, lo, hi := HistogramLine(bs)
	if line != "█▅·▃" || lo != "16.4 µs" || hi != "262 µs" {
		t.Errorf("got %q %q %q", line, lo, hi)
	}
	if l, _, _ := HistogramLine(bs[:1]); l != "" {
		t.Errorf("one bucket: got %q, want no line", l)
	}
	if l, _, _ := HistogramLine(nil); l != "" {
		t.Errorf("no buckets: got %q", l)
	}
}

func TestWriteHistogramsOnlyTails(t *testing.T) {
	bs := []result.Bucket{{LowNs: 16384, HighNs: 32768, Count: 100}, {LowNs: 16 << 20, HighNs: 32 << 20, Count: 2}}
	arms := []result.Arm{
		{Name: "x/tail", Histogram: bs, Percentiles: &result.Percentiles{P50: 20000, Max: 20e6}},
		{Name: "x/flat", Histogram: bs[:1], Percentiles: &result.Percentiles{P50: 20000, Max: 30000}},
		{Name: "x/short", Histogram: bs, Percentiles: &result.Percentiles{P50: 20000, Max: 150000}},
	}
	var b bytes.Buffer
	writeHistograms(&b, "x", arms)
	out := b.String()
	if !strings.Contains(out, "tail") || strings.Contains(out, "flat") || strings.Contains(out, "short") {
		t.Errorf("want only the tail arm:\n%s", out)
	}
}
