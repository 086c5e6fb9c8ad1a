package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/report"
)

func init() { extraCommands = append(extraCommands, newReportCmd) }

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
reference figures (SPEC §8) beside ours where an arm matches one.

RUN is a stored run (id, unique prefix, last, last~N; default last) or a
run JSON file. --chart NAME writes a single chart instead: NAME is an
experiment (its bar chart) or EXPERIMENT:param / EXPERIMENT:cdf.`,
		Example: `  ctxlab report -o report.html
  ctxlab report last~1 -o before.html
  ctxlab report --chart pingpong -o pingpong.svg
  ctxlab report --chart ring:param --format png -o ring.png`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, o, args, stdout)
		},
	}
	f := c.Flags()
	f.StringVar(&o.DB, "db", "", "history database (default $XDG_DATA_HOME/ctxlab/history.db)")
	f.StringVarP(&o.Output, "output", "o", "", "output file (default stdout)")
	f.StringVar(&o.Chart, "chart", "", "write only this chart: EXPERIMENT, EXPERIMENT:param or EXPERIMENT:cdf")
	f.StringVar(&o.Format, "format", "", "html (the report), or svg or png with --chart (default: from -o's extension, else html / svg)")
	return c
}

func runReport(cmd *cobra.Command, o *ReportOptions, args []string, stdout io.Writer) error {
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
	if err := checkOutput("-o", o.Output); err != nil {
		return err
	}
	ref := "last"
	if len(args) == 1 {
		ref = args[0]
	}
	run, err := loadRun(cmd.Context(), o.DB, ref)
	if err != nil {
		return err
	}
	var data []byte
	if o.Chart != "" {
		charts := report.Charts(run)
		var names []string
		for _, c := range charts {
			if c.Name() == o.Chart {
				if data, err = c.Render(format); err != nil {
					return err
				}
				break
			}
			names = append(names, c.Name())
		}
		if data == nil {
			return usagef("--chart %q: run %s has no such chart; it has %s", o.Chart, run.ID, strings.Join(names, ", "))
		}
	}
	err = writeOutput(o.Output, stdout, func(w io.Writer) error {
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
		fmt.Fprintf(cmd.ErrOrStderr(), "ctxlab: wrote %s\n", o.Output)
	}
	return nil
}
