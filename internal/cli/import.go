package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// ImportOptions are the flags of `ctxlab import`.
type ImportOptions struct {
	DB string
}

func newImportCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &ImportOptions{}
	c := &cobra.Command{
		Use:   "import FILE.json …",
		Short: "add runs exported elsewhere (ctxlab export, --format json) to the history",
		Long: `Read run JSON files and store them, marked as imported. Every file is
checked (a regular file, one run, its values within the ranges of
docs/result-schema.md, arm names unique) before any is stored, and one bad
file stores none; a run already in the store is reported and skipped.`,
		Example: `  ctxlab import laptop.json
  ctxlab compare last laptop.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var runs []*result.Run
			for _, a := range args {
				r, err := readRunFile(cmd.Context(), a) // read and validated: nothing is stored unless every file is good
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			s, err := openStore(cmd.Context(), o.DB, true)
			if err != nil {
				return err
			}
			defer s.Close()
			for i, r := range runs {
				err := s.Save(cmd.Context(), r, store.SourceImport)
				file := termsafe.String(args[i]) // the id is validated; the file's name and the host are not ctxlab's
				switch {
				case errors.Is(err, store.ErrExists):
					fmt.Fprintf(stdout, "%s: run %s is already stored; skipped\n", file, r.ID)
				case err != nil:
					return err
				default:
					fmt.Fprintf(stdout, "%s: imported run %s (%s, %d arms)\n", file, r.ID, termsafe.String(r.Env.Hostname), len(r.Arms))
				}
			}
			return nil
		},
	}
	addDBFlag(c.Flags(), &o.DB)
	return c
}
