package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// barsChart: one horizontal bar per measured arm (median), with a
// whisker from min to max, per unit (the first unit of the experiment).
func barsChart(experiment string, arms []result.Arm) *Chart {
	sel, unit := firstUnitArms(arms)
	if len(sel) == 0 {
		return nil
	}
	op := sel[0].Op
	p := newPlot(fmt.Sprintf("%s: %s per %s (bar: median; whisker: min–max)", experiment, quantity(unit), opLabel(op)))
	n := len(sel)
	names := make([]string, n)
	var all []float64
	for i, a := range sel {
		names[n-1-i] = short(experiment, a.Name)
		all = append(all, a.Min, a.Median, a.Max)
	}
	base, log := barsAxis(p, all)
	div, unitName := axisUnit(unit, p.X.Min, p.X.Max)
	p.X.Tick.Marker = axisTicker(log, div)
	setXLabel(p, axisLabel(quantity(unit)+" per "+opLabel(op), unitName, log))
	colors := barColors(sel)
	if !drawBars(p, sel, base, colors) {
		return nil
	}
	p.NominalY(names...)
	p.Y.Padding = vg.Points(6)
	return &Chart{Experiment: experiment, Kind: ChartBars, Title: p.Title.Text, Reading: barsReading(experiment, sel),
		plot: p, legend: colors.legend(), w: chartWidth, h: vg.Length(n)*0.28*vg.Inch + 1.1*vg.Inch}
}

// firstUnitArms are the measured arms in the unit of the first of them.
func firstUnitArms(arms []result.Arm) (sel []result.Arm, unit string) {
	for _, a := range arms {
		if !measured(a) {
			continue
		}
		if unit == "" {
			unit = a.Unit
		}
		if a.Unit == unit {
			sel = append(sel, a)
		}
	}
	return sel, unit
}

// barsAxis sets the bars' value axis over all the figures: a log scale
// from the power of ten below the smallest when they span widely, else
// linear from 0. base is where a bar starts.
func barsAxis(p *plot.Plot, all []float64) (base float64, log bool) {
	log = wide(all)
	if log {
		lo := math.Inf(1)
		for _, v := range all {
			if v > 0 {
				lo = math.Min(lo, v)
			}
		}
		base = math.Pow(10, math.Floor(math.Log10(lo)))
		p.X.Scale = plot.LogScale{}
		p.X.Min = base
	}
	hi := 0.0
	for _, v := range all {
		hi = math.Max(hi, v)
	}
	if log {
		p.X.Max = hi * 1.6
	} else {
		p.X.Max = hi * 1.1
	}
	return base, log
}

// drawBars adds each arm's bar, from base to its median, and its whisker,
// the first arm on top; false if a bar cannot be drawn.
func drawBars(p *plot.Plot, sel []result.Arm, base float64, colors barPalette) bool {
	n := len(sel)
	sp := spread{}
	for i, a := range sel {
		y := float64(n - 1 - i)
		l, err := plotter.NewLine(plotter.XYs{{X: base, Y: y}, {X: a.Median, Y: y}})
		if err != nil {
			return false
		}
		l.LineStyle.Width = vg.Points(9)
		l.LineStyle.Color = colors.of(a)
		p.Add(l)
		lo, hi := a.Min, a.Max
		if lo <= 0 || lo > a.Median {
			lo = a.Median
		}
		if hi < a.Median {
			hi = a.Median
		}
		sp.XYs = append(sp.XYs, plotter.XY{X: a.Median, Y: y})
		sp.lo = append(sp.lo, a.Median-lo)
		sp.hi = append(sp.hi, hi-a.Median)
	}
	if eb, err := plotter.NewXErrorBars(sp); err == nil {
		eb.LineStyle.Width = vg.Points(1)
		p.Add(eb)
	}
	return true
}

// workerColors are the colours of the kinds of worker (exp.Worker).
var workerColors = map[exp.Worker]color.Color{
	exp.WorkerGoroutine: color.RGBA{0x2b, 0x8c, 0xbe, 0xff}, // blue
	exp.WorkerProcess:   color.RGBA{0xd9, 0x5f, 0x0e, 0xff}, // orange
	exp.WorkerThread:    color.RGBA{0x7b, 0x3a, 0x96, 0xff}, // purple
	exp.WorkerCPython:   color.RGBA{0x31, 0xa3, 0x54, 0xff}, // green
	exp.WorkerOther:     color.RGBA{0x66, 0x66, 0x66, 0xff}, // grey
}

// substrateColor keeps one colour per kind of worker across charts: the
// kind the substrate declares (exp.SubstrateWorker).
func substrateColor(s string) color.Color { return workerColors[exp.SubstrateWorker(s)] }

// placementShades: a bar's colour names its substrate, its shade its
// placement (unpinned as is, same CPU lighter, across CPUs darker).
var placementShades = []struct {
	name  string
	shade float64 // > 0 towards white, < 0 towards black
	says  string
}{
	{"unpinned", 0, "unpinned"},
	{"same-cpu", 0.5, "same-cpu (light)"},
	{"cross-cpu", -0.45, "cross-cpu (dark)"},
}

func shade(c color.Color, f float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 {
		x := float64(v >> 8)
		if f > 0 {
			x += (255 - x) * f
		} else {
			x *= 1 + f
		}
		return uint8(math.Round(x))
	}
	return color.RGBA{mix(r), mix(g), mix(b), 0xff}
}

// barPalette colours bars and explains the colours in a legend.
type barPalette struct {
	substrates []string // in order of appearance
	placements []int    // indexes into placementShades, in order of appearance
}

func barColors(arms []result.Arm) barPalette {
	var bp barPalette
	seenSub, seenPl := map[string]bool{}, map[int]bool{}
	for _, a := range arms {
		if sub := a.Substrate; sub != "" && !seenSub[sub] {
			seenSub[sub] = true
			bp.substrates = append(bp.substrates, sub)
		}
		if i := placementIndex(a.Placement); i >= 0 && !seenPl[i] {
			seenPl[i] = true
			bp.placements = append(bp.placements, i)
		}
	}
	sort.Ints(bp.placements)
	return bp
}

func placementIndex(name string) int {
	for i, p := range placementShades {
		if p.name == name {
			return i
		}
	}
	return -1
}

func (bp barPalette) of(a result.Arm) color.Color {
	c := substrateColor(a.Substrate)
	if i := placementIndex(a.Placement); i >= 0 && len(bp.placements) > 1 {
		c = shade(c, placementShades[i].shade)
	}
	return c
}

// legend: one entry per substrate colour, then, where arms differ in
// placement, one per placement shade (drawn in grey).
func (bp barPalette) legend() []legendItem {
	var out []legendItem
	byColor := map[color.Color]int{}
	for _, sub := range bp.substrates {
		c := substrateColor(sub)
		if i, ok := byColor[c]; ok {
			out[i].label += ", " + sub
			continue
		}
		byColor[c] = len(out)
		out = append(out, legendItem{label: sub, thumbs: []plot.Thumbnailer{swatch{c}}})
	}
	if len(bp.placements) > 1 {
		grey := color.RGBA{0x80, 0x80, 0x80, 0xff}
		for _, i := range bp.placements {
			out = append(out, legendItem{label: placementShades[i].says, thumbs: []plot.Thumbnailer{swatch{shade(grey, placementShades[i].shade)}},
				newRow: i == bp.placements[0]})
		}
	}
	return out
}

// barsReading compares the slowest and the fastest arm, each figure with
// its spread. It picks them from the quiet arms when at least two are
// quiet: a noisy arm's median may be far from its typical op, and the
// headline must not rest on it. The multiple is worded by exp.Compare.
func barsReading(experiment string, arms []result.Arm) string {
	if len(arms) == 1 {
		a := arms[0]
		return fmt.Sprintf("%s: %s per %s here.", short(experiment, a.Name), exp.Figure(a), opLabel(a.Op))
	}
	var quiet []result.Arm
	for _, a := range arms {
		if !a.Noise.Noisy {
			quiet = append(quiet, a)
		}
	}
	pool, note := arms, ""
	switch {
	case len(quiet) >= 2 && len(quiet) < len(arms):
		pool, note = quiet, fmt.Sprintf(" From the quiet arms: %s left out.", plural(len(arms)-len(quiet), "noisy arm"))
	case len(quiet) < len(arms):
		note = fmt.Sprintf(" %d of the %d arms are noisy: read the spreads.", len(arms)-len(quiet), len(arms))
	}
	lo, hi := pool[0], pool[0]
	for _, a := range pool {
		if a.Median < lo.Median {
			lo = a
		}
		if a.Median > hi.Median {
			hi = a
		}
	}
	how := exp.Compare(hi.Median, lo.Median, "longer than", "shorter than")
	if how == "about the same" {
		how = "about as long as"
	}
	return fmt.Sprintf("a %s %s takes %s a %s %s here: %s vs %s.%s", short(experiment, hi.Name), opLabel(hi.Op),
		how, short(experiment, lo.Name), opLabel(lo.Op), exp.Figure(hi), exp.Figure(lo), note)
}
