package cli

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/compare"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Shell completion (cobra's `ctxlab completion bash|zsh|fish|powershell`)
// completes experiments and arm names, --format values and stored run ids.
// addCompletions wires it onto the built command tree, so command files
// need not know about it.
func addCompletions(root *cobra.Command) {
	formats := map[string][]string{
		"ctxlab": report.Formats, "run": report.Formats, "show": report.Formats,
		"compare": compare.Formats, "env": {"table", "json"}, "history": {"table", "json", "csv"},
		"report": {"html", "svg", "png"}, "watch": {"auto", "table", "json"},
	}
	argsOf := map[string]cobra.CompletionFunc{
		"run": completeArms, "list": completeArms,
		"show": completeRuns, "report": completeRuns, "export": completeRuns, "compare": completeRuns,
	}
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			refuseUnknownShell(c)
		}
	}
	cmds := append([]*cobra.Command{root}, root.Commands()...)
	for _, c := range cmds {
		name := c.Name()
		if fs, ok := formats[name]; ok && c.Flags().Lookup("format") != nil {
			c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(fs, cobra.ShellCompDirectiveNoFileComp))
		}
		if f, ok := argsOf[name]; ok && f != nil && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = f
		}
		for _, flag := range []string{"arm", "probes", "chart"} {
			if c.Flags().Lookup(flag) != nil {
				c.RegisterFlagCompletionFunc(flag, completeArms)
			}
		}
		if c.Flags().Lookup("run") != nil {
			c.RegisterFlagCompletionFunc("run", completeRuns)
		}
	}
}

// refuseUnknownShell makes `completion tcsh` bad input (exit 2) naming
// the shells there are; cobra's own completion command prints its help
// and exits 0 for a shell it does not have.
func refuseUnknownShell(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var shells []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				shells = append(shells, sub.Name())
			}
		}
		return usagef("completion %q: no such shell; want one of %s", args[0], strings.Join(shells, ", "))
	}
}

// completeArms offers experiment names, and arm names once the word has a
// '/' (a listing of every arm would run to hundreds).
func completeArms(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	name, _, hasSlash := strings.Cut(toComplete, "/")
	for _, s := range exp.All() {
		if !hasSlash {
			if strings.HasPrefix(s.Name, toComplete) {
				out = append(out, s.Name+"\t"+s.Summary)
			}
			continue
		}
		if s.Name != name {
			continue
		}
		host := sysinfo.Detect()
		arms, err := s.Arms(exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs, Extra: map[string]string{}})
		if err != nil {
			continue
		}
		for _, a := range arms {
			if strings.HasPrefix(a.Name, toComplete) {
				out = append(out, a.Name)
			}
		}
	}
	if !hasSlash {
		for _, sel := range exp.Selectors() { // "python": every CPython arm
			if strings.HasPrefix(sel, toComplete) {
				out = append(out, sel+"\t"+exp.SelectorDoc(sel))
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRuns offers the stored run ids (newest first), last and last~1,
// from --db or the default store; a missing store offers nothing.
func completeRuns(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	path, _ := cmd.Flags().GetString("db")
	if path == "" {
		path, _ = store.DefaultPath()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, cobra.ShellCompDirectiveDefault // a run JSON file, then
	}
	s, err := store.Open(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	defer s.Close()
	entries, err := s.List(context.Background(), 50)
	if err != nil {
		return nil, cobra.ShellCompDirectiveDefault
	}
	out := []string{"last\tthe latest stored run", "last~1\tthe run before it"}
	for _, e := range entries {
		out = append(out, e.ID+"\t"+e.Time.Format("2006-01-02 15:04")+" "+e.Suite+" "+e.Host)
	}
	var keep []string
	for _, o := range out {
		if strings.HasPrefix(o, toComplete) {
			keep = append(keep, o)
		}
	}
	return keep, cobra.ShellCompDirectiveDefault
}
