package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

func init() { extraCommands = append(extraCommands, newBudgetCmd) }

// BudgetOptions are the flags of `ctxlab budget`.
type BudgetOptions struct {
	DB   string
	Rate string
	Arm  string
	Run  string
}

// maxRate bounds --rate: a billion ops per second is beyond any handoff.
const maxRate = 1e9

func newBudgetCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &BudgetOptions{}
	c := &cobra.Command{
		Use:   "budget --rate N/s",
		Short: "what N handoffs per second cost in CPU, from measured figures",
		Long: `Turn measured figures into a CPU budget: at --rate ops per second, each arm
spends median ns/op × rate of a core's time on the op itself. The figures come
from the latest stored run (or --run, a stored run or a run JSON file), and
the summary gives, per experiment and substrate, the cheapest arm's share.

The share counts the op's wall time as measured (median per op): it is the
share of one worker's time the handoffs take, and an estimate of the CPU
they cost. A blocking handoff spends part of it waiting for a wake-up (less
CPU); a spinning one may burn CPU on both sides (more).`,
		Example: `  ctxlab budget --rate 10000/s
  ctxlab budget --rate 50k/s --arm 'pingpong/thread/*'
  ctxlab budget --rate 1000/s --run last~1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rate, err := parseRate(o.Rate)
			if err != nil {
				return err
			}
			if o.Arm != "" {
				if _, err := exp.ParsePattern(o.Arm); err != nil {
					return usagef("--arm: %v", err)
				}
			}
			ref := o.Run
			if ref == "" {
				ref = "last"
			}
			run, err := loadRun(cmd.Context(), o.DB, ref)
			if err != nil {
				return err
			}
			return writeBudget(stdout, run, rate, o.Arm)
		},
	}
	f := c.Flags()
	f.StringVar(&o.DB, "db", "", "history database (default $XDG_DATA_HOME/ctxlab/history.db)")
	f.StringVar(&o.Rate, "rate", "", "ops per second, e.g. 10000/s or 10k/s (required; > 0, ≤ 1e9/s)")
	f.StringVar(&o.Arm, "arm", "", "only arms matching this glob (pingpong/thread/*) or experiment name")
	f.StringVar(&o.Run, "run", "", "stored run or run JSON file (default: the latest stored run)")
	return c
}

// parseRate reads "10000/s", "10k/s", "2.5M/s".
func parseRate(s string) (float64, error) {
	if s == "" {
		return 0, usagef("--rate is required, e.g. --rate 10000/s")
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "/s")
	if !ok {
		return 0, usagef("--rate %q: want ops per second ending in /s, e.g. 10000/s or 10k/s", s)
	}
	mult := 1.0
	switch {
	case strings.HasSuffix(num, "k"):
		mult, num = 1e3, strings.TrimSuffix(num, "k")
	case strings.HasSuffix(num, "M"):
		mult, num = 1e6, strings.TrimSuffix(num, "M")
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(num, "_", ""), 64)
	if err != nil {
		return 0, usagef("--rate %q: %q is not a number; want e.g. 10000/s", s, num)
	}
	v *= mult
	if !(v > 0) || v > maxRate {
		return 0, usagef("--rate %q: must be more than 0/s and at most %.0f/s", s, maxRate)
	}
	return v, nil
}

// armMatches: --arm has the meaning of every arm pattern (exp.Pattern).
func armMatches(glob string, a result.Arm) bool {
	return glob == "" || exp.Match(glob, a.Name)
}

func pct(f float64) string {
	switch {
	case f >= 0.1:
		return fmt.Sprintf("%.0f%%", 100*f)
	case f >= 0.01:
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	return fmt.Sprintf("%.2g%%", 100*f)
}

func fmtRate(r float64) string {
	s := strconv.FormatFloat(r, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 && len(s) > 4 {
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(c)
		}
		s = b.String()
	}
	return s
}

func writeBudget(w io.Writer, run *result.Run, rate float64, glob string) error {
	type cheapest struct {
		arm  string
		frac float64
	}
	best := map[string]map[string]cheapest{} // experiment → substrate
	var exps []string
	ops := map[string]string{}
	rows := [][]string{{"arm", "median", "share of one core"}}
	n := 0
	for _, a := range run.Arms {
		if !armMatches(glob, a) || a.Status != result.StatusOK || a.Median <= 0 || (a.Unit != "" && a.Unit != "ns/op") {
			continue
		}
		n++
		frac := a.Median * rate / 1e9
		note := ""
		if frac > 1 {
			note = " (more than a core: this rate cannot be sustained by one worker)"
		}
		rows = append(rows, []string{a.Name, result.FormatNs(a.Median), pct(frac) + note})
		if best[a.Experiment] == nil {
			best[a.Experiment] = map[string]cheapest{}
			exps = append(exps, a.Experiment)
			ops[a.Experiment] = a.Op
		}
		sub := a.Substrate
		if sub == "" {
			sub = "?"
		}
		if c, ok := best[a.Experiment][sub]; !ok || frac < c.frac {
			best[a.Experiment][sub] = cheapest{a.Name, frac}
		}
	}
	if n == 0 {
		var names []string
		seen := map[string]bool{}
		for _, a := range run.Arms {
			if !seen[a.Experiment] {
				seen[a.Experiment] = true
				names = append(names, a.Experiment)
			}
		}
		return usagef("--arm %q: no measured ns/op arm in run %s matches; its experiments are %s", glob, run.ID, strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "at %s ops/s, from run %s (%s, %s):\n", fmtRate(rate), run.ID, run.Env.Hostname, run.Time.UTC().Format("2006-01-02 15:04"))
	textcol.Write(w, rows, "", nil)
	fmt.Fprintln(w)
	for _, e := range exps {
		var subs []string
		for s := range best[e] {
			subs = append(subs, s)
		}
		sort.Slice(subs, func(i, j int) bool { return best[e][subs[i]].frac < best[e][subs[j]].frac })
		var parts []string
		for _, s := range subs {
			parts = append(parts, fmt.Sprintf("%s %s", s, pct(best[e][s].frac)))
		}
		op := ops[e]
		if op == "" {
			op = "op"
		}
		fmt.Fprintf(w, "%s, %s %ss/s: %s of a core (cheapest arm of each)\n", e, fmtRate(rate), op, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "share = median wall time per op × rate: an estimate of the CPU spent; blocking handoffs spend part of it waiting for a wake-up, spinning ones may burn CPU on both sides")
	return nil
}
