package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// cdfCharts: the cumulative share of sampled ops at or below each
// latency, from the arms' histograms, in parts of at most MaxLines arms
// that share their axes.
func cdfCharts(experiment string, arms []result.Arm) []*Chart {
	sel, names, segs := sampledArms(experiment, arms)
	if len(sel) == 0 {
		return nil
	}
	title := fmt.Sprintf("%s: latency distribution per %s (share of sampled ops ≤ x)", experiment, opLabel(sel[0].Op))
	lo, hi := math.Inf(1), 0.0
	for _, a := range sel {
		lo = math.Min(lo, math.Max(a.Histogram[0].LowNs, 1))
		hi = math.Max(hi, a.Histogram[len(a.Histogram)-1].HighNs)
	}
	div, unitName := axisUnit("ns/op", lo, hi)
	parts := splitLines(segs)
	var out []*Chart
	for pi, part := range parts {
		var psegs [][]exp.Segment
		for _, i := range part {
			psegs = append(psegs, segs[i])
		}
		p := newPlot(partTitle(title, pi+1, len(parts), psegs))
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = lo, hi
		p.X.Tick.Marker = axisTicker(true, div)
		setXLabel(p, axisLabel("latency of one "+opLabel(sel[0].Op), unitName, true))
		p.Y.Label.Text = "share of sampled ops (%)"
		p.Y.Tick.Marker = percentTicks{}
		p.Y.Min, p.Y.Max = 0, 1
		var legend []legendItem
		var drawn []result.Arm
		for li, i := range part {
			l, err := cdfLine(sel[i])
			if err != nil {
				continue
			}
			l.LineStyle.Color, l.LineStyle.Dashes = lineStyle(li)
			l.LineStyle.Width = vg.Points(1.5)
			p.Add(l)
			legend = append(legend, legendItem{label: names[i], thumbs: []plot.Thumbnailer{l}})
			drawn = append(drawn, sel[i])
		}
		out = append(out, &Chart{Experiment: experiment, Kind: ChartCDF, Title: p.Title.Text, Reading: cdfReading(experiment, len(part), drawn, len(parts) > 1),
			Part: pi + 1, Parts: len(parts), plot: p, legend: legend, w: chartWidth, h: 3.4 * vg.Inch})
	}
	if len(out) == 1 {
		out[0].Part, out[0].Parts = 0, 0
	}
	return out
}

// sampledArms are the arms with a histogram of sampled latencies, with
// their names within the experiment and those names' segments.
func sampledArms(experiment string, arms []result.Arm) (sel []result.Arm, names []string, segs [][]exp.Segment) {
	for _, a := range arms {
		var total int64
		for _, b := range a.Histogram {
			total += b.Count
		}
		if total > 0 && a.Status != result.StatusTooFewOps { // too few samples to be an answer
			sel = append(sel, a)
			names = append(names, short(experiment, a.Name))
			segs = append(segs, exp.ShortSegmentsIn(experiment, a.Name))
		}
	}
	return sel, names, segs
}

// cdfLine is arm a's cumulative share of sampled ops against latency.
func cdfLine(a result.Arm) (*plotter.Line, error) {
	var total int64
	for _, b := range a.Histogram {
		total += b.Count
	}
	var pts plotter.XYs
	var cum int64
	first := math.Max(a.Histogram[0].LowNs, 1)
	pts = append(pts, plotter.XY{X: first, Y: 0})
	for _, b := range a.Histogram {
		cum += b.Count
		pts = append(pts, plotter.XY{X: math.Max(b.HighNs, first*1.0001), Y: float64(cum) / float64(total)})
	}
	return plotter.NewLine(pts)
}

// cdfReading names the widest tail (p99 ÷ p50) of the arms drawn in a
// chart of n arms, one part of several when split.
func cdfReading(experiment string, n int, drawn []result.Arm, split bool) string {
	worst, worstRatio := result.Arm{}, 0.0
	for _, a := range drawn {
		if pc := a.Percentiles; pc != nil && pc.P50 > 0 && pc.P99/pc.P50 > worstRatio {
			worst, worstRatio = a, pc.P99/pc.P50
		}
	}
	if worstRatio == 0 {
		return fmt.Sprintf("%d arms with sampled latencies.", n)
	}
	pc := worst.Percentiles
	reading := fmt.Sprintf("the widest tail is %s: p50 %s, p99 %s (%.1f× p50), p99.9 %s.", short(experiment, worst.Name),
		result.FormatNs(pc.P50), result.FormatNs(pc.P99), worstRatio, result.FormatNs(pc.P999))
	if split {
		reading = "of these, " + reading
	}
	return reading
}
