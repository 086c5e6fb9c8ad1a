package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
)

// ShowOptions are the flags of `ctxlab show` and `ctxlab export`.
type ShowOptions struct {
	DB     string
	Format string
	Output string
	// kind is what "last" counts: any run for show; the experiments'
	// runs for export, which then names the run it took on stderr.
	kind   result.Kind
	stderr io.Writer
}

func newShowCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &ShowOptions{}
	c := &cobra.Command{
		Use:   "show [RUN]",
		Short: "print a stored run (or a run file) in any output format",
		Long: `Print a stored run as ctxlab run would have: RUN is an id, a unique prefix,
last (the default) or last~N, or a run JSON file.`,
		Example: `  ctxlab show
  ctxlab show 20261130T1204 --format markdown
  ctxlab show last~1 --format bench > old.txt`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShow(cmd, o, args, stdout)
		},
	}
	addDBFlag(c.Flags(), &o.DB)
	c.Flags().StringVar(&o.Format, "format", "table", "output format: "+strings.Join(report.Formats, ", "))
	c.Flags().StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	return c
}

func runShow(cmd *cobra.Command, o *ShowOptions, args []string, stdout io.Writer) error {
	if err := oneOf("--format", o.Format, report.Formats); err != nil {
		return err
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
	run, err := loadRunKind(cmd.Context(), o.DB, ref, o.kind, o.stderr)
	if err != nil {
		return err
	}
	return out.write(func(w io.Writer) error { return writeReport(w, run, o.Format) })
}

func newExportCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &ShowOptions{Format: "json", kind: result.ExperimentRun, stderr: stderr}
	c := &cobra.Command{
		Use:   "export [RUN]",
		Short: "write a stored run as JSON, to move it to another machine",
		Long: `Write a stored run as the versioned result JSON (docs/result-schema.md).
ctxlab import reads it back on another machine, and ctxlab compare and
ctxlab report accept the file directly. RUN is an id, a unique prefix, or
last (the default) or last~N, which count the experiments' runs, as
compare and report do: a newer diagnose or selfcheck is passed over, and
stderr names the run taken.`,
		Example: `  ctxlab export -o laptop.json
  ctxlab export 20261130T1204 > run.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShow(cmd, o, args, stdout)
		},
	}
	addDBFlag(c.Flags(), &o.DB)
	c.Flags().StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	return c
}
