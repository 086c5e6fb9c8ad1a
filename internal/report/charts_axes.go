package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// measured says whether an arm has a figure to show (result.Arm.HasFigure).
func measured(a result.Arm) bool { return a.HasFigure() }

// short is the arm named name within its experiment (exp.ShortNameIn).
func short(experiment, name string) string { return exp.ShortNameIn(experiment, name) }

// axisUnit picks one unit for an axis from lo to hi (in unit), so that
// its typical tick reads between 1 and 1000: the divisor for tick values
// and the unit's name for the axis label. Times are scaled to ns, µs, ms
// or s and sizes to B, KiB, MiB or GiB; other units are shown as they are.
func axisUnit(unit string, lo, hi float64) (div float64, name string) {
	if lo > 0 && hi > lo {
		hi = math.Sqrt(lo * hi) // a log axis's middle
	}
	switch {
	case isTimeUnit(unit):
		for _, u := range []struct {
			div  float64
			name string
		}{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}} {
			if hi >= u.div {
				return u.div, u.name
			}
		}
		return 1, "ns"
	case unit == "B/op" || unit == "bytes":
		for _, u := range result.ByteUnits {
			if hi >= u.Size {
				return u.Size, u.Name
			}
		}
		return 1, "B"
	}
	return 1, unit
}

// isTimeUnit: figures in ns per something (ns/op, ns/element).
func isTimeUnit(unit string) bool { return unit == "" || strings.HasPrefix(unit, "ns/") }

// quantity names what an axis in unit measures.
func quantity(unit string) string {
	switch {
	case isTimeUnit(unit):
		return "time"
	case unit == "B/op" || unit == "bytes":
		return "memory"
	}
	return "value"
}

// tickLabel: 0.2, 15, 2500 — never an exponent.
func tickLabel(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// scaledTicks labels ticks in the axis's one unit (named in its label).
type scaledTicks struct {
	inner plot.Ticker
	div   float64
}

func (t scaledTicks) Ticks(min, max float64) []plot.Tick {
	ts := t.inner.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = tickLabel(ts[i].Value / t.div)
		}
	}
	return ts
}

// logTicks labels 1, 2 and 5 times each power of ten, so a log axis
// spanning less than two decades still has several labelled ticks.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return plot.LogTicks{Prec: -1}.Ticks(math.Max(min, 1e-9), math.Max(max, 1e-9))
	}
	// Fewer labels as the axis spans more decades, so none collide.
	decades := math.Log10(max / min)
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < min*0.999 || v > max*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 && (decades <= 7 || int(e)%2 == 0) || (m == 2 || m == 5) && decades <= 2.5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func axisTicker(log bool, div float64) plot.Ticker {
	if log {
		return scaledTicks{logTicks{}, div}
	}
	return scaledTicks{plot.DefaultTicks{}, div}
}

// axisLabel is "time per round trip (µs, log scale)".
func axisLabel(what, unitName string, log bool) string {
	if log {
		return fmt.Sprintf("%s (%s, log scale)", what, unitName)
	}
	return fmt.Sprintf("%s (%s)", what, unitName)
}

// spread is the min–max interval of each arm, drawn as error bars.
type spread struct {
	plotter.XYs
	lo, hi []float64
}

func (s spread) XError(i int) (float64, float64) { return s.lo[i], s.hi[i] }

func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = wrap(title, textStyle(titleSize), chartWidth-2*chartMargin-vg.Points(8))
	p.Title.TextStyle.Font = font.From(chartFont, titleSize)
	p.Title.Padding = vg.Points(8)
	p.X.Label.TextStyle.Font = font.From(chartFont, labelSize)
	p.Y.Label.TextStyle.Font = font.From(chartFont, labelSize)
	p.X.Tick.Label.Font = font.From(chartFont, tickSize)
	p.Y.Tick.Label.Font = font.From(chartFont, tickSize)
	p.Legend.TextStyle.Font = font.From(chartFont, legendSize)
	return p
}

// setXLabel sets the x axis's label, wrapped to fit under the data area
// (centred there, it may not reach past the chart's edges).
func setXLabel(p *plot.Plot, label string) {
	p.X.Label.Text = wrap(label, textStyle(labelSize), chartWidth*6/10)
}

// wrap breaks text at spaces into lines no wider than width, keeping
// the line breaks it has.
func wrap(s string, sty text.Style, width vg.Length) string {
	if strings.Contains(s, "\n") {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			out = append(out, wrap(l, sty, width))
		}
		return strings.Join(out, "\n")
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && sty.Width(line+" "+w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// wide says whether values span enough to need a log axis.
func wide(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi > 0 && hi/lo >= 20
}

func opLabel(op string) string {
	if op == "" {
		return "op"
	}
	return op
}

func minPositive(xs []float64) bool {
	for _, x := range xs {
		if x <= 0 {
			return false
		}
	}
	return true
}

// percentTicks labels a 0–1 axis in percent.
type percentTicks struct{}

func (percentTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for v := 0; v <= 100; v += 10 {
		t := plot.Tick{Value: float64(v) / 100}
		if v%20 == 0 {
			t.Label = strconv.Itoa(v)
		}
		ts = append(ts, t)
	}
	return ts
}
