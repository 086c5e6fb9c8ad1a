package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"image/color"
	"io"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

type figure struct {
	exp, kind, reading string
	svg                bool
}

// parseReport walks the HTML and collects each experiment section's
// figures: kind, whether it holds an <svg>, and its reading.
func parseReport(t *testing.T, doc []byte) (exps []string, figs []figure, env bool) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var cur string
	var fig *figure
	inCaption := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report is not well-formed: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range tk.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch tk.Name.Local {
			case "section":
				if attr["id"] == "environment" {
					env = true
				}
				if e := attr["data-experiment"]; e != "" {
					cur = e
					exps = append(exps, e)
				}
			case "figure":
				fig = &figure{exp: cur, kind: attr["data-chart"]}
			case "svg":
				if fig != nil {
					fig.svg = true
				}
			case "figcaption":
				inCaption = fig != nil
			case "script", "link", "img":
				t.Errorf("report must be self-contained: found <%s>", tk.Name.Local)
			}
		case xml.CharData:
			if inCaption {
				fig.reading += string(tk)
			}
		case xml.EndElement:
			switch tk.Name.Local {
			case "figcaption":
				inCaption = false
			case "figure":
				figs = append(figs, *fig)
				fig = nil
			}
		}
	}
	return exps, figs, env
}

func TestHTMLReport(t *testing.T) {
	run := loadRun(t)
	var b bytes.Buffer
	if err := HTML(&b, run); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "http://") && strings.Contains(b.String(), "src=") {
		t.Error("report refers to the network")
	}
	exps, figs, env := parseReport(t, b.Bytes())
	if !env {
		t.Error("no environment section")
	}
	if strings.Join(exps, ",") != "pingpong,ring" {
		t.Fatalf("experiment sections %v, want pingpong,ring", exps)
	}
	has := map[string]figure{}
	for _, f := range figs {
		if !f.svg {
			t.Errorf("%s %s chart has no inline svg", f.exp, f.kind)
		}
		if strings.TrimSpace(f.reading) == "" {
			t.Errorf("%s %s chart has no reading", f.exp, f.kind)
		}
		has[f.exp+":"+f.kind] = f
	}
	for _, want := range []string{"pingpong:bars", "pingpong:cdf", "ring:bars", "ring:param"} {
		if _, ok := has[want]; !ok {
			t.Errorf("missing chart %s; have %v", want, has)
		}
	}
	if _, ok := has["pingpong:param"]; ok {
		t.Error("pingpong has no swept parameter, yet got a param chart")
	}
	if r := has["pingpong:bars"].reading; !strings.Contains(r, "24× longer than") || !strings.Contains(r, "thread/futex") {
		t.Errorf("pingpong reading: %q", r)
	}
	if r := has["ring:param"].reading; !strings.Contains(r, "n=2") || !strings.Contains(r, "n=100") {
		t.Errorf("ring reading: %q", r)
	}
	for _, s := range []string{"thread costs more than goroutine", "a note, with a comma"} {
		if !strings.Contains(b.String(), s) && !strings.Contains(b.String(), strings.ReplaceAll(s, ",", "")) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// Every experiment gets a bars chart even with one arm or odd units, and
// arms without figures draw nothing instead of failing.
func TestChartsEdgeCases(t *testing.T) {
	arms := []result.Arm{
		{Name: "x/one", Experiment: "x", Status: "ok", Median: 5, Min: 4, Max: 6, Unit: "B/op"},
		{Name: "x/none", Experiment: "x", Status: "unsupported"},
	}
	cs := ExperimentCharts("x", arms)
	if len(cs) != 1 || cs[0].Kind != ChartBars || !strings.Contains(cs[0].Reading, "5 B") {
		t.Fatalf("charts: %+v", cs)
	}
	for _, f := range []string{"svg", "png"} {
		b, err := cs[0].Render(f)
		if err != nil || len(b) == 0 {
			t.Fatalf("render %s: %v", f, err)
		}
	}
	if got := ExperimentCharts("y", []result.Arm{{Name: "y/a", Status: "failed"}}); len(got) != 0 {
		t.Fatalf("no figures, yet charts: %+v", got)
	}
}

func TestParseNum(t *testing.T) {
	for in, want := range map[string]float64{"2": 2, "100": 100, "4KiB": 4096, "4MiB": 4 << 20, "10k": 1e4, "64B": 64, "1.5": 1.5} {
		if got, ok := parseNum(in); !ok || got != want {
			t.Errorf("parseNum(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "same", "KiB", "NaN", "x2"} {
		if _, ok := parseNum(in); ok {
			t.Errorf("parseNum(%q) accepted", in)
		}
	}
}

// A cachecost-like sweep over working-set sizes written with suffixes
// gets its curve, one line per group.
func TestParamChartSizes(t *testing.T) {
	var arms []result.Arm
	for _, ws := range []string{"4KiB", "256KiB", "4MiB"} {
		for _, sub := range []string{"thread", "goroutine"} {
			arms = append(arms, result.Arm{Name: "cachecost/" + sub + "/ws=" + ws, Experiment: "cachecost", Substrate: sub,
				Status: "ok", Median: 1000, Min: 900, Max: 1100, Unit: "ns/op", Op: "switch"})
		}
	}
	var param *Chart
	for _, c := range ExperimentCharts("cachecost", arms) {
		if c.Kind == ChartParam {
			param = c
		}
	}
	if param == nil || !strings.Contains(param.Reading, "ws=4KiB") || !strings.Contains(param.Reading, "ws=4MiB") {
		t.Fatalf("no working-set chart: %+v", param)
	}
	if _, err := param.Render("svg"); err != nil {
		t.Fatal(err)
	}
}

// CPython figures stand beside CPython arms of the same kind only.
func TestReferencesMatchLikeWithLike(t *testing.T) {
	ok := func(name, exp, sub, mech string, params map[string]string) result.Arm {
		return result.Arm{Name: name, Experiment: exp, Substrate: sub, Mechanism: mech, Params: params, Status: result.StatusOK, Median: 1000, Min: 1000, Max: 1000}
	}
	goArms := []result.Arm{ok("pingpong/thread/futex/unpinned", "pingpong", "thread", "futex", nil)}
	for _, m := range Matches("pingpong", goArms) {
		if m.Arm != "" {
			t.Errorf("a CPython figure beside a Go arm: %+v", m)
		}
	}
	// A CPython arm in the experiment it measures gets that experiment's
	// CPython figure (exp.Spec.References, by substrate).
	beside := map[string]string{}
	for _, m := range Matches("pingpong", append(goArms, ok("pingpong/pythread/simplequeue/unpinned", "pingpong", "pythread", "simplequeue", nil))) {
		beside[m.Arm] += m.Ref.Text + "|"
	}
	if !strings.Contains(beside["pingpong/pythread/simplequeue/unpinned"], "7.2 µs (7.15–7.63)") || beside["pingpong/thread/futex/unpinned"] != "" {
		t.Errorf("pingpong's CPython figure: %q", beside)
	}
	rg := []result.Arm{ok("ring/pythread/simplequeue/n=2", "ring", "pythread", "simplequeue", map[string]string{"n": "2"}),
		ok("ring/thread/futex/n=2/unpinned", "ring", "thread", "futex", map[string]string{"n": "2"})}
	got := map[string]string{}
	for _, m := range Matches("ring", rg) {
		got[m.Arm] += m.Ref.Text + "|"
	}
	if !strings.Contains(got["ring/pythread/simplequeue/n=2"], "3.98 µs") || strings.Contains(got["ring/pythread/simplequeue/n=2"], "SimpleQueues") {
		t.Errorf("CPython ring arm: %q", got["ring/pythread/simplequeue/n=2"])
	}
	if got["ring/thread/futex/n=2/unpinned"] != "" {
		t.Errorf("a CPython figure beside the Go ring arm: %q", got["ring/thread/futex/n=2/unpinned"])
	}
}

// Legends are drawn below the plot (never on the data), bars have one for
// substrates and placements, every axis names its unit, and a standalone
// SVG carries the font while an inline one leaves it to the page.
func TestChartLegendsUnitsAndFont(t *testing.T) {
	run := browserFixture(t)
	kinds := map[string]bool{}
	for _, c := range Charts(run) {
		kinds[c.Kind] = true
		if c.plot.Legend.Rectangle(draw.Canvas{}).Size().Y != 0 { // no entries
			t.Errorf("%s: a legend inside the plot", c.Name())
		}
		if len(c.legend) == 0 {
			t.Errorf("%s: no legend", c.Name())
		}
		for _, l := range []string{c.plot.X.Label.Text, c.plot.Y.Label.Text} {
			if l != "" && !strings.Contains(l, "(") {
				t.Errorf("%s: axis label %q names no unit", c.Name(), l)
			}
		}
		if c.Kind == ChartBars && c.Experiment == "pingpong" {
			var labels []string
			for _, it := range c.legend {
				labels = append(labels, it.label)
			}
			got := strings.Join(labels, ",")
			for _, w := range []string{"goroutine", "thread", "process", "same-cpu", "cross-cpu"} {
				if !strings.Contains(got, w) {
					t.Errorf("pingpong bars legend %q lacks %s", got, w)
				}
			}
		}
	}
	if !kinds[ChartBars] || !kinds[ChartParam] || !kinds[ChartCDF] {
		t.Errorf("fixture charts cover %v, want bars, param and cdf", kinds)
	}
	c := Charts(run)[0]
	standalone, err := c.Render("svg")
	if err != nil {
		t.Fatal(err)
	}
	inline, err := c.inlineSVG("wide")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(standalone, []byte("@font-face")) || strings.Contains(inline, "@font-face") {
		t.Error("the standalone SVG must embed the font, the inline one must not")
	}
	if !strings.Contains(inline, "sans-serif") {
		t.Error("the chart font stack does not end in a generic family")
	}
}

// sixteenCDFArms are sixteen pingpong-like arms with histograms: six
// goroutine, seven thread and three process arms.
func sixteenCDFArms() []result.Arm {
	var arms []result.Arm
	add := func(sub, mech, pl string) {
		arms = append(arms, result.Arm{Name: "pingpong/" + sub + "/" + mech + "/" + pl, Experiment: "pingpong", Substrate: sub,
			Mechanism: mech, Placement: pl, Status: result.StatusOK, Median: 1000, Min: 900, Max: 1100, Unit: "ns/op", Op: "round trip",
			Histogram:   []result.Bucket{{LowNs: 256, HighNs: 512, Count: 90}, {LowNs: 512, HighNs: 1024, Count: 10}},
			Percentiles: &result.Percentiles{Samples: 100, P50: 400, P99: 900, P999: 1000}})
	}
	for _, m := range []string{"chan", "chan-buffered", "cond"} {
		add("goroutine", m, "gomaxprocs=1")
		add("goroutine", m, "gomaxprocs=all")
	}
	for _, m := range []string{"chan", "futex", "pipe"} {
		add("thread", m, "unpinned")
		add("thread", m, "same-cpu")
	}
	add("thread", "eventfd", "unpinned")
	for _, m := range []string{"pipe", "unixsock", "shmfutex"} {
		add("process", m, "unpinned")
	}
	return arms
}

// A latency distribution of more lines than one chart can tell apart is
// drawn in parts: every arm in exactly one part, at most MaxLines lines in
// each, no two lines of a part alike in colour (nor in dash pattern), and
// each part named and titled as a part.
func TestCDFPartsNeverReuseColours(t *testing.T) {
	arms := sixteenCDFArms()
	var parts []*Chart
	for _, c := range ExperimentCharts("pingpong", arms) {
		if c.Kind == ChartCDF {
			parts = append(parts, c)
		}
	}
	if len(parts) < 2 {
		t.Fatalf("16 lines drawn in %d chart(s)", len(parts))
	}
	seen := map[string]int{}
	for i, c := range parts {
		if want := fmt.Sprintf("pingpong:cdf-%d", i+1); c.Name() != want || c.Part != i+1 || c.Parts != len(parts) {
			t.Errorf("part %d is named %s (%d of %d), want %s", i+1, c.Name(), c.Part, c.Parts, want)
		}
		if !strings.Contains(c.Title, fmt.Sprintf("(%d of %d)", i+1, len(parts))) {
			t.Errorf("%s: title %q does not say which part it is", c.Name(), c.Title)
		}
		if len(c.legend) > MaxLines {
			t.Errorf("%s draws %d lines, more than %d", c.Name(), len(c.legend), MaxLines)
		}
		colours, dashes := map[color.Color]string{}, map[string]string{}
		for _, it := range c.legend {
			seen[it.label]++
			l, ok := it.thumbs[0].(*plotter.Line)
			if !ok {
				t.Fatalf("%s: legend thumbnail %T is not a line", c.Name(), it.thumbs[0])
			}
			if prev, dup := colours[l.LineStyle.Color]; dup {
				t.Errorf("%s: %s and %s share a colour", c.Name(), prev, it.label)
			}
			colours[l.LineStyle.Color] = it.label
			d := fmt.Sprint(l.LineStyle.Dashes)
			if prev, dup := dashes[d]; dup {
				t.Errorf("%s: %s and %s share a dash pattern", c.Name(), prev, it.label)
			}
			dashes[d] = it.label
		}
	}
	for _, a := range arms {
		if n := seen[short("pingpong", a.Name)]; n != 1 {
			t.Errorf("%s is drawn in %d parts", a.Name, n)
		}
	}
}

// splitLines keeps arms that share a leading name together and packs
// small groups into one part.
func TestSplitLines(t *testing.T) {
	names := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s/%d", prefix, i))
		}
		return out
	}
	cases := []struct {
		in   []string
		want string // parts' sizes
	}{
		{names("a", 8), "[8]"},
		{append(names("goroutine", 3), append(names("thread", 6), names("process", 3)...)...), "[3 6 3]"},
		{append(names("a", 2), append(names("b", 2), names("c", 5)...)...), "[4 5]"},
		{append(names("thread/chan", 3), append(names("thread/cond", 3), append(names("thread/futex", 3), names("thread/pipe", 3)...)...)...), "[6 6]"},
		{names("x", 17), "[8 8 1]"},
	}
	for _, c := range cases {
		var sizes []int
		var segs [][]exp.Segment
		for _, n := range c.in {
			segs = append(segs, exp.ShortSegmentsIn("e", "e/"+n))
		}
		for _, p := range splitLines(segs) {
			sizes = append(sizes, len(p))
		}
		if got := fmt.Sprint(sizes); got != c.want {
			t.Errorf("splitLines(%v) sizes %s, want %s", c.in, got, c.want)
		}
	}
}

// The report opens with the verdict ctxlab run prints, HTML-escaped, above
// the environment.
func TestHTMLVerdictFirst(t *testing.T) {
	run := browserFixture(t)
	run.Env.Hostname = `<b>host</b>&"`
	var b bytes.Buffer
	if err := HTML(&b, run); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	v, e := strings.Index(page, `<section id="verdict">`), strings.Index(page, `<section id="environment">`)
	if v < 0 || e < 0 || v > e {
		t.Fatalf("verdict section at %d, environment at %d: the verdict must come first", v, e)
	}
	if strings.Contains(page, "<b>host</b>") {
		t.Error("the host name went into the page unescaped")
	}
	verdict := html.UnescapeString(page[v:e])
	for _, l := range VerdictLines(run, true, htmlVerdictWidth) {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(verdict, l) {
			t.Errorf("the report's verdict lacks %q", l)
		}
	}
}

// At the narrowest width a page may show a chart, its legend still reads
// 11 px and its smallest text MinTextPx.
func TestChartTextSizes(t *testing.T) {
	scale := float64(MinChartWidthPx()) / float64(chartWidth) // CSS px per point
	if px := float64(tickSize) * scale; px < MinTextPx-0.01 {
		t.Errorf("ticks read %.1f px at %d px", px, MinChartWidthPx())
	}
	if px := float64(legendSize) * scale; px < 11 {
		t.Errorf("the legend reads %.1f px at %d px", px, MinChartWidthPx())
	}
}

// html/template escapes markup but passes control characters: the report
// of a run whose text holds escape sequences (an imported file) shows them
// Go-quoted, in the page and in the charts' SVG, and holds no raw ESC,
// BEL, C1 or bidi control.
func TestHTMLAndChartsEscapeControls(t *testing.T) {
	const osc52 = "\x1b]52;c;SGk=\x07"
	run := loadRun(t)
	run.Env.Hostname, run.Env.CPUModel = "host"+osc52, "cpu\u009b2J"
	run.Warnings = append(run.Warnings, "warn\u202egnp")
	run.Arms[0].Name = "pingpong/goroutine/chan" + osc52
	run.Arms[1].Notes = append(run.Arms[1].Notes, "note\x1b[2J")
	run.Experiments[0].Checks[0].Detail = "detail" + osc52
	var b bytes.Buffer
	if err := HTML(&b, run); err != nil {
		t.Fatal(err)
	}
	svg, err := Charts(run)[0].Render("svg")
	if err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"html": b.String(), "svg": string(svg)} {
		for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			if n := strings.Count(out, bad); n > 0 {
				t.Errorf("%s holds %d raw %q", what, n, bad)
			}
		}
	}
	for _, want := range []string{`&#34;host\x1b]52;c;SGk=\a&#34;`, `&#34;cpu\u009b2J&#34;`, `&#34;warn\u202egnp&#34;`, `&#34;note\x1b[2J&#34;`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report does not show %s", want)
		}
	}
	if !strings.Contains(string(svg), `\x1b]52;c;SGk=\a`) {
		t.Error("the chart does not show the arm's name escaped")
	}
}

// The report's environment says the last selfcheck beside the clock's
// cost, or how to make one.
func TestHTMLHarnessLine(t *testing.T) {
	run := &result.Run{Schema: result.SchemaVersion, ID: "20261202T000000-abcdef", ClockCostNs: 20}
	var b strings.Builder
	if err := HTML(&b, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "harness: not checked on this host: ctxlab selfcheck") {
		t.Errorf("no harness line for a run without a check")
	}
	run.Env.Harness = &result.HarnessCheck{RunID: "20261201T000000-aaaaaa", Verdict: "ctxlab adds ≤ 3% (0.99–1.03× the references) here"}
	b.Reset()
	if err := HTML(&b, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(run 20261201T000000-aaaaaa): ctxlab adds ≤ 3%") {
		t.Errorf("the check's verdict is not in the report")
	}
}
