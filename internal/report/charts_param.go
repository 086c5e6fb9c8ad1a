package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

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
	ax := newParamAxes(experiment, key, names, groups)
	title := fmt.Sprintf("%s: %s per %s against %s", experiment, quantity(ax.unit), opLabel(ax.op), key)
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
		ax.set(p)
		var legend []legendItem
		var readings []string
		for i, g := range pnames {
			item, reading, ok := paramLine(p, i, g, groups[g], key, ax.unit)
			if ok {
				legend, readings = append(legend, item), append(readings, reading)
			}
		}
		out = append(out, &Chart{Experiment: experiment, Kind: ChartParam, Title: p.Title.Text, Part: pi + 1, Parts: len(parts),
			Reading: strings.Join(readings, "; ") + ".", plot: p, legend: legend, w: chartWidth, h: 3.4 * vg.Inch})
	}
	if len(out) == 1 {
		out[0].Part, out[0].Parts = 0, 0
	}
	return out
}

// paramAxes are the axes every part of a param chart shares: the swept
// parameter's values across, the medians up, each on a log scale when
// it spans widely.
type paramAxes struct {
	experiment, key, unit, op string
	xs                        []float64
	logX, logY                bool
	lo, hi                    float64 // the medians' range
}

func newParamAxes(experiment, key string, names []string, groups map[string][]result.Arm) paramAxes {
	ax := paramAxes{experiment: experiment, key: key, unit: groups[names[0]][0].Unit, op: groups[names[0]][0].Op}
	var ys []float64
	for _, g := range names {
		for _, a := range groups[g] {
			ax.xs = append(ax.xs, paramValue(a, key))
			ys = append(ys, a.Median)
		}
	}
	ax.logX, ax.logY = wide(ax.xs) && minPositive(ax.xs), wide(ys)
	ax.lo, ax.hi = math.Inf(1), 0.0
	for _, y := range ys {
		ax.lo, ax.hi = math.Min(ax.lo, y), math.Max(ax.hi, y)
	}
	return ax
}

// set lays the axes out on p: scales, ranges, ticks in one unit each
// (bytes for a size parameter), and their labels.
func (ax paramAxes) set(p *plot.Plot) {
	if ax.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	p.X.Min, p.X.Max = slices.Min(ax.xs), slices.Max(ax.xs)
	xUnit := "count"
	if isSizeParam(ax.experiment, ax.key) {
		xlo := 0.0
		if ax.logX {
			xlo = slices.Min(ax.xs)
		}
		div, name := axisUnit("bytes", xlo, slices.Max(ax.xs))
		p.X.Tick.Marker, xUnit = axisTicker(ax.logX, div), name
	}
	if ax.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Min, p.Y.Max = ax.lo/1.3, ax.hi*1.3
	} else {
		p.Y.Min, p.Y.Max = 0, ax.hi*1.1
	}
	div, unitName := axisUnit(ax.unit, p.Y.Min, p.Y.Max)
	p.Y.Tick.Marker = axisTicker(ax.logY, div)
	setXLabel(p, paramAxisLabel(ax.key, xUnit, ax.logX))
	p.Y.Label.Text = axisLabel(quantity(ax.unit)+" per "+opLabel(ax.op), unitName, ax.logY)
}

// paramLine adds group g's line, the i-th of its chart, to p: its arms'
// medians against the parameter key, with its legend entry and reading.
func paramLine(p *plot.Plot, i int, g string, arms []result.Arm, key, unit string) (legendItem, string, bool) {
	as := append([]result.Arm(nil), arms...)
	sort.Slice(as, func(i, j int) bool { return paramValue(as[i], key) < paramValue(as[j], key) })
	var pts plotter.XYs
	for _, a := range as {
		pts = append(pts, plotter.XY{X: paramValue(a, key), Y: a.Median})
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return legendItem{}, "", false
	}
	l.LineStyle.Color, l.LineStyle.Dashes = lineStyle(i)
	s.Color = l.LineStyle.Color
	s.Shape = plotutil.Shape(i)
	p.Add(l, s)
	first, last := as[0], as[len(as)-1]
	reading := fmt.Sprintf("%s %s → %s from %s=%s to %s=%s (%.2f×)", g,
		result.FormatValue(first.Median, unit), result.FormatValue(last.Median, unit),
		key, armParams(first)[key], key, armParams(last)[key], last.Median/first.Median)
	return legendItem{label: g, thumbs: []plot.Thumbnailer{l, s}}, reading, true
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
