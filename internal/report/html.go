package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// htmlVerdictWidth is the verdict's width in the report: wider than a
// terminal's 80, so arm names keep their middles. On a phone the page
// shows it laid out for narrowVerdictWidth columns instead, as it shows
// each chart drawn for NarrowChartPx: neither scrolls sideways.
const (
	htmlVerdictWidth   = 110
	narrowVerdictWidth = 50
)

// phoneCSS is the widest window the page lays out for a phone: below it
// the narrow verdict and charts are shown (a wide chart would be shrunk
// below MinChartWidthPx in the page's column).
const phoneCSS = "600px"

// HTML writes a self-contained report: the verdict (as ctxlab run prints
// it), the environment, then per experiment its charts (inline SVG, their
// font embedded once, no scripts, no network), each with a one-line
// reading, the checks, the findings, the published reference figures
// beside ours, and the table of arms. The page uses a wide window's width;
// on a phone it shows the verdict and the charts laid out for its width
// (neither scrolls sideways) and scrolls only wide tables, never
// shrinking text below MinTextPx. html/template escapes
// markup but passes control characters, so every string goes through
// termsafe first, as in every other format.
func HTML(w io.Writer, run *result.Run) error {
	run = termsafe.Strings(run)
	data := htmlRun{Run: run, Verdict: strings.Join(VerdictLines(run, true, htmlVerdictWidth), "\n"),
		NarrowVerdict: strings.Join(VerdictLines(run, true, narrowVerdictWidth), "\n")}
	exps := experimentIndex(run)
	for _, name := range experimentOrder(run) {
		arms := armsOf(run, name)
		e := exps[name]
		he := htmlExp{Name: name, Summary: e.Summary, Op: e.Op, Checks: e.Checks, Findings: e.Findings,
			Pairs: comparisonLines(e, ""), Refs: Matches(name, arms)}
		if he.Op == "" && len(arms) > 0 {
			he.Op = arms[0].Op
		}
		for _, c := range ExperimentCharts(name, arms) {
			svg, err := c.inlineSVG("wide")
			if err != nil {
				return fmt.Errorf("chart %s: %w", c.Name(), err)
			}
			narrow, err := c.narrow().inlineSVG("narrow")
			if err != nil {
				return fmt.Errorf("chart %s: %w", c.Name(), err)
			}
			he.Charts = append(he.Charts, htmlChart{Kind: c.Kind, Name: c.Name(), Reading: c.Reading, SVG: template.HTML(svg + narrow)})
		}
		for _, a := range arms {
			he.Arms = append(he.Arms, htmlArmRow(name, a))
			for _, n := range a.Notes {
				he.Notes = append(he.Notes, short(name, a.Name)+": "+n)
			}
		}
		data.Exps = append(data.Exps, he)
	}
	return htmlTmpl.Execute(w, data)
}

type htmlRun struct {
	Run                    *result.Run
	Verdict, NarrowVerdict string
	Exps                   []htmlExp
}

type htmlExp struct {
	Name, Summary, Op string
	Charts            []htmlChart
	Checks            []result.Check
	Findings          []string
	Pairs             []string // the comparisons measured side by side
	Refs              []RefMatch
	Arms              [][]string
	Notes             []string
}

type htmlChart struct {
	Kind, Name, Reading string
	SVG                 template.HTML
}

// htmlArmRow is an arm's row of the report's table; an arm whose
// repetitions held too few ops shows its status and reason, no figure.
func htmlArmRow(experiment string, a result.Arm) []string {
	row := []string{short(experiment, a.Name), "", "", "", "", "", a.Status}
	if a.Status == result.StatusTooFewOps {
		row[6] += " · " + a.Reason
		return row
	}
	if measured(a) {
		row[1] = result.FormatValue(a.Median, a.Unit)
		row[2] = result.FormatValue(a.Min, a.Unit) + "–" + result.FormatValue(a.Max, a.Unit)
	}
	if p := a.Percentiles; p != nil {
		row[3] = result.FormatNs(p.P99)
	}
	if s := a.Switches; s != nil {
		row[4] = fmt.Sprintf("%.2f", s.Total())
	}
	if a.Migrations != nil {
		row[5] = fmt.Sprintf("%.3f", *a.Migrations)
	}
	if a.Noise.Noisy {
		row[6] += " · noisy: " + strings.Join(a.Noise.Reasons, "; ")
	}
	if a.Reason != "" {
		row[6] += " · " + a.Reason
	}
	return row
}

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ns":        result.FormatNs,
	"fontface":  func() template.CSS { return template.CSS(ChartFontFace()) },
	"chartmin":  func() template.CSS { return template.CSS(fmt.Sprintf("%dpx", MinChartWidthPx())) },
	"narrowmin": func() template.CSS { return template.CSS(fmt.Sprintf("%dpx", MinNarrowChartPx())) },
	"phone":     func() template.CSS { return template.CSS(phoneCSS) },
	"mark":      checkMark,
	"cpus":      func(cs []int) string { return fmt.Sprint(cs) },
	"bytes":     func(b int64) string { return result.FormatValue(float64(b), "B/op") },
	"date":      func(r *result.Run) string { return r.Time.UTC().Format("2006-01-02 15:04 UTC") },
	"supported": func(cs []result.CounterInfo) string {
		var ok, no []string
		for _, c := range cs {
			if c.Supported {
				ok = append(ok, c.Name)
			} else {
				no = append(no, c.Name)
			}
		}
		s := "available: " + strings.Join(ok, ", ")
		if len(ok) == 0 {
			s = "none available"
		}
		if len(no) > 0 {
			s += "; unavailable: " + strings.Join(no, ", ")
		}
		return s
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ctxlab report {{.Run.ID}}</title>
<style>
{{fontface}}
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em auto; max-width: 1320px; padding: 0 16px; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
td, th { padding: 0.15em 0.6em; border-bottom: 1px solid #eee; text-align: left; vertical-align: top; }
th, td.n, td.arm { white-space: nowrap; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.wide { min-width: 16em; } table.env td { overflow-wrap: anywhere; }
pre.verdict { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; margin: 0.5em 0; padding: 0.6em 0.8em; background: #f6f8fa; border: 1px solid #ddd; white-space: pre-wrap; }
@media (max-width: 900px) { pre.verdict { white-space: pre; width: max-content; } }
pre.verdict.narrow, figure.chart svg.narrow { display: none; }
@media (max-width: {{phone}}) {
  pre.verdict.wide, figure.chart svg.wide { display: none; }
  pre.verdict.narrow { display: block; font-size: 11px; width: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
  figure.chart svg.narrow { display: block; min-width: {{narrowmin}}; }
}
figure.chart { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 0.4em 1.5em; margin: 1.2em 0; }
figure.chart .plot { flex: 0 1 672px; min-width: 0; }
figure.chart svg { display: block; width: 100%; min-width: {{chartmin}}; height: auto; }
figure.chart figcaption { flex: 1 1 18em; max-width: 40em; }
figcaption.reading { font-weight: 600; margin-top: 0.2em; }
.holds { color: #1a7f37; } .fails { color: #cf222e; } .skipped { color: #888; }
.warn { color: #9a6700; } .muted { color: #666; font-size: 0.9em; }
</style>
</head>
<body>
<h1>ctxlab report</h1>
<p class="muted">run {{.Run.ID}} · {{date .Run}} · suite {{.Run.Suite}} · ctxlab {{.Run.Version}} · {{.Run.GoVersion}}</p>
<section id="verdict">
<h2>Verdict</h2>
<div class="scroll"><pre class="verdict wide">{{.Verdict}}</pre><pre class="verdict narrow">{{.NarrowVerdict}}</pre></div>
</section>
<section id="environment">
<h2>Environment</h2>
{{with .Run.Env}}<div class="scroll"><table class="env">
<tr><th>host</th><td>{{.Hostname}}</td></tr>
<tr><th>CPU</th><td>{{.CPUModel}}: {{.LogicalCPUs}} logical CPUs, {{.Cores}} cores, {{.ThreadsPerCore}} threads per core, online {{cpus .OnlineCPUs}}{{if .Hypervisor}} · virtual machine{{end}}</td></tr>
<tr><th>caches</th><td>{{range .Caches}}L{{.Level}} {{.Type}} {{bytes .SizeB}} · {{else}}not reported by this kernel (no /sys/devices/system/cpu/cpu0/cache){{end}}</td></tr>
<tr><th>kernel</th><td>{{.Kernel}}{{if .Scheduler}} · scheduler {{.Scheduler}}{{end}}{{if .Governor}} · governor {{.Governor}}{{end}} · cgroup CPU quota {{.CPUQuota}}</td></tr>
<tr><th>Go</th><td>{{.GoVersion}} · GOMAXPROCS {{.GOMAXPROCS}}{{if eq .CgoEnabled "1"}} · cgo build{{else if eq .CgoEnabled "0"}} · CGO_ENABLED=0 build{{end}}</td></tr>
<tr><th>load</th><td>load1 {{printf "%.2f" .Load1}} · steal since boot {{printf "%.2f" .StealPct}}%</td></tr>
<tr><th>perf counters</th><td>{{supported .Counters}} (paranoid {{.PerfParanoid}})</td></tr>
</table></div>{{end}}
<p class="muted">one timestamp read costs {{printf "%.0f" .Run.ClockCostNs}} ns{{if gt .Run.SyscallNs 0.0}} · one system call {{ns .Run.SyscallNs}}; Go's runtime-aware path adds {{ns .Run.SyscallPathNs}} to each call made through it (README: How honest is the harness?){{end}}{{if .Run.Interrupted}} · <span class="warn">the run was interrupted: the report holds the arms that finished</span>{{end}}</p>
<p class="muted">harness: {{.Run.Env.Harness.Text}}</p>
{{range .Run.Warnings}}<p class="warn">⚠ {{.}}</p>
{{end}}</section>
{{range .Exps}}<section class="experiment" id="exp-{{.Name}}" data-experiment="{{.Name}}">
<h2>{{.Name}}</h2>
<p>{{if .Summary}}{{.Summary}} · {{end}}op: {{.Op}}</p>
{{range .Charts}}<figure class="chart" data-chart="{{.Kind}}" data-name="{{.Name}}">
<div class="plot scroll">{{.SVG}}</div>
<figcaption class="reading">{{.Reading}}</figcaption>
</figure>
{{end}}{{if .Checks}}<h3>Checks</h3>
<ul class="checks">{{range .Checks}}<li class="{{if .Skipped}}skipped{{else if .Holds}}holds{{else}}fails{{end}}">{{mark .}} — <b>{{.Name}}</b>: {{.Detail}}</li>
{{end}}</ul>
{{end}}{{if .Findings}}<h3>Findings</h3>
<ul class="findings">{{range .Findings}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{if .Pairs}}<h3>Side by side</h3>
<p class="muted">The two arms taking turns, in random order, so a slow phase of the machine falls on both; ratio of the first over the second.</p>
<ul class="findings">{{range .Pairs}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{if .Refs}}<h3>Published reference figures (README: Published figures)</h3>
<div class="scroll"><table class="refs"><tr><th>our arm</th><th>ours</th><th>published</th></tr>
{{range .Refs}}<tr><td class="arm">{{if .Arm}}{{.Arm}}{{else}}(the experiment){{end}}</td><td class="n">{{.Ours}}</td><td class="wide">{{.Ref.Text}}</td></tr>
{{end}}</table></div>
<p class="muted">Published figures come from other machines and runtimes (mostly CPython); they set the scale, they are not targets.</p>
{{end}}<h3>Arms</h3>
<div class="scroll"><table class="arms"><tr><th>arm</th><th>median</th><th>min–max</th><th>p99</th><th>switches/op</th><th>migr/op</th><th>status</th></tr>
{{range .Arms}}<tr>{{range $i, $c := .}}{{if eq $i 0}}<td class="arm">{{$c}}</td>{{else if lt $i 6}}<td class="n">{{$c}}</td>{{else}}<td class="wide">{{$c}}</td>{{end}}{{end}}</tr>
{{end}}</table></div>
{{range .Notes}}<p class="muted">· {{.}}</p>
{{end}}</section>
{{end}}<p class="muted">made by ctxlab · charts drawn with gonum/plot · no scripts, no network</p>
</body>
</html>
`))
