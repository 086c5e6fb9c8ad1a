package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

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
spends its on-CPU time per op × rate of a core. On-CPU time counts every
participant (both sides of a handoff, child processes too), not the wall
time: a blocking handoff across CPUs takes long but mostly waits. The figures
come from the latest stored run (or --run, a stored run or a run JSON file);
each row says where its CPU time comes from (the runner's per-op CPU time,
else perf task-clock from --counters). The summary names, per experiment and
substrate, the arm it priced — the one with the least CPU per op — and why.

A run without CPU time per op (older runs) is priced by wall time, and the
output says so.`,
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
					return usagef("--arm %q: not a valid glob: %v", o.Arm, err)
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
	addDBFlag(f, &o.DB)
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

func pct(f float64) string { return price.Percent(f) }

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

// budgetRow is one arm priced: its CPU per op and where that came from.
type budgetRow struct {
	arm    result.Arm
	perOp  float64
	source string
}

// writeBudget prices run's arms. Names and the host may come from an
// imported file: --arm matches them as they are, and they are printed
// escaped (termsafe), in the table and in the message for an --arm that
// matches nothing.
func writeBudget(w io.Writer, run *result.Run, rate float64, glob string) error {
	esc := termsafe.String
	var rows []budgetRow
	var wall []result.Arm
	for _, a := range run.Arms {
		if !armMatches(glob, a) || a.Status != result.StatusOK || a.Median <= 0 || (a.Unit != "" && a.Unit != "ns/op") {
			continue
		}
		if c, src, ok := price.CPUPerOp(a); ok {
			rows = append(rows, budgetRow{a, c, src})
		} else {
			wall = append(wall, a)
		}
	}
	byWall := false
	if len(rows) == 0 {
		if len(wall) == 0 {
			var names []string
			seen := map[string]bool{}
			for _, a := range run.Arms {
				if !seen[a.Experiment] {
					seen[a.Experiment] = true
					names = append(names, a.Experiment)
				}
			}
			return usagef("--arm %q: no measured ns/op arm in run %s matches; its experiments are %s", glob, run.ID, strings.Join(termsafe.Strings(names), ", "))
		}
		byWall = true
		for _, a := range wall {
			rows = append(rows, budgetRow{a, a.Median, "wall time (no CPU time recorded)"})
		}
		wall = nil
	}
	fmt.Fprintf(w, "at %s ops/s, from run %s (%s, %s):\n", fmtRate(rate), run.ID, esc(run.Env.Hostname), run.Time.UTC().Format("2006-01-02 15:04"))
	if byWall {
		fmt.Fprintln(w, "this run recorded no CPU time per op (run it again, or with --counters): priced by WALL time, which overstates a blocking handoff's CPU")
	}
	table := [][]string{{"arm", "CPU/op", "wall/op", "share of one core", "CPU time from"}}
	type cheapest struct {
		row  budgetRow
		frac float64
	}
	best := map[string]map[string]cheapest{} // experiment → substrate
	var exps []string
	ops := map[string]string{}
	for _, r := range rows {
		a := r.arm
		frac := r.perOp * rate / 1e9
		note := ""
		if frac > 1 {
			note = " (more than a core: one worker cannot sustain this rate)"
		}
		table = append(table, []string{esc(a.Name), result.FormatNs(r.perOp), result.FormatNs(a.Median), pct(frac) + note, r.source})
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
			best[a.Experiment][sub] = cheapest{r, frac}
		}
	}
	textcol.Write(w, table, "", nil)
	fmt.Fprintln(w)
	for _, e := range exps {
		var subs []string
		for s := range best[e] {
			subs = append(subs, s)
		}
		sort.Slice(subs, func(i, j int) bool { return best[e][subs[i]].frac < best[e][subs[j]].frac })
		var parts []string
		for _, s := range subs {
			c := best[e][s]
			parts = append(parts, fmt.Sprintf("%s %s (%s)", esc(s), pct(c.frac), esc(strings.TrimPrefix(c.row.arm.Name, e+"/"))))
		}
		op := ops[e]
		if op == "" {
			op = "op"
		}
		fmt.Fprintf(w, "%s, %s %ss/s: %s of a core\n", esc(e), fmtRate(rate), esc(op), strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "priced: per substrate, the arm with the least CPU per op (the cheapest way this machine offers); share = CPU per op × rate")
	if len(wall) > 0 {
		fmt.Fprintf(w, "not priced: %d matching arms recorded no CPU time per op\n", len(wall))
	}
	return nil
}
