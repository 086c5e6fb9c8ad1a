package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/color"
	"math"
	"strings"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// Chart kinds. Every experiment gets a bars chart; param and cdf charts
// appear where the arms carry what they need, so experiments added later
// (ring, yield, cachecost, interference, hop …) get them without code here.
const (
	ChartBars  = "bars"  // median per arm with min–max spread
	ChartParam = "param" // median against a numeric parameter (n, k, workers …)
	ChartCDF   = "cdf"   // latency distribution of arms with a histogram
)

// Chart is one rendered-to-be chart of an experiment, with its one-line
// reading of the figures and a legend drawn below the plot, never over it.
// A line chart with more lines than it can tell apart (MaxLines) is drawn
// as Parts charts, this one being number Part.
type Chart struct {
	Experiment string
	Kind       string
	Title      string
	Reading    string
	Part       int // 1…Parts; 0 for a chart drawn whole
	Parts      int
	plot       *plot.Plot
	legend     []legendItem
	w, h       vg.Length // the plot's size; the legend adds to h
}

// Name is how --chart selects it: "pingpong" for the bars, else
// "pingpong:param", "pingpong:cdf", and "pingpong:cdf-2" for the second
// part of a split one.
func (c *Chart) Name() string {
	n := c.Experiment
	if c.Kind != ChartBars {
		n += ":" + c.Kind
	}
	if c.Parts > 1 {
		n += fmt.Sprintf("-%d", c.Part)
	}
	return n
}

// Render writes the chart as "svg" (with its font embedded, so it renders
// alike everywhere) or "png".
func (c *Chart) Render(format string) ([]byte, error) { return c.render(format, true) }

func (c *Chart) render(format string, embedFont bool) ([]byte, error) {
	lh := c.legendHeight()
	w, h := c.w, c.h+lh
	var cv vg.CanvasWriterTo
	if format == "svg" {
		cv = vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(embedFont))
	} else {
		var err error
		if cv, err = draw.NewFormattedCanvas(w, h, format); err != nil {
			return nil, err
		}
	}
	defer c.rewrap()()
	dc := draw.New(cv)
	// A margin round the plot: a browser's line box for a label is a
	// little taller than the font's extents that gonum lays out with.
	c.plot.Draw(draw.Crop(dc, chartMargin, -chartMargin, lh, -chartMargin))
	c.drawLegend(draw.Crop(dc, legendInset, -legendInset, legendInset, -(c.h + legendInset)))
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return nil, err
	}
	if format == "svg" {
		return []byte(strings.ReplaceAll(b.String(), "font-family:"+chartFamily+";", "font-family:"+chartFontStack+";")), nil
	}
	return b.Bytes(), nil
}

// inlineSVG is the chart as an <svg> element of class class for
// embedding in HTML; the page embeds the font once (ChartFontFace).
func (c *Chart) inlineSVG(class string) (string, error) {
	b, err := c.render("svg", false)
	if err != nil {
		return "", err
	}
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = `<svg class="` + class + `"` + s[i+len("<svg"):]
	}
	return s, nil
}

// NarrowChartPx is the width, in CSS px, a chart is drawn at for a phone:
// a 390 px screen less the page's margins. Its text keeps its size, so it
// reads as the wide chart's does, and the page need not scroll it.
const NarrowChartPx = 352

// MinNarrowChartPx is the narrowest a page may show a narrow chart for
// its ticks to read MinTextPx.
func MinNarrowChartPx() int {
	return int(math.Ceil(NarrowChartPx * MinTextPx / (float64(tickSize) * 96 / 72)))
}

// narrow is the chart laid out for a phone (NarrowChartPx): the same plot
// in a narrower canvas, its title and axis label wrapped anew when drawn.
func (c *Chart) narrow() *Chart {
	n := *c
	n.w = vg.Length(NarrowChartPx * 72.0 / 96)
	return &n
}

// rewrap lays a narrow chart's text out for its width, and returns what
// puts the wide chart's back (the plot is shared): the title wrapped anew,
// the x axis's label moved under it (a label centred under a narrow data
// area runs past the chart's edge, and gonum sets its lines too close
// for a browser), and the x ticks thinned to labels that do not touch.
func (c *Chart) rewrap() (undo func()) {
	if c.w == chartWidth {
		return func() {}
	}
	p := c.plot
	title, label, marker := p.Title.Text, p.X.Label.Text, p.X.Tick.Marker
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	t := flat(title)
	if l := flat(label); l != "" {
		t += " — x: " + l
	}
	p.Title.Text = wrap(t, textStyle(titleSize), c.w-2*chartMargin-vg.Points(8))
	p.X.Label.Text = ""
	p.X.Tick.Marker = thinTicks{marker}
	return func() { p.Title.Text, p.X.Label.Text, p.X.Tick.Marker = title, label, marker }
}

// thinTicks keeps few enough of a ticker's labels for a narrow chart
// (tooManyTicks), the rest left as unlabelled ticks: on a log axis the
// powers of ten (1, 10, 100) first, then every other one.
type thinTicks struct{ plot.Ticker }

// tooManyTicks says a narrow chart's axis cannot show these labels apart:
// more than 5, or more than 10 characters in all.
func tooManyTicks(ticks []plot.Tick) bool {
	n, chars := 0, 0
	for _, k := range ticks {
		if k.Label != "" {
			n++
			chars += len(k.Label)
		}
	}
	return n > 5 || chars > 10
}

func (t thinTicks) Ticks(min, max float64) []plot.Tick {
	ticks := t.Ticker.Ticks(min, max)
	if tooManyTicks(ticks) {
		ones := append([]plot.Tick(nil), ticks...)
		n := 0
		for i, k := range ones {
			if k.Label != "" && !strings.HasPrefix(strings.TrimLeft(k.Label, "0."), "1") {
				ones[i].Label = ""
			} else if k.Label != "" {
				n++
			}
		}
		if n >= 2 {
			ticks = ones
		}
	}
	for tooManyTicks(ticks) {
		i := 0
		for j := range ticks {
			if ticks[j].Label == "" {
				continue
			}
			if i%2 == 1 {
				ticks[j].Label = ""
			}
			i++
		}
	}
	return ticks
}

// Every chart's text is set in Liberation Sans, the face gonum/plot measures
// it with. Standalone SVGs and the HTML report embed that face, so each
// label takes exactly the room laid out for it whatever fonts the viewer
// has; the font stack after it ends in a generic family all the same.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

const (
	chartFamily    = "Liberation Sans"
	chartFontStack = "'Liberation Sans',Arimo,Arial,Helvetica,sans-serif"
)

// ChartFontFace is a CSS @font-face rule carrying the charts' font, for a
// page that inlines charts (rendered without their own copy of it).
func ChartFontFace() string {
	return "@font-face { font-family: '" + chartFamily + "'; font-style: normal; font-weight: normal; src: url(data:font/ttf;base64," +
		base64.StdEncoding.EncodeToString(liberationsansregular.TTF) + ") format('truetype'); }"
}

func textStyle(size vg.Length) text.Style {
	return text.Style{Font: font.From(chartFont, size), Handler: plot.DefaultTextHandler}
}

// legendItem is one legend entry: a label and what it looks like. An item
// with newRow starts a new row (substrates on one, placements on the next).
type legendItem struct {
	label  string
	thumbs []plot.Thumbnailer
	newRow bool
}

const (
	chartWidth  = 7 * vg.Inch
	chartMargin = vg.Length(4)
	legendInset = vg.Length(6)
	legendGap   = vg.Length(14) // between columns
	legendPad   = vg.Length(3)  // between rows
	legendThumb = vg.Length(30) // long enough to show a line's dash pattern
)

// Text sizes, in points (an SVG's user units). At a chart's own width
// (chartWidth, 672 CSS px) the smallest, the ticks, reads 12 px and the
// legend 13 px; a page that shrinks a chart keeps it at least
// MinChartWidthPx wide, where the ticks still read 10 px.
const (
	titleSize  = vg.Length(12)
	labelSize  = vg.Length(10)
	tickSize   = vg.Length(9)
	legendSize = vg.Length(10)
)

// MinTextPx is the smallest text size, in CSS px, a chart may be shown at.
const MinTextPx = 10

// MinChartWidthPx is the narrowest a page may show a chart, in CSS px, for
// its smallest text (tickSize) to read MinTextPx; narrower, it should
// scroll instead.
func MinChartWidthPx() int {
	const pxPerPt = 96.0 / 72
	return int(math.Ceil(float64(chartWidth) * pxPerPt * MinTextPx / (float64(tickSize) * pxPerPt)))
}

// legendLayout places the entries row by row in equal columns, as many as
// the width allows: each entry's column and row.
func (c *Chart) legendLayout() (pos [][2]int, rows int, colW, rowH vg.Length) {
	if len(c.legend) == 0 {
		return nil, 0, 0, 0
	}
	sty := textStyle(legendSize)
	for _, it := range c.legend {
		r := sty.Rectangle(" " + it.label)
		colW = max(colW, legendThumb+r.Max.X+legendGap)
		rowH = max(rowH, r.Max.Y)
	}
	cols := max(1, int((c.w-2*legendInset+legendGap)/colW))
	col, row := 0, 0
	for i, it := range c.legend {
		if i > 0 && (col == cols || it.newRow) {
			col, row = 0, row+1
		}
		pos = append(pos, [2]int{col, row})
		col++
	}
	return pos, row + 1, colW, rowH
}

func (c *Chart) legendHeight() vg.Length {
	_, rows, _, rowH := c.legendLayout()
	if rows == 0 {
		return 0
	}
	return vg.Length(rows)*(rowH+legendPad) + 2*legendInset
}

// drawLegend draws the entries into the strip below the plot, top down.
func (c *Chart) drawLegend(dc draw.Canvas) {
	pos, _, colW, rowH := c.legendLayout()
	sty := textStyle(legendSize)
	descent := sty.FontExtents().Descent
	for i, it := range c.legend {
		x := dc.Min.X + vg.Length(pos[i][0])*colW
		top := dc.Max.Y - vg.Length(pos[i][1])*(rowH+legendPad)
		icon := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: top - rowH}, Max: vg.Point{X: x + legendThumb, Y: top}}}
		for _, th := range it.thumbs {
			th.Thumbnail(&icon)
		}
		dc.FillText(sty, vg.Point{X: x + legendThumb + sty.Width(" "), Y: top - rowH + descent}, it.label)
	}
}

// swatch is a legend thumbnail: a filled box.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	dy := (r.Max.Y - r.Min.Y) * 0.15
	c.FillPolygon(s.c, []vg.Point{{X: r.Min.X, Y: r.Min.Y + dy}, {X: r.Max.X, Y: r.Min.Y + dy}, {X: r.Max.X, Y: r.Max.Y - dy}, {X: r.Min.X, Y: r.Max.Y - dy}})
}

// Charts builds every chart for run, experiment by experiment.
func Charts(run *result.Run) []*Chart {
	var out []*Chart
	for _, name := range experimentOrder(run) {
		out = append(out, ExperimentCharts(name, armsOf(run, name))...)
	}
	return out
}

// ExperimentCharts builds the charts of one experiment's arms. Names,
// titles and readings are drawn escaped (termsafe): an SVG escapes markup,
// not control characters.
func ExperimentCharts(experiment string, arms []result.Arm) []*Chart {
	experiment, arms = termsafe.String(experiment), termsafe.Strings(arms)
	var out []*Chart
	if c := wallCPUChart(experiment, arms); c != nil { // diagnose --vary: wall and CPU time per value
		out = append(out, c)
	} else if c := barsChart(experiment, arms); c != nil {
		out = append(out, c)
	}
	out = append(out, paramCharts(experiment, arms)...)
	out = append(out, cdfCharts(experiment, arms)...)
	return out
}
