package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// cpuMetric is the rep_metric with each repetition's CPU time per op
// (diagnose --vary's runs).
const cpuMetric = "cpu-ns/op"

var (
	wallColor = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	cpuColor  = color.RGBA{0xff, 0x7f, 0x0e, 0xff}
)

// wallCPUChart: for arms whose repetitions carry their CPU time (a
// diagnose --vary run's values), two bars per arm, the wall time and the
// CPU time (median, whisker min–max): more CPU than wall is parallel
// work, CPU rising with the wall time is slower work, not waiting. It is
// the experiment's bars chart; nil when no arm has both.
func wallCPUChart(experiment string, arms []result.Arm) *Chart {
	type pair struct {
		a   result.Arm
		cpu measure.Summary
	}
	var sel []pair
	for _, a := range arms {
		if vs := a.RepMetrics[cpuMetric]; measured(a) && isTimeUnit(a.Unit) && len(vs) > 0 {
			sel = append(sel, pair{a, measure.Summarize(vs)})
		}
	}
	if len(sel) == 0 {
		return nil
	}
	op := sel[0].a.Op
	p := newPlot(fmt.Sprintf("%s: wall and CPU time per %s (bar: median; whisker: min–max)", experiment, opLabel(op)))
	n := len(sel)
	hi := 0.0
	for _, s := range sel {
		hi = math.Max(hi, math.Max(s.a.Max, s.cpu.Max))
	}
	p.X.Min, p.X.Max = 0, hi*1.1
	div, unitName := axisUnit(sel[0].a.Unit, 0, p.X.Max)
	p.X.Tick.Marker = axisTicker(false, div)
	setXLabel(p, axisLabel("time per "+opLabel(op), unitName, false))
	names := make([]string, n)
	sp := spread{}
	bar := func(y, med, lo, hi float64, c color.Color) {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: med, Y: y}})
		if err != nil {
			return
		}
		l.LineStyle.Width, l.LineStyle.Color = vg.Points(7), c
		p.Add(l)
		sp.XYs = append(sp.XYs, plotter.XY{X: med, Y: y})
		sp.lo = append(sp.lo, med-math.Min(lo, med))
		sp.hi = append(sp.hi, math.Max(hi, med)-med)
	}
	for i, s := range sel {
		y := float64(n - 1 - i)
		names[n-1-i] = short(experiment, s.a.Name)
		bar(y+0.17, s.a.Median, s.a.Min, s.a.Max, wallColor)
		bar(y-0.17, s.cpu.Median, s.cpu.Min, s.cpu.Max, cpuColor)
	}
	if eb, err := plotter.NewXErrorBars(sp); err == nil {
		eb.LineStyle.Width = vg.Points(1)
		p.Add(eb)
	}
	p.NominalY(names...)
	p.Y.Padding = vg.Points(10)
	legend := []legendItem{
		{label: "wall time", thumbs: []plot.Thumbnailer{swatch{wallColor}}},
		{label: "CPU time (every thread and child)", thumbs: []plot.Thumbnailer{swatch{cpuColor}}},
	}
	return &Chart{Experiment: experiment, Kind: ChartBars, Title: p.Title.Text, Reading: wallCPUReading(experiment, sel[0].a, sel[len(sel)-1].a, sel[0].cpu, sel[len(sel)-1].cpu),
		plot: p, legend: legend, w: chartWidth, h: vg.Length(n)*0.42*vg.Inch + 1.1*vg.Inch}
}

// wallCPUReading sets the last arm against the first, wall and CPU.
func wallCPUReading(experiment string, first, last result.Arm, cf, cl measure.Summary) string {
	if first.Name == last.Name {
		return fmt.Sprintf("%s: wall %s, CPU %s per %s.", short(experiment, first.Name), result.FormatNs(first.Median), result.FormatNs(cf.Median), opLabel(first.Op))
	}
	return fmt.Sprintf("%s against %s: wall %s → %s (%s), CPU %s → %s (%s).", short(experiment, last.Name), short(experiment, first.Name),
		result.FormatNs(first.Median), result.FormatNs(last.Median), exp.Compare(last.Median, first.Median, "longer", "shorter"),
		result.FormatNs(cf.Median), result.FormatNs(cl.Median), exp.Compare(cl.Median, cf.Median, "more", "less"))
}
