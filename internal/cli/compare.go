package cli

import (
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
		Short: "compare two runs arm by arm: ratio, confidence interval, significance",
		Long: `Set run B against run A, arm by arm, with benchstat's statistics over the
per-repetition figures: each median with its 95% confidence interval, the
ratio B/A with an interval, and a Mann-Whitney U test; the delta is "~" when
the difference is not significant (p ≥ 0.05). A geomean row summarises the
common arms; arms measured on one side only are listed.

A and B are stored runs (id, unique prefix, last, last~N) or run JSON files,
from any host. Without arguments: the two latest stored runs (last~1, last).
With one: that run against the latest. With 3 repetitions (--quick) no
difference can be significant; use --reps 6 or more to detect one.`,
		Example: `  ctxlab run --quick && ctxlab run --quick && ctxlab compare
  ctxlab compare 20261130T1204 last --format markdown
  ctxlab compare laptop.json server.json`,
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
			a, err := loadRun(cmd.Context(), o.DB, refs[0])
			if err != nil {
				return err
			}
			b, err := loadRun(cmd.Context(), o.DB, refs[1])
			if err != nil {
				return err
			}
			c, err := compare.Compare(a, b)
			if err != nil {
				return err
			}
			return out.write(func(w io.Writer) error { return compare.Write(w, c, o.Format) })
		},
	}
	addDBFlag(c.Flags(), &o.DB)
	c.Flags().StringVar(&o.Format, "format", "table", "output format: "+strings.Join(compare.Formats, ", "))
	c.Flags().StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	return c
}
