package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func newListCmd(stdout io.Writer) *cobra.Command {
	var suite string
	c := &cobra.Command{
		Use:   "list [EXPERIMENT | PATTERN …]",
		Short: "list experiments, their arms, and what each measures",
		Long: `Without arguments, every experiment and its arms; with an experiment's name,
what it measures and its arms. With arm patterns, the arms they select, as
` + "`ctxlab run`" + ` would run them: a pattern is an experiment, an arm, a leading part
of arm names (pingpong/thread), or a glob in which * matches any run of
characters, / included (pingpong/thread/*, */futex/*), ? one character and
[…] one of a set. budget --arm, serve --probes and report --chart read
patterns the same way.`,
		Example: `  ctxlab list
  ctxlab list pingpong
  ctxlab list 'pingpong/thread/*'
  ctxlab list '*/futex/*' --suite quick`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return list(stdout, args, suite)
		},
	}
	c.Flags().StringVar(&suite, "suite", exp.SuiteDefault, "which suite's arms to list: quick, default, full")
	return c
}

func list(w io.Writer, args []string, suite string) error {
	if suite != exp.SuiteQuick && suite != exp.SuiteDefault && suite != exp.SuiteFull {
		return usagef("--suite %q: must be quick, default or full", suite)
	}
	host := sysinfo.Detect()
	p := exp.Params{Suite: suite, Host: host, CPUs: host.OnlineCPUs, Extra: map[string]string{}}
	specs := exp.All()
	if len(args) > 1 || len(args) == 1 && !isExperiment(args[0]) {
		return listSelected(w, args, p)
	}
	if len(args) == 1 {
		s, ok := exp.Lookup(args[0])
		if !ok {
			var names []string
			for _, s := range specs {
				names = append(names, s.Name)
			}
			return usagef("unknown experiment %q; experiments are %s", args[0], strings.Join(names, ", "))
		}
		specs = []*exp.Spec{s}
	}
	for i, s := range specs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s — %s\n  op: %s\n", s.Name, s.Summary, s.Op)
		if len(args) == 1 && s.Doc != "" {
			for _, line := range strings.Split(s.Doc, "\n") {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		if len(args) == 1 {
			writeMetrics(w, s.Metrics)
		}
		arms, err := s.Arms(p)
		if err != nil {
			fmt.Fprintf(w, "  (arms unavailable: %v)\n", err)
			continue
		}
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
	if sels := exp.Selectors(); len(args) == 0 && len(sels) > 0 {
		fmt.Fprintln(w, "\nselectors (across experiments, wherever an arm pattern goes):")
		for _, n := range sels {
			fmt.Fprintf(w, "  %s  %s\n", n, exp.SelectorDoc(n))
		}
	}
	if len(exp.Options) > 0 {
		fmt.Fprintln(w, "\noptions (--set key=value):")
		for _, k := range exp.OptionNames() {
			fmt.Fprintf(w, "  %s  %s\n", k, exp.Options[k])
		}
	}
	fmt.Fprintln(w, "\nq = in the quick suite (`ctxlab` alone, or `ctxlab run --quick`)")
	return nil
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
