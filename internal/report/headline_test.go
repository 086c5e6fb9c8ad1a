package report

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The report's headline (the bars chart's reading) rests on quiet arms: a
// noisy arm's median (409× here) is left out when two quiet ones remain,
// and every figure it names carries its spread.
func TestHeadlinePicksQuietArms(t *testing.T) {
	arm := func(name string, median, lo, hi float64, noisy bool) result.Arm {
		a := result.Arm{Name: "pingpong/" + name, Experiment: "pingpong", Op: "round trip", Unit: "ns/op", Status: result.StatusOK,
			Median: median, Min: lo, Max: hi, RepMeans: []float64{lo, median, hi}}
		if noisy {
			a.Noise = result.Noise{Noisy: true, Reasons: []string{"repetitions spread 10x (max/min > 1.25)"}}
		}
		return a
	}
	arms := []result.Arm{
		arm("goroutine/chan", 300, 290, 310, false),
		arm("thread/futex", 7000, 6900, 7100, false),
		arm("process/pipe", 122800, 40000, 400000, true),
	}
	charts := ExperimentCharts("pingpong", arms)
	if len(charts) == 0 || charts[0].Kind != ChartBars {
		t.Fatalf("no bars chart: %+v", charts)
	}
	r := charts[0].Reading
	for _, want := range []string{"thread/futex", "goroutine/chan", "23× longer than", "7 µs (6.9–7.1)", "300 ns (290–310)", "1 noisy"} {
		if !strings.Contains(r, want) {
			t.Errorf("reading %q lacks %q", r, want)
		}
	}
	if strings.Contains(r, "process/pipe") || strings.Contains(r, "409") {
		t.Errorf("reading rests on the noisy arm: %q", r)
	}
	// Ratios within the noise are about the same, never "1× longer".
	near := []result.Arm{arm("goroutine/chan", 300, 290, 310, false), arm("goroutine/cond", 310, 300, 320, false)}
	if r := ExperimentCharts("pingpong", near)[0].Reading; !strings.Contains(r, "about as long as") || strings.Contains(r, "1.0×") {
		t.Errorf("reading of two arms 3%% apart: %q", r)
	}
}
