package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// ListOptions are the flags of `ctxlab list`.
type ListOptions struct {
	Suite string
	// Arms lists every experiment's arms, not only a line per experiment.
	Arms bool
}

func newListCmd(stdout io.Writer) *cobra.Command {
	o := &ListOptions{}
	c := &cobra.Command{
		Use:   "list [EXPERIMENT | PATTERN …]",
		Short: "list experiments, their arms, and what each measures",
		Long: `Without arguments, one line per experiment: how many arms it has, how many
the quick suite runs, and what it measures; --arms lists every arm
as well. With an experiment's name, what it measures, its options
(--set key=value), its metrics and its arms. With arm patterns, the arms
they select, as ` + "`ctxlab run`" + ` would run them: a pattern is an experiment, an arm, a
leading part of arm names (pingpong/thread), or a glob in which * matches
any run of characters, / included (pingpong/thread/*, */futex/*), ? one
character and […] one of a set. budget --arm, serve --probes and report
--chart read patterns the same way.`,
		Example: `  ctxlab list
  ctxlab list pingpong
  ctxlab list --arms --suite quick
  ctxlab list 'pingpong/thread/*'
  ctxlab list '*/futex/*' --suite quick`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return onScreen(stdout, func(w io.Writer) error { return list(w, args, o) })
		},
	}
	c.Flags().StringVar(&o.Suite, "suite", exp.SuiteDefault, "which suite's arms to list: quick, default, full")
	c.Flags().BoolVar(&o.Arms, "arms", false, "list every experiment's arms too")
	return c
}

// quickLegend explains the q that marks an arm of the quick suite; a
// listing of arms prints it first.
const quickLegend = "q = in the quick suite (`ctxlab` alone, or `ctxlab run --quick`)"

func list(w io.Writer, args []string, o *ListOptions) error {
	if o.Suite != exp.SuiteQuick && o.Suite != exp.SuiteDefault && o.Suite != exp.SuiteFull {
		return usagef("--suite %q: must be quick, default or full", o.Suite)
	}
	host := sysinfo.Detect()
	p := exp.Params{Suite: o.Suite, Host: host, CPUs: host.OnlineCPUs}
	switch {
	case len(args) > 1 || len(args) == 1 && !isExperiment(args[0]):
		return listSelected(w, args, p)
	case len(args) == 1:
		s, _ := exp.Lookup(args[0])
		listExperiment(w, s, p)
		return nil
	case o.Arms:
		listArms(w, exp.All(), p)
		return nil
	}
	listCompact(w, exp.All(), p)
	return nil
}

// listCompact prints one line per experiment, a legend above them and
// where to look next below.
func listCompact(w io.Writer, specs []*exp.Spec, p exp.Params) {
	fmt.Fprintf(w, "arms: how many arms the %s suite runs (--suite quick|default|full)\n", p.Suite)
	fmt.Fprintln(w, "q: how many arms the quick suite runs (`ctxlab` alone, or `ctxlab run --quick`)")
	fmt.Fprintln(w)
	rows := [][]string{{"experiment", "arms", "q", "what it measures"}}
	for _, s := range specs {
		arms, err := s.Arms(p)
		if err != nil {
			rows = append(rows, []string{s.Name, "—", "—", s.Summary + " (arms unavailable: " + err.Error() + ")"})
			continue
		}
		unavailable := 0
		for _, a := range arms {
			if a.Unsupported != "" {
				unavailable++
			}
		}
		// The quick suite may run arms of its own sizes (cachecost does),
		// so q is counted in the quick suite's arms, not among these.
		qp := p
		qp.Suite = exp.SuiteQuick
		quick := 0
		if qarms, err := s.Arms(qp); err == nil {
			for _, a := range qarms {
				if a.Quick {
					quick++
				}
			}
		}
		summary := s.Summary
		if unavailable > 0 {
			summary += fmt.Sprintf(" (%d unavailable here)", unavailable)
		}
		rows = append(rows, []string{s.Name, strconv.Itoa(len(arms)), strconv.Itoa(quick), summary})
	}
	textcol.Write(w, rows, "  ", textcol.Middle)
	writeSelectors(w)
	fmt.Fprintln(w, "\none experiment's arms, options (--set) and metrics: ctxlab list EXPERIMENT")
	fmt.Fprintln(w, "every arm: ctxlab list --arms; the arms a pattern selects: ctxlab list 'pingpong/thread/*'")
}

// listExperiment says what one experiment measures, its options and
// metrics, then its arms.
func listExperiment(w io.Writer, s *exp.Spec, p exp.Params) {
	fmt.Fprintf(w, "%s; arms of the %s suite (--suite)\n\n", quickLegend, p.Suite)
	fmt.Fprintf(w, "%s — %s\n  op: %s\n", s.Name, s.Summary, s.Op)
	if s.Doc != "" {
		for _, line := range strings.Split(s.Doc, "\n") {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	writeMetrics(w, s.Metrics)
	arms, err := s.Arms(p)
	writeOptions(w, exp.OptionsOf(s.Name, arms))
	if err != nil {
		fmt.Fprintf(w, "  (arms unavailable: %v)\n", err)
		return
	}
	fmt.Fprintf(w, "  arms (%d):\n", len(arms))
	writeArms(w, arms)
}

// listArms prints every experiment with its arms and options.
func listArms(w io.Writer, specs []*exp.Spec, p exp.Params) {
	fmt.Fprintf(w, "%s; arms of the %s suite (--suite)\n", quickLegend, p.Suite)
	for _, s := range specs {
		fmt.Fprintf(w, "\n%s — %s\n  op: %s\n", s.Name, s.Summary, s.Op)
		arms, err := s.Arms(p)
		if err != nil {
			fmt.Fprintf(w, "  (arms unavailable: %v)\n", err)
			continue
		}
		writeOptions(w, exp.OptionsOf(s.Name, arms))
		writeArms(w, arms)
	}
	writeSelectors(w)
}

func writeArms(w io.Writer, arms []exp.Arm) {
	for _, a := range arms {
		mark := " "
		if a.Quick {
			mark = "q"
		}
		line := fmt.Sprintf("  %s %s", mark, a.Name)
		if a.Unsupported != "" {
			line += "  (unavailable here: " + a.Unsupported + ")"
		}
		fmt.Fprintln(w, line)
	}
}

// writeOptions lists --set keys and what each does, aligned.
func writeOptions(w io.Writer, keys []string) {
	if len(keys) == 0 {
		return
	}
	fmt.Fprintln(w, "  options (--set key=value):")
	var rows [][]string
	for _, k := range keys {
		o, _ := exp.LookupOption(k)
		rows = append(rows, []string{k, o.OptionDoc()})
	}
	textcol.Write(w, rows, "    ", nil)
}

func writeSelectors(w io.Writer) {
	sels := exp.Selectors()
	if len(sels) == 0 {
		return
	}
	fmt.Fprintln(w, "\nselectors (across experiments, wherever an arm pattern goes):")
	var rows [][]string
	for _, n := range sels {
		rows = append(rows, []string{n, exp.SelectorDoc(n)})
	}
	textcol.Write(w, rows, "  ", nil)
}

func isExperiment(name string) bool {
	_, ok := exp.Lookup(name)
	return ok
}

// listSelected prints the arms that patterns select, as run would take them.
func listSelected(w io.Writer, patterns []string, p exp.Params) error {
	sel, err := exp.Select(patterns, p)
	if err != nil {
		return &UsageError{err}
	}
	n := 0
	for _, s := range sel {
		n += len(s.Arms)
	}
	fmt.Fprintf(w, "%s selects %d arm%s (suite %s):\n", strings.Join(patterns, " "), n, plural(n), p.Suite)
	for _, s := range sel {
		fmt.Fprintf(w, "\n%s — op: %s\n", s.Spec.Name, s.Spec.Op)
		for _, a := range s.Arms {
			line := "  " + a.Name
			if a.Unsupported != "" {
				line += "  (unavailable here: " + a.Unsupported + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeMetrics lists an experiment's declared metrics: name, unit, which
// direction is better, and what each says.
func writeMetrics(w io.Writer, ms []exp.Metric) {
	if len(ms) == 0 {
		return
	}
	fmt.Fprintln(w, "  metrics (besides the median; result JSON \"metrics\"):")
	for _, m := range ms {
		better := ""
		if m.Better != exp.NotRanked {
			better = ", " + string(m.Better) + " is better"
		}
		fmt.Fprintf(w, "    %s (%s%s): %s\n", m.Name, m.Unit, better, m.Doc)
	}
}
