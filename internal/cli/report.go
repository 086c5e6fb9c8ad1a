package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// ReportOptions are the flags of `ctxlab report`.
type ReportOptions struct {
	DB     string
	Output string
	Chart  string
	Format string
}

func newReportCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &ReportOptions{}
	c := &cobra.Command{
		Use:   "report [RUN]",
		Short: "write a self-contained HTML report with charts (or one chart as SVG/PNG)",
		Long: `Write one HTML file that opens in any browser without a network: the
environment, then per experiment a bar chart of each arm's cost with its
spread, a chart against the swept parameter (workers, tasks, sizes) where
the arms have one, a latency distribution where arms carry a histogram,
each with a one-line reading, the checks and findings, and the published
reference figures (README: Published figures) beside ours where an arm matches one.

RUN is a stored run (id, unique prefix, last, last~N: last counts the runs
of the experiments, not diagnose's or selfcheck's; default last) or a
run JSON file. --chart NAME writes a single chart instead: NAME is an
experiment (its bar chart) or EXPERIMENT:param / EXPERIMENT:cdf, or an arm
pattern (as in ctxlab run) with an optional :param or :cdf, which charts
only the arms it selects, e.g. 'pingpong/thread/*' or 'ring/*/futex/*:param'.
A line chart draws at most 8 lines, each in its own colour; one with more
is drawn in parts, EXPERIMENT:cdf-1, EXPERIMENT:cdf-2 … (the shell
completes the names a run has).`,
		Example: `  ctxlab report -o report.html
  ctxlab report last~1 -o before.html
  ctxlab report --chart pingpong -o pingpong.svg
  ctxlab report --chart ring:param --format png -o ring.png
  ctxlab report --chart 'pingpong/thread/*' -o threads.svg`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, o, args, stdout, stderr)
		},
	}
	f := c.Flags()
	addDBFlag(f, &o.DB)
	f.StringVarP(&o.Output, "output", "o", "", "output file (default stdout)")
	f.StringVar(&o.Chart, "chart", "", "write only this chart: EXPERIMENT or an arm pattern, optionally with :param or :cdf")
	f.StringVar(&o.Format, "format", "", "html (the report), or svg or png with --chart (default: from -o's extension, else html / svg)")
	return c
}

func runReport(cmd *cobra.Command, o *ReportOptions, args []string, stdout, stderr io.Writer) error {
	format := o.Format
	if format == "" {
		switch ext := strings.ToLower(filepath.Ext(o.Output)); {
		case o.Chart != "" && (ext == ".png" || ext == ".svg"):
			format = ext[1:]
		case o.Chart != "":
			format = "svg"
		default:
			format = "html"
		}
	}
	if o.Chart == "" {
		if format != "html" {
			return usagef("--format %q: the report is html; svg and png are for a single --chart", format)
		}
	} else if format != "svg" && format != "png" {
		return usagef("--format %q with --chart: must be svg or png", format)
	}
	if want, ok := extFormats[strings.ToLower(filepath.Ext(o.Output))]; ok && want != format {
		return usagef("--format %s and -o %s disagree: a %s file holds %s; make them agree", format, o.Output, filepath.Ext(o.Output), want)
	}
	out, err := openOutput("-o", o.Output, o.DB, stdout)
	if err != nil {
		return err
	}
	defer out.close()
	ref := "last"
	if len(args) == 1 {
		ref = args[0]
	}
	run, err := loadRunKind(cmd.Context(), o.DB, ref, result.ExperimentRun, stderr)
	if err != nil {
		return err
	}
	var data []byte
	if o.Chart != "" {
		c, err := pickChart(run, o.Chart)
		if err != nil {
			return err
		}
		if data, err = c.Render(format); err != nil {
			return err
		}
	}
	err = out.write(func(w io.Writer) error {
		if data != nil {
			_, err := w.Write(data)
			return err
		}
		return report.HTML(w, run)
	})
	if err != nil {
		return err
	}
	if o.Output != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "ctxlab: wrote %s\n", termsafe.String(o.Output))
	}
	return nil
}

// extFormats are the file extensions that name a report format: -o with
// one of them must hold that format (SVG in a .png opens as a broken image).
var extFormats = map[string]string{".html": "html", ".htm": "html", ".svg": "svg", ".png": "png"}

// pickChart finds the chart --chart names: a chart of the run by name
// (pingpong, ring:param), else the chart of the arms an arm pattern selects
// (pingpong/thread/*, with :param or :cdf for those kinds).
func pickChart(run *result.Run, name string) (*report.Chart, error) {
	charts := report.Charts(run)
	var names []string
	for _, c := range charts {
		if c.Name() == name {
			return c, nil
		}
		names = append(names, c.Name())
	}
	text, kind := name, report.ChartBars
	if i := strings.LastIndex(name, ":"); i >= 0 {
		text, kind = name[:i], name[i+1:]
		if kind != report.ChartParam && kind != report.ChartCDF {
			return nil, usagef("--chart %q: %q is not a chart kind; want :%s or :%s", name, kind, report.ChartParam, report.ChartCDF)
		}
	}
	pat, err := exp.ParsePattern(text)
	if err != nil {
		return nil, usagef("--chart: %v", err)
	}
	var arms []result.Arm
	var exps []string
	for _, a := range run.Arms {
		if pat.Match(a.Name) {
			if !slices.Contains(exps, a.Experiment) {
				exps = append(exps, a.Experiment)
			}
			arms = append(arms, a)
		}
	}
	switch {
	case len(arms) == 0:
		return nil, usagef("--chart %q: run %s has no such chart and no arm matches; it has charts %s", name, run.ID, strings.Join(names, ", "))
	case len(exps) > 1:
		return nil, usagef("--chart %q: selects arms of %s; a chart shows one experiment's arms", name, strings.Join(termsafe.Strings(exps), ", "))
	}
	var found []*report.Chart
	for _, c := range report.ExperimentCharts(exps[0], arms) {
		if c.Kind == kind {
			found = append(found, c)
		}
	}
	switch {
	case len(found) == 0:
		return nil, usagef("--chart %q: the %d arms it selects have no %s chart", name, len(arms), kind)
	case len(found) > 1:
		var parts []string
		for _, c := range charts {
			if c.Experiment == exps[0] && c.Kind == kind && c.Parts > 1 {
				parts = append(parts, c.Name())
			}
		}
		return nil, usagef("--chart %q: its lines are too many for one chart, which draws at most %d; name one part of the run's (%s) or select fewer arms",
			name, report.MaxLines, strings.Join(parts, ", "))
	}
	return found[0], nil
}
