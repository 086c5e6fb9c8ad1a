package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/result"
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
// reading of the figures.
type Chart struct {
	Experiment string
	Kind       string
	Title      string
	Reading    string
	plot       *plot.Plot
	w, h       vg.Length
}

// Name is how --chart selects it: "pingpong" for the bars, else
// "pingpong:param", "pingpong:cdf".
func (c *Chart) Name() string {
	if c.Kind == ChartBars {
		return c.Experiment
	}
	return c.Experiment + ":" + c.Kind
}

// Render writes the chart as "svg" or "png".
func (c *Chart) Render(format string) ([]byte, error) {
	wt, err := c.plot.WriterTo(c.w, c.h, format)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// inlineSVG is the chart as an <svg> element for embedding in HTML.
func (c *Chart) inlineSVG() (string, error) {
	b, err := c.Render("svg")
	if err != nil {
		return "", err
	}
	s := string(b)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return s, nil
}

// Charts builds every chart for run, experiment by experiment.
func Charts(run *result.Run) []*Chart {
	var out []*Chart
	for _, name := range experimentOrder(run) {
		out = append(out, ExperimentCharts(name, armsOf(run, name))...)
	}
	return out
}

// ExperimentCharts builds the charts of one experiment's arms.
func ExperimentCharts(exp string, arms []result.Arm) []*Chart {
	var out []*Chart
	if c := barsChart(exp, arms); c != nil {
		out = append(out, c)
	}
	if c := paramChart(exp, arms); c != nil {
		out = append(out, c)
	}
	if c := cdfChart(exp, arms); c != nil {
		out = append(out, c)
	}
	return out
}

func measured(a result.Arm) bool {
	return a.Median > 0 && (a.Status == result.StatusOK || len(a.RepMeans) > 0)
}

func short(exp, name string) string { return strings.TrimPrefix(name, exp+"/") }

// valueTicks labels ticks with scaled units (850 ns, 4.2 µs).
type valueTicks struct {
	inner plot.Ticker
	unit  string
}

func (t valueTicks) Ticks(min, max float64) []plot.Tick {
	ts := t.inner.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = result.FormatValue(ts[i].Value, t.unit)
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
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < min*0.999 || v > max*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func axisTicker(log bool, unit string) plot.Ticker {
	if log {
		return valueTicks{logTicks{}, unit}
	}
	return valueTicks{plot.DefaultTicks{}, unit}
}

// spread is the min–max interval of each arm, drawn as error bars.
type spread struct {
	plotter.XYs
	lo, hi []float64
}

func (s spread) XError(i int) (float64, float64) { return s.lo[i], s.hi[i] }

func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Title.Padding = vg.Points(8)
	p.X.Label.TextStyle.Font.Size = vg.Points(9)
	p.Y.Label.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Y.Tick.Label.Font.Size = vg.Points(8)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
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
func barsChart(exp string, arms []result.Arm) *Chart {
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
	p := newPlot(fmt.Sprintf("%s: %s per %s (median; whisker min–max)", exp, unitLabel(unit), opLabel(op)))
	n := len(sel)
	names := make([]string, n)
	var all []float64
	for i, a := range sel {
		names[n-1-i] = short(exp, a.Name)
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
	p.X.Tick.Marker = axisTicker(log, unit)
	p.X.Label.Text = unitLabel(unit)
	if log {
		p.X.Label.Text += " (log scale)"
	}
	sp := spread{}
	for i, a := range sel {
		y := float64(n - 1 - i)
		l, err := plotter.NewLine(plotter.XYs{{X: base, Y: y}, {X: a.Median, Y: y}})
		if err != nil {
			return nil
		}
		l.LineStyle.Width = vg.Points(9)
		l.LineStyle.Color = substrateColor(a.Substrate)
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
	return &Chart{Experiment: exp, Kind: ChartBars, Title: p.Title.Text, Reading: barsReading(exp, sel),
		plot: p, w: 7 * vg.Inch, h: vg.Length(n)*0.28*vg.Inch + 1.1*vg.Inch}
}

func unitLabel(unit string) string {
	if unit == "" || unit == "ns/op" {
		return "time"
	}
	return unit
}

func opLabel(op string) string {
	if op == "" {
		return "op"
	}
	return op
}

// substrateColor keeps one colour per substrate across charts.
func substrateColor(s string) color.Color {
	switch {
	case strings.Contains(s, "goroutine"):
		return color.RGBA{0x2b, 0x8c, 0xbe, 0xff}
	case strings.Contains(s, "process"):
		return color.RGBA{0xd9, 0x5f, 0x0e, 0xff}
	case strings.Contains(s, "thread"):
		return color.RGBA{0x7b, 0x3a, 0x96, 0xff}
	case strings.Contains(s, "py") || strings.Contains(s, "task"):
		return color.RGBA{0x31, 0xa3, 0x54, 0xff}
	}
	return color.RGBA{0x66, 0x66, 0x66, 0xff}
}

// barsReading compares the slowest and the fastest arm.
func barsReading(exp string, arms []result.Arm) string {
	if len(arms) == 1 {
		a := arms[0]
		return fmt.Sprintf("%s: %s per %s here (min %s, max %s).", short(exp, a.Name),
			result.FormatValue(a.Median, a.Unit), opLabel(a.Op), result.FormatValue(a.Min, a.Unit), result.FormatValue(a.Max, a.Unit))
	}
	lo, hi := arms[0], arms[0]
	for _, a := range arms {
		if a.Median < lo.Median {
			lo = a
		}
		if a.Median > hi.Median {
			hi = a
		}
	}
	return fmt.Sprintf("a %s %s costs %.1f× a %s %s here (%s vs %s).", short(exp, hi.Name), opLabel(hi.Op),
		hi.Median/lo.Median, short(exp, lo.Name), opLabel(lo.Op),
		result.FormatValue(hi.Median, hi.Unit), result.FormatValue(lo.Median, lo.Unit))
}

// paramKeys that are sizes or counts worth plotting against; any other
// numeric parameter qualifies too, except these configuration ones.
var notSweep = map[string]bool{"gomaxprocs": true, "cpus": true, "cpu": true}

// armParams are the arm's parameters, plus key=value parts of its name.
func armParams(a result.Arm) map[string]string {
	m := map[string]string{}
	for _, part := range strings.Split(a.Name, "/") {
		if k, v, ok := strings.Cut(part, "="); ok {
			m[k] = v
		}
	}
	for k, v := range a.Params {
		m[k] = v
	}
	return m
}

// sweepParam picks the numeric parameter along which the most arms of a
// group (arms equal but for it) vary, or "".
func sweepParam(exp string, arms []result.Arm) (string, map[string][]result.Arm) {
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
	bestN := 0
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		groups := map[string][]result.Arm{}
		n := 0
		for _, a := range arms {
			v, ok := armParams(a)[k]
			if !ok || !measured(a) {
				continue
			}
			g := groupName(exp, a, k, v)
			groups[g] = append(groups[g], a)
		}
		for _, g := range groups {
			if len(g) >= 2 {
				n += len(g)
			}
		}
		if n > bestN {
			best, bestGroups, bestN = k, groups, n
		}
	}
	return best, bestGroups
}

// groupName is the arm's name without the swept parameter.
func groupName(exp string, a result.Arm, key, val string) string {
	var parts []string
	for _, p := range strings.Split(short(exp, a.Name), "/") {
		if p == key+"="+val || p == val {
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return exp
	}
	return strings.Join(parts, "/")
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

// paramChart: median against a swept numeric parameter, one line per group.
func paramChart(exp string, arms []result.Arm) *Chart {
	key, groups := sweepParam(exp, arms)
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
	p := newPlot(fmt.Sprintf("%s: %s per %s against %s", exp, unitLabel(unit), opLabel(op), key))
	var xs, ys []float64
	for _, g := range names {
		for _, a := range groups[g] {
			xs = append(xs, paramValue(a, key))
			ys = append(ys, a.Median)
		}
	}
	logX, logY := wide(xs) && minPositive(xs), wide(ys)
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	lo, hi := math.Inf(1), 0.0
	for _, y := range ys {
		lo, hi = math.Min(lo, y), math.Max(hi, y)
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
		// Room above the lines for the legend.
		p.Y.Min, p.Y.Max = lo/1.5, hi*math.Pow(hi/lo, 0.35)
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.35
	}
	p.Y.Tick.Marker = axisTicker(logY, unit)
	p.X.Label.Text = key
	p.Y.Label.Text = unitLabel(unit) + " per " + opLabel(op)
	var readings []string
	for i, g := range names {
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
		l.LineStyle.Color = plotutil.Color(i)
		l.LineStyle.Dashes = plotutil.Dashes(i)
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(g, l, s)
		first, last := as[0], as[len(as)-1]
		readings = append(readings, fmt.Sprintf("%s %s → %s from %s=%s to %s=%s (%.2f×)", g,
			result.FormatValue(first.Median, unit), result.FormatValue(last.Median, unit),
			key, armParams(first)[key], key, armParams(last)[key], last.Median/first.Median))
	}
	p.Legend.Top, p.Legend.Left = true, true
	return &Chart{Experiment: exp, Kind: ChartParam, Title: p.Title.Text,
		Reading: strings.Join(readings, "; ") + ".", plot: p, w: 7 * vg.Inch, h: 3.6 * vg.Inch}
}

func minPositive(xs []float64) bool {
	for _, x := range xs {
		if x <= 0 {
			return false
		}
	}
	return true
}

// cdfChart: the cumulative share of sampled ops at or below each latency,
// from the arms' histograms.
func cdfChart(exp string, arms []result.Arm) *Chart {
	var sel []result.Arm
	for _, a := range arms {
		if len(a.Histogram) > 0 {
			sel = append(sel, a)
		}
	}
	if len(sel) == 0 {
		return nil
	}
	p := newPlot(fmt.Sprintf("%s: latency distribution per %s (share of sampled ops ≤ x)", exp, opLabel(sel[0].Op)))
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = axisTicker(true, "ns/op")
	p.X.Label.Text = "latency of one " + opLabel(sel[0].Op) + " (log scale)"
	p.Y.Label.Text = "share of ops"
	p.Y.Min, p.Y.Max = 0, 1
	worst, worstRatio := result.Arm{}, 0.0
	for i, a := range sel {
		var total int64
		for _, b := range a.Histogram {
			total += b.Count
		}
		if total == 0 {
			continue
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
		l.LineStyle.Color = plotutil.Color(i)
		l.LineStyle.Dashes = plotutil.Dashes(i)
		l.LineStyle.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(short(exp, a.Name), l)
		if pc := a.Percentiles; pc != nil && pc.P50 > 0 && pc.P99/pc.P50 > worstRatio {
			worst, worstRatio = a, pc.P99/pc.P50
		}
	}
	p.Legend.Top, p.Legend.Left = false, false
	reading := fmt.Sprintf("%d arms with sampled latencies.", len(sel))
	if worstRatio > 0 {
		pc := worst.Percentiles
		reading = fmt.Sprintf("the widest tail is %s: p50 %s, p99 %s (%.1f× p50), p99.9 %s.", short(exp, worst.Name),
			result.FormatNs(pc.P50), result.FormatNs(pc.P99), worstRatio, result.FormatNs(pc.P999))
	}
	return &Chart{Experiment: exp, Kind: ChartCDF, Title: p.Title.Text, Reading: reading,
		plot: p, w: 7 * vg.Inch, h: 3.8 * vg.Inch}
}
