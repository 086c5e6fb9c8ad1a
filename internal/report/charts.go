package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/ctxlab/ctxlab/internal/exp"
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

// inlineSVG is the chart as an <svg> element for embedding in HTML; the
// page embeds the font once (ChartFontFace).
func (c *Chart) inlineSVG() (string, error) {
	b, err := c.render("svg", false)
	if err != nil {
		return "", err
	}
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
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

// MaxLines is the most lines one line chart draws: each has a colour and a
// dash pattern of its own (lineStyle). More are split into parts.
const MaxLines = 8

// lineColors are eight colours most readers tell apart on white
// (Tableau's, with near-black for the eighth).
var lineColors = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // orange
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // green
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, // red
	color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
	color.RGBA{0x8c, 0x56, 0x4b, 0xff}, // brown
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, // pink
	color.RGBA{0x33, 0x33, 0x33, 0xff}, // near-black
}

// lineStyle is the colour and dash pattern of line i of a chart: distinct
// for every i below MaxLines, so no two lines of one chart look alike,
// in colour or in grey.
func lineStyle(i int) (color.Color, []vg.Length) {
	return lineColors[i%len(lineColors)], plotutil.Dashes(i)
}

// splitLines partitions the lines of a chart, named by the segments of
// their arms' names within the experiment, into parts of at most
// MaxLines, in order. Names that share leading segments stay together
// where they fit (all thread arms in one part, else thread/chan with
// thread/cond …), and small groups share a part.
func splitLines(names [][]exp.Segment) [][]int {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	return splitAt(names, idx, 0)
}

func splitAt(names [][]exp.Segment, idx []int, depth int) [][]int {
	if len(idx) <= MaxLines {
		return [][]int{idx}
	}
	var keys []string
	groups := map[string][]int{}
	deepest := 0
	for _, i := range idx {
		segs := names[i]
		deepest = max(deepest, len(segs))
		k := exp.JoinSegments(segs[:min(depth+1, len(segs))])
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	var out [][]int
	if depth >= deepest { // alike to the end: cut in order
		for len(idx) > 0 {
			n := min(MaxLines, len(idx))
			out, idx = append(out, idx[:n]), idx[n:]
		}
		return out
	}
	if len(keys) == 1 {
		return splitAt(names, idx, depth+1)
	}
	var cur []int
	flush := func() {
		if len(cur) > 0 {
			out, cur = append(out, cur), nil
		}
	}
	for _, k := range keys {
		g := groups[k]
		if len(g) > MaxLines {
			flush()
			out = append(out, splitAt(names, g, depth+1)...)
			continue
		}
		if len(cur)+len(g) > MaxLines {
			flush()
		}
		cur = append(cur, g...)
	}
	flush()
	return out
}

// partLabel says which arms a part holds: their common leading segments
// ("thread arms", "thread/futex arms"), else their first segments.
func partLabel(names [][]exp.Segment) string {
	common := names[0]
	var firsts []string
	for _, segs := range names {
		k := 0
		for k < len(common) && k < len(segs) && common[k] == segs[k] {
			k++
		}
		common = common[:k]
		if first := segs[0].String(); !slices.Contains(firsts, first) {
			firsts = append(firsts, first)
		}
	}
	switch {
	case len(names) == 1:
		return exp.JoinSegments(names[0])
	case len(common) > 0:
		return exp.JoinSegments(common) + " arms"
	}
	return strings.Join(firsts, ", ") + " arms"
}

// partTitle adds to a split chart's title which part it is and what it holds.
func partTitle(title string, part, parts int, names [][]exp.Segment) string {
	if parts <= 1 {
		return title
	}
	return fmt.Sprintf("%s\n%s (%d of %d)", title, partLabel(names), part, parts)
}

func measured(a result.Arm) bool {
	return a.Median > 0 && (a.Status == result.StatusOK || len(a.RepMeans) > 0)
}

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

// barsChart: one horizontal bar per measured arm (median), with a
// whisker from min to max, per unit (the first unit of the experiment).
func barsChart(experiment string, arms []result.Arm) *Chart {
	var sel []result.Arm
	unit := ""
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
	log := wide(all)
	base := 0.0
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
	div, unitName := axisUnit(unit, p.X.Min, p.X.Max)
	p.X.Tick.Marker = axisTicker(log, div)
	setXLabel(p, axisLabel(quantity(unit)+" per "+opLabel(op), unitName, log))
	sp := spread{}
	colors := barColors(sel)
	for i, a := range sel {
		y := float64(n - 1 - i)
		l, err := plotter.NewLine(plotter.XYs{{X: base, Y: y}, {X: a.Median, Y: y}})
		if err != nil {
			return nil
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
	p.NominalY(names...)
	p.Y.Padding = vg.Points(6)
	return &Chart{Experiment: experiment, Kind: ChartBars, Title: p.Title.Text, Reading: barsReading(experiment, sel),
		plot: p, legend: colors.legend(), w: chartWidth, h: vg.Length(n)*0.28*vg.Inch + 1.1*vg.Inch}
}

func opLabel(op string) string {
	if op == "" {
		return "op"
	}
	return op
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

// paramKeys that are sizes or counts worth plotting against; any other
// numeric parameter qualifies too, except these configuration ones.
var notSweep = map[string]bool{"gomaxprocs": true, "cpus": true, "cpu": true}

// armParams are an arm's parameters (exp.ArmParams).
var armParams = exp.ArmParams

// sweepParam picks the numeric parameter along which the most arms of a
// group (arms equal but for it) vary, or "": the groups by name, and each
// name's segments.
func sweepParam(experiment string, arms []result.Arm) (string, map[string][]result.Arm, map[string][]exp.Segment) {
	keys := map[string]bool{}
	for _, a := range arms {
		for k, v := range armParams(a) {
			if _, ok := parseNum(v); ok && !notSweep[k] {
				keys[k] = true
			}
		}
	}
	var best string
	var bestGroups map[string][]result.Arm
	var bestSegs map[string][]exp.Segment
	bestN := 0
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		groups, segs := map[string][]result.Arm{}, map[string][]exp.Segment{}
		n := 0
		for _, a := range arms {
			v, ok := armParams(a)[k]
			if !ok || !measured(a) {
				continue
			}
			g, gs := groupName(experiment, a, k, v)
			groups[g], segs[g] = append(groups[g], a), gs
		}
		for _, g := range groups {
			if len(g) >= 2 {
				n += len(g)
			}
		}
		if n > bestN {
			best, bestGroups, bestSegs, bestN = k, groups, segs, n
		}
	}
	return best, bestGroups, bestSegs
}

// groupName is the arm's name within its experiment without the swept
// parameter (its segment key=val, or a bare val), and those segments.
func groupName(experiment string, a result.Arm, key, val string) (string, []exp.Segment) {
	var parts []exp.Segment
	for _, s := range exp.ShortSegmentsIn(experiment, a.Name) {
		if s == (exp.Segment{Key: key, Value: val}) || s == exp.Seg(val) {
			continue
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return experiment, []exp.Segment{exp.Seg(experiment)}
	}
	return exp.JoinSegments(parts), parts
}

func paramValue(a result.Arm, key string) float64 {
	v, _ := parseNum(armParams(a)[key])
	return v
}

// parseNum reads a parameter value: a number, optionally with a size or
// count suffix (4KiB, 4MiB, 1GiB, 10k, 2M, 64B), as working-set sizes and
// counts are often written.
func parseNum(s string) (float64, bool) {
	mult := 1.0
	for _, suf := range []struct {
		s string
		m float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"k", 1e3}, {"K", 1 << 10}, {"M", 1e6}, {"G", 1e9}, {"B", 1}} {
		if strings.HasSuffix(s, suf.s) && len(s) > len(suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v * mult, true
}

// paramCharts: median against a swept numeric parameter, one line per
// group, in parts of at most MaxLines lines that share their axes.
func paramCharts(experiment string, arms []result.Arm) []*Chart {
	key, groups, groupSegs := sweepParam(experiment, arms)
	if key == "" {
		return nil
	}
	var names []string
	for g, as := range groups {
		if len(as) >= 2 {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	unit := groups[names[0]][0].Unit
	op := groups[names[0]][0].Op
	title := fmt.Sprintf("%s: %s per %s against %s", experiment, quantity(unit), opLabel(op), key)
	var xs, ys []float64
	for _, g := range names {
		for _, a := range groups[g] {
			xs = append(xs, paramValue(a, key))
			ys = append(ys, a.Median)
		}
	}
	logX, logY := wide(xs) && minPositive(xs), wide(ys)
	lo, hi := math.Inf(1), 0.0
	for _, y := range ys {
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	segs := make([][]exp.Segment, len(names))
	for i, g := range names {
		segs[i] = groupSegs[g]
	}
	parts := splitLines(segs)
	var out []*Chart
	for pi, part := range parts {
		var pnames []string
		var psegs [][]exp.Segment
		for _, i := range part {
			pnames, psegs = append(pnames, names[i]), append(psegs, segs[i])
		}
		p := newPlot(partTitle(title, pi+1, len(parts), psegs))
		if logX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = logTicks{}
		}
		p.X.Min, p.X.Max = slices.Min(xs), slices.Max(xs)
		xUnit := "count"
		if isSizeParam(experiment, key) {
			xlo := 0.0
			if logX {
				xlo = slices.Min(xs)
			}
			div, name := axisUnit("bytes", xlo, slices.Max(xs))
			p.X.Tick.Marker, xUnit = axisTicker(logX, div), name
		}
		if logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Min, p.Y.Max = lo/1.3, hi*1.3
		} else {
			p.Y.Min, p.Y.Max = 0, hi*1.1
		}
		div, unitName := axisUnit(unit, p.Y.Min, p.Y.Max)
		p.Y.Tick.Marker = axisTicker(logY, div)
		setXLabel(p, paramAxisLabel(key, xUnit, logX))
		p.Y.Label.Text = axisLabel(quantity(unit)+" per "+opLabel(op), unitName, logY)
		var legend []legendItem
		var readings []string
		for i, g := range pnames {
			as := append([]result.Arm(nil), groups[g]...)
			sort.Slice(as, func(i, j int) bool { return paramValue(as[i], key) < paramValue(as[j], key) })
			var pts plotter.XYs
			for _, a := range as {
				pts = append(pts, plotter.XY{X: paramValue(a, key), Y: a.Median})
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				continue
			}
			l.LineStyle.Color, l.LineStyle.Dashes = lineStyle(i)
			s.Color = l.LineStyle.Color
			s.Shape = plotutil.Shape(i)
			p.Add(l, s)
			legend = append(legend, legendItem{label: g, thumbs: []plot.Thumbnailer{l, s}})
			first, last := as[0], as[len(as)-1]
			readings = append(readings, fmt.Sprintf("%s %s → %s from %s=%s to %s=%s (%.2f×)", g,
				result.FormatValue(first.Median, unit), result.FormatValue(last.Median, unit),
				key, armParams(first)[key], key, armParams(last)[key], last.Median/first.Median))
		}
		out = append(out, &Chart{Experiment: experiment, Kind: ChartParam, Title: p.Title.Text, Part: pi + 1, Parts: len(parts),
			Reading: strings.Join(readings, "; ") + ".", plot: p, legend: legend, w: chartWidth, h: 3.4 * vg.Inch})
	}
	if len(out) == 1 {
		out[0].Part, out[0].Parts = 0, 0
	}
	return out
}

func minPositive(xs []float64) bool {
	for _, x := range xs {
		if x <= 0 {
			return false
		}
	}
	return true
}

// cdfCharts: the cumulative share of sampled ops at or below each
// latency, from the arms' histograms, in parts of at most MaxLines arms
// that share their axes.
func cdfCharts(experiment string, arms []result.Arm) []*Chart {
	var sel []result.Arm
	var names []string
	var segs [][]exp.Segment
	for _, a := range arms {
		var total int64
		for _, b := range a.Histogram {
			total += b.Count
		}
		if total > 0 {
			sel = append(sel, a)
			names = append(names, short(experiment, a.Name))
			segs = append(segs, exp.ShortSegmentsIn(experiment, a.Name))
		}
	}
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
		worst, worstRatio := result.Arm{}, 0.0
		for li, i := range part {
			a := sel[i]
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
			l, err := plotter.NewLine(pts)
			if err != nil {
				continue
			}
			l.LineStyle.Color, l.LineStyle.Dashes = lineStyle(li)
			l.LineStyle.Width = vg.Points(1.5)
			p.Add(l)
			legend = append(legend, legendItem{label: names[i], thumbs: []plot.Thumbnailer{l}})
			if pc := a.Percentiles; pc != nil && pc.P50 > 0 && pc.P99/pc.P50 > worstRatio {
				worst, worstRatio = a, pc.P99/pc.P50
			}
		}
		reading := fmt.Sprintf("%d arms with sampled latencies.", len(part))
		if worstRatio > 0 {
			pc := worst.Percentiles
			reading = fmt.Sprintf("the widest tail is %s: p50 %s, p99 %s (%.1f× p50), p99.9 %s.", short(experiment, worst.Name),
				result.FormatNs(pc.P50), result.FormatNs(pc.P99), worstRatio, result.FormatNs(pc.P999))
			if len(parts) > 1 {
				reading = "of these, " + reading
			}
		}
		out = append(out, &Chart{Experiment: experiment, Kind: ChartCDF, Title: p.Title.Text, Reading: reading, Part: pi + 1, Parts: len(parts),
			plot: p, legend: legend, w: chartWidth, h: 3.4 * vg.Inch})
	}
	if len(out) == 1 {
		out[0].Part, out[0].Parts = 0, 0
	}
	return out
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

// isSizeParam says whether the experiment's parameter key is a size in
// bytes, as the experiment declares (exp.SizeParam).
func isSizeParam(experiment, key string) bool { return exp.SizeParam(experiment, key) }

// paramAxisLabel names the swept parameter and its unit.
func paramAxisLabel(key, unit string, log bool) string {
	what := key
	switch key {
	case "n", "workers", "threads":
		what = key + ": workers"
	case "k", "tasks":
		what = key + ": tasks"
	case "w", "ws", "size":
		what = key + ": working set"
	}
	return axisLabel(what, unit, log)
}
