package cli

import (
	"errors"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/compare"
)

// CompareOptions are the flags of `ctxlab compare`.
type CompareOptions struct {
	DB     string
	Format string
	Output string
}

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &CompareOptions{}
	c := &cobra.Command{
		Use:   "compare [A [B]]",
		Short: "compare two runs arm by arm: ratio, interval, whether they differ",
		Long: `Set run B against run A, arm by arm, over the per-repetition figures: each
median and its range (min–max), the ratio B/A with an interval, and a
delta that is "~" where no difference is shown. Arms with 6 or more
repetitions on both sides are decided by benchstat's statistics: the
medians' 95% confidence intervals and a Mann-Whitney U test (p < 0.05).
With fewer — the quick suite runs 3 — no confidence interval exists and
the U test cannot reach p < 0.05, so those arms are decided by their
ranges: a difference only where A's and B's ranges do not overlap, which
at 3 vs 3 happens by chance 1 time in 10 when nothing changed. The output
says so once, above the table, and names the side that was noisy on each
row. A geomean row summarises the common arms; arms measured on one side
only are listed. Two runs with no arm in common are refused (exit 2).

A and B are stored runs (id, unique prefix, last, last~N) or run JSON files,
from any host. RUN:NAME=V is one value of a diagnose --vary run, so
compare last:T=2 last:T=32 sets two values of one run side by side. Without arguments: the two latest stored runs (last~1, last).
With one: that run against the latest. On a terminal the table fits its
width: narrower terminals leave out the ranges and the test columns (the
markdown format has them all).`,
		Example: `  ctxlab run --quick && ctxlab run --quick && ctxlab compare
  ctxlab compare 20261130T1204 last --format markdown
  ctxlab compare laptop.json server.json
  ctxlab compare last:T=2 last:T=32`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := oneOf("--format", o.Format, compare.Formats); err != nil {
				return err
			}
			out, err := openOutput("-o", o.Output, o.DB, stdout)
			if err != nil {
				return err
			}
			defer out.close()
			refs := []string{"last~1", "last"}
			switch len(args) {
			case 1:
				refs = []string{args[0], "last"}
			case 2:
				refs = args
			}
			a, err := loadRunValue(cmd.Context(), o.DB, refs[0], stderr)
			if err != nil {
				return err
			}
			b, err := loadRunValue(cmd.Context(), o.DB, refs[1], stderr)
			if err != nil {
				return err
			}
			c, err := compare.Compare(a, b)
			if errors.Is(err, compare.ErrNothingInCommon) {
				return &UsageError{err}
			}
			if err != nil {
				return err
			}
			return out.write(func(w io.Writer) error { return compare.Write(w, c, o.Format, termWidth(w)) })
		},
	}
	addDBFlag(c.Flags(), &o.DB)
	c.Flags().StringVar(&o.Format, "format", "table", "output format: "+strings.Join(compare.Formats, ", "))
	c.Flags().StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	return c
}
