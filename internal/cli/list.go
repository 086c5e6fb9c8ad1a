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
		Use:   "list [EXPERIMENT]",
		Short: "list experiments, their arms, and what each measures",
		Args:  cobra.MaximumNArgs(1),
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
	if len(exp.Options) > 0 {
		fmt.Fprintln(w, "\noptions (--set key=value):")
		for _, k := range exp.OptionNames() {
			fmt.Fprintf(w, "  %s  %s\n", k, exp.Options[k])
		}
	}
	fmt.Fprintln(w, "\nq = in the quick suite (`ctxlab` alone, or `ctxlab run --quick`)")
	return nil
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
