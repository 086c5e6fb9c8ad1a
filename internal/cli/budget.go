package cli

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/experiments"
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
the first line says where its CPU time comes from (the runner's per-op CPU
time, else perf task-clock from --counters). The summary names, per
experiment, op and substrate, the arm it priced — the one with the least CPU
per op — and why, and then the run's cost of one switch with where it comes
from, the figure the verdict, watch and diagnose give for the same run. Arms that run CPU hogs beside their workers (interference's
hogs=N, busy=N) are left out, and so are arms without CPU time per op and
figures that are not a time per op; each group is named with its reason. On
a terminal the table fits its width.

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
			run, err := loadRunKind(cmd.Context(), o.DB, ref, result.ExperimentRun, stderr)
			if err != nil {
				return err
			}
			return writeBudget(stdout, run, rate, o.Arm, termWidth(stdout))
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

// inExperiment is the arm's name without its experiment's, for rows
// listed under the experiment.
func inExperiment(a result.Arm) string { return within(a, "") }

// within is the arm's name without its experiment and, when it is the
// first segment, without substrate sub ("futex/cross-cpu"); a name that
// is not its experiment's (an imported file's) stays whole.
func within(a result.Arm, sub string) string {
	k, err := exp.ParseArmKey(a.Name)
	if err != nil || k.Experiment != a.Experiment {
		return a.Name
	}
	if sub != "" && len(k.Segments) > 1 && k.Segments[0] == exp.Seg(sub) {
		k.Segments = k.Segments[1:]
	}
	return k.InExperiment()
}

// perExperiment names arms compactly: per experiment, how many, and the
// first two of them (what(arm), or the name within the experiment), then "…".
func perExperiment(arms []result.Arm, what func(result.Arm) string) string {
	var exps []string
	by := map[string][]string{}
	for _, a := range arms {
		if _, ok := by[a.Experiment]; !ok {
			exps = append(exps, a.Experiment)
		}
		d := inExperiment(a)
		if what != nil {
			d = what(a)
		}
		if !slices.Contains(by[a.Experiment], d) {
			by[a.Experiment] = append(by[a.Experiment], d)
		}
	}
	var parts []string
	for _, e := range exps {
		n := 0
		for _, a := range arms {
			if a.Experiment == e {
				n++
			}
		}
		ds := by[e]
		if len(ds) > 2 {
			ds = append(ds[:2:2], "…")
		}
		parts = append(parts, fmt.Sprintf("%s (%d: %s)", e, n, strings.Join(ds, ", ")))
	}
	return strings.Join(parts, ", ")
}

// writeBudget prices the matching arms at rate, fitted to width columns
// (≤ 0: not a terminal). Arms that are no CPU cost of a handoff are left
// out and named, each group with its reason: arms that run CPU hogs
// beside their workers (their time per op holds the hogs' turns), arms
// without CPU time per op, and figures that are not a time per op. Each
// arm is priced as pingpong's verdict prices it (experiments.PriceAt).
func writeBudget(w io.Writer, run *result.Run, rate float64, glob string, width int) error {
	out := func(s string) {
		for _, l := range textcol.Wrap(s, width) {
			fmt.Fprintln(w, l)
		}
	}
	// Names and the host may come from an imported file: --arm matches
	// them as they are, and everything is printed escaped (termsafe).
	raw := run.Arms
	run = termsafe.Strings(run)
	b, err := priceBudget(run, raw, rate, glob)
	if err != nil {
		return err
	}
	sources := experiments.PriceSources(b.rows)
	head := fmt.Sprintf("at %s ops/s, from run %s (%s, %s): share of one core = CPU per op × rate", fmtRate(rate), run.ID, run.Env.Hostname, run.Time.UTC().Format("2006-01-02 15:04"))
	if len(sources) == 1 {
		head += "; CPU per op: " + b.rows[0].Source
	}
	out(head)
	if b.byWall {
		out("this run recorded no CPU time per op (run it again, or with --counters): priced by WALL time, which overstates a blocking handoff's CPU")
	}
	cheapest := writeBudgetTable(w, b.rows, len(sources) > 1, width)
	for _, r := range b.rows {
		if r.Share > 1 {
			out("a share above 100% is more than one core: one worker cannot sustain that rate")
			break
		}
	}
	fmt.Fprintln(w)
	for _, l := range cheapest {
		out(l)
	}
	out("priced: per experiment, op and substrate, the arm with the least CPU per op (the cheapest way this machine offers)")
	if c, ok := price.DirectCost(run); ok { // the one cost of a switch, as the verdict, watch and diagnose give it
		out(c.Line())
	}
	for _, l := range unpriced(b.wall, b.hogged, b.notTime, b.few) {
		out("not priced: " + l)
	}
	return nil
}

// budget is a run's matching arms priced, and the ones left out by reason.
type budget struct {
	rows                  []experiments.Priced
	byWall                bool // no arm had CPU time: rows are priced by wall time
	wall, hogged, notTime []result.Arm
	few                   []result.Arm // too few ops per repetition: no figure to price
}

// priceBudget prices run's measured arms that match glob (by their raw
// names) at rate; with no CPU time at all it prices by wall time, and
// with nothing to price it is a usage error that says why.
func priceBudget(run *result.Run, raw []result.Arm, rate float64, glob string) (budget, error) {
	var b budget
	for i, a := range run.Arms {
		if a.Status == result.StatusTooFewOps && armMatches(glob, raw[i]) {
			b.few = append(b.few, a)
		}
		if !armMatches(glob, raw[i]) || a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		switch {
		case a.Unit != "" && a.Unit != "ns/op":
			b.notTime = append(b.notTime, a)
		case price.Hogged(a):
			b.hogged = append(b.hogged, a)
		default:
			if p, ok := experiments.PriceAt(a, rate); ok {
				b.rows = append(b.rows, p)
			} else {
				b.wall = append(b.wall, a)
			}
		}
	}
	if len(b.rows) > 0 {
		return b, nil
	}
	if len(b.wall) == 0 {
		if len(b.hogged)+len(b.notTime)+len(b.few) > 0 {
			return b, usagef("--arm %q: no matching arm of run %s can be priced: %s", glob, run.ID, strings.Join(unpriced(nil, b.hogged, b.notTime, b.few), "; "))
		}
		var names []string
		for _, a := range run.Arms {
			if !slices.Contains(names, a.Experiment) {
				names = append(names, a.Experiment)
			}
		}
		return b, usagef("--arm %q: no measured ns/op arm in run %s matches; its experiments are %s", glob, run.ID, strings.Join(names, ", "))
	}
	b.byWall = true
	for _, a := range b.wall {
		b.rows = append(b.rows, experiments.PriceByWall(a, rate, "wall time (no CPU time recorded)"))
	}
	b.wall = nil
	return b, nil
}

// writeBudgetTable writes the priced arms, with the source of each CPU
// time when they have several, and returns the summary: per experiment
// and op, each substrate's cheapest arm.
func writeBudgetTable(w io.Writer, rows []experiments.Priced, sourced bool, width int) []string {
	table := [][]string{{"arm", "CPU/op", "wall/op", "share"}}
	if sourced {
		table[0] = append(table[0], "CPU time from")
	}
	type group struct{ exp, op string }
	best := map[group]map[string]experiments.Priced{} // → substrate
	var groups []group
	// On a terminal, arms sit under their experiment's name without it;
	// elsewhere each row has the whole arm name, for grep.
	grouped := width > 0
	exp := ""
	for _, r := range rows {
		a := r.Arm
		name := a.Name
		if grouped {
			if a.Experiment != exp {
				exp = a.Experiment
				table = append(table, []string{exp})
			}
			name = "  " + inExperiment(a)
		}
		cells := []string{name, result.FormatNs(r.PerOp), result.FormatNs(a.Median), pct(r.Share)}
		if sourced {
			cells = append(cells, r.Source)
		}
		table = append(table, cells)
		g := group{a.Experiment, result.ShortOp(a.Op)}
		if best[g] == nil {
			best[g] = map[string]experiments.Priced{}
			groups = append(groups, g)
		}
		sub := a.Substrate
		if sub == "" {
			sub = "?"
		}
		if c, ok := best[g][sub]; !ok || r.Share < c.Share {
			best[g][sub] = r
		}
	}
	textcol.Fit(w, table, width, func(col, n int) bool { return col > 0 && col < 4 })
	var lines []string
	for _, g := range groups {
		var subs []string
		for s := range best[g] {
			subs = append(subs, s)
		}
		sort.Slice(subs, func(i, j int) bool { return best[g][subs[i]].Share < best[g][subs[j]].Share })
		var parts []string
		for _, s := range subs {
			c := best[g][s]
			parts = append(parts, fmt.Sprintf("%s %s (%s)", s, pct(c.Share), within(c.Arm, s)))
		}
		lines = append(lines, fmt.Sprintf("%s, per %s: %s of a core", g.exp, g.op, strings.Join(parts, ", ")))
	}
	return lines
}

// unpriced says which arms were left out and why, compactly.
func unpriced(noCPU, hogged, notTime, few []result.Arm) []string {
	var out []string
	if len(few) > 0 {
		out = append(out, fmt.Sprintf("%d arm(s) held too few ops per repetition for a figure: %s", len(few), perExperiment(few, nil)))
	}
	if len(hogged) > 0 {
		out = append(out, fmt.Sprintf("%d arm(s) run CPU hogs beside their workers, so their time per op holds the hogs' turns, not a handoff's CPU: %s",
			len(hogged), perExperiment(hogged, nil)))
	}
	if len(noCPU) > 0 {
		out = append(out, fmt.Sprintf("%d arm(s) recorded no CPU time per op: %s", len(noCPU), perExperiment(noCPU, nil)))
	}
	if len(notTime) > 0 {
		out = append(out, fmt.Sprintf("%d arm(s) are not a time per op: %s", len(notTime), perExperiment(notTime, func(a result.Arm) string { return a.Unit })))
	}
	return out
}
