package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// HistoryOptions are the flags of `ctxlab history`.
type HistoryOptions struct {
	DB     string
	Limit  int
	Format string
}

func newHistoryCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &HistoryOptions{}
	c := &cobra.Command{
		Use:   "history",
		Short: "list the runs in the history database",
		Long: `List stored runs, newest first: id, time, host, suite, arms, noisy arms and
where the run came from (measured here, or imported). Every ctxlab run is
stored unless --no-store; refer to a run by its id, a unique prefix of it,
last, or last~N (N runs before the latest).`,
		Example: `  ctxlab history
  ctxlab history --limit 5 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHistory(cmd, o, stdout)
		},
	}
	addDBFlag(c.Flags(), &o.DB)
	c.Flags().IntVar(&o.Limit, "limit", 20, "show at most this many runs, "+intRange(0, maxLimit)+" (0: all)")
	c.Flags().StringVar(&o.Format, "format", "table", "output format: table, json, csv")
	return c
}

// maxLimit bounds --limit.
const maxLimit = 1 << 30

func runHistory(cmd *cobra.Command, o *HistoryOptions, stdout io.Writer) error {
	if o.Limit < 0 || o.Limit > maxLimit {
		return outOfRange("--limit", o.Limit, intRange(0, maxLimit)+" (0: all)")
	}
	if err := oneOf("--format", o.Format, []string{"table", "json", "csv"}); err != nil {
		return err
	}
	s, err := openStore(cmd.Context(), o.DB, false)
	if err != nil {
		return err
	}
	defer s.Close()
	es, err := s.List(cmd.Context(), o.Limit)
	if err != nil {
		return err
	}
	switch o.Format {
	case "json":
		type row struct {
			ID     string `json:"id"`
			Time   string `json:"time"`
			Host   string `json:"host"`
			Suite  string `json:"suite"`
			Arms   int    `json:"arms"`
			Noisy  int    `json:"noisy"`
			Source string `json:"source"`
		}
		rows := []row{}
		for _, e := range es {
			rows = append(rows, row{e.ID, e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Host, e.Suite, e.Arms, e.Noisy, e.Source})
		}
		enc := json.NewEncoder(termsafe.JSON(stdout))
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "csv":
		cw := csv.NewWriter(stdout)
		cw.Write([]string{"id", "time", "host", "suite", "arms", "noisy", "source"})
		for _, e := range es {
			cw.Write(termsafe.Strings([]string{e.ID, e.Time.UTC().Format("2006-01-02T15:04:05Z"), e.Host, e.Suite, strconv.Itoa(e.Arms), strconv.Itoa(e.Noisy), e.Source}))
		}
		cw.Flush()
		return cw.Error()
	}
	if len(es) == 0 {
		fmt.Fprintf(stdout, "no runs in %s\n", s.Path())
		return nil
	}
	rows := [][]string{{"id", "time (UTC)", "host", "suite", "arms", "noisy", "source"}}
	for _, e := range es {
		rows = append(rows, termsafe.Strings([]string{e.ID, e.Time.UTC().Format("2006-01-02 15:04:05"), e.Host, e.Suite,
			strconv.Itoa(e.Arms), strconv.Itoa(e.Noisy), e.Source})) // imported runs name their own host and id
	}
	textcol.Write(stdout, rows, "", nil)
	return nil
}
