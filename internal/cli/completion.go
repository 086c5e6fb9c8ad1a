package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/compare"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// Shell completion (cobra's `ctxlab completion bash|zsh|fish|powershell`)
// completes experiments, selectors and arm names, --format, --sort and
// --suite values, --set's options, a run's chart names, stored run ids and
// running PIDs.
// addCompletions wires it onto the built command tree, so command files
// need not know about it. Bash's script needs the bash-completion package
// (its _init_completion, and __ltrim_colon_completions for names such as
// ring:param).
func addCompletions(root *cobra.Command) {
	formats := map[string][]string{
		"ctxlab": report.Formats, "run": report.Formats, "show": report.Formats,
		"compare": compare.Formats, "env": {"table", "json"}, "history": {"table", "json", "csv"},
		"report": {"html", "svg", "png"}, "watch": {"auto", "table", "json"},
		"diagnose": {"auto", "table", "json", "bench"}, // bench: with --vary
	}
	argsOf := map[string]cobra.CompletionFunc{
		"run": completeArms, "list": completeArms,
		"show": completeRuns, "report": completeRuns, "export": completeRuns, "compare": completeRuns,
		"watch": completePIDs,
	}
	// Flags that take one of a few words, wherever a command has them.
	words := map[string][]string{
		"sort":  watch.SortKeys,
		"suite": {exp.SuiteQuick, exp.SuiteDefault, exp.SuiteFull},
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
		for _, flag := range []string{"arm", "probes"} {
			if c.Flags().Lookup(flag) != nil {
				c.RegisterFlagCompletionFunc(flag, completeArms)
			}
		}
		if c.Flags().Lookup("chart") != nil {
			c.RegisterFlagCompletionFunc("chart", completeCharts)
		}
		for flag, ws := range words {
			if c.Flags().Lookup(flag) != nil {
				c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(ws, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if c.Flags().Lookup("run") != nil {
			c.RegisterFlagCompletionFunc("run", completeRuns)
		}
		if c.Flags().Lookup("set") != nil {
			c.RegisterFlagCompletionFunc("set", completeSet)
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

// completeArms offers experiment names and selectors, and arm names once
// the word has a '/' (a listing of every arm would run to hundreds); after
// a selector (python/), the experiments it selects arms of, then their
// arms under it (python/pingpong/pythread/…).
func completeArms(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	name, rest, hasSlash := strings.Cut(toComplete, "/")
	if hasSlash && slices.Contains(exp.Selectors(), name) {
		return completeSelector(name, rest), cobra.ShellCompDirectiveNoFileComp
	}
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
		arms, err := s.Arms(exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs})
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

// completeSet offers --set's keys, "key=" with what each does: those of
// the experiments the line names (every key when it names none). After
// "key=", the values the option offers (a list option's words), if any.
func completeSet(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	directive := cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	if key, typed, ok := strings.Cut(toComplete, "="); ok {
		o, known := exp.LookupOption(key)
		if !known {
			return nil, directive
		}
		var out []string
		for _, v := range o.OptionValues() {
			if strings.HasPrefix(v, typed) {
				out = append(out, key+"="+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	keys := exp.OptionNames()
	if len(args) > 0 {
		host := sysinfo.Detect()
		if sels, err := exp.Select(args, exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs}); err == nil {
			keys = nil
			for _, s := range sels {
				for _, k := range exp.OptionsOf(s.Spec.Name, s.Arms) {
					if !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
			slices.Sort(keys)
		}
	}
	var out []string
	for _, k := range keys {
		if o, _ := exp.LookupOption(k); strings.HasPrefix(k, toComplete) {
			out = append(out, k+"=\t"+o.OptionDoc())
		}
	}
	return out, directive
}

// completeSelector offers, after "sel/", the experiments sel selects arms
// of ("python/pingpong"), and once one is named, its arms that sel
// selects ("python/pingpong/pythread/simplequeue/unpinned").
func completeSelector(sel, rest string) []string {
	host := sysinfo.Detect()
	p := exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs}
	expName, _, named := strings.Cut(rest, "/")
	pattern := sel
	if named {
		pattern = sel + "/" + expName
	}
	sels, err := exp.Select([]string{pattern}, p)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range sels {
		if !named {
			if strings.HasPrefix(s.Spec.Name, rest) {
				out = append(out, sel+"/"+s.Spec.Name+"\t"+fmt.Sprintf("%d arms: %s", len(s.Arms), s.Spec.Summary))
			}
			continue
		}
		for _, a := range s.Arms {
			if strings.HasPrefix(a.Name, rest) {
				out = append(out, sel+"/"+a.Name)
			}
		}
	}
	return out
}

// completeCharts offers the names of the charts of the run report would
// draw (its argument, else the last stored run): pingpong, ring:param,
// pingpong:cdf-2 …; and, before a ':', arm patterns as completeArms does.
func completeCharts(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	db, _ := cmd.Flags().GetString("db")
	ref := "last"
	if len(args) == 1 {
		ref = args[0]
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var out []string
	seen := map[string]bool{}
	if run, err := loadRun(ctx, db, ref); err == nil {
		for _, c := range report.Charts(run) {
			if strings.HasPrefix(c.Name(), toComplete) {
				seen[c.Name()] = true
				out = append(out, c.Name()+"\t"+strings.ReplaceAll(c.Title, "\n", " "))
			}
		}
	}
	if !strings.Contains(toComplete, ":") {
		arms, _ := completeArms(cmd, args, toComplete)
		for _, a := range arms {
			if word, _, _ := strings.Cut(a, "\t"); !seen[word] {
				out = append(out, a)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completePIDs offers the running processes' PIDs, each with its command
// name, for watch's one argument (ctxlab itself left out).
func completePIDs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	root, _ := cmd.Flags().GetString("proc-root")
	procs, err := procstat.Root(root).Procs()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, p := range procs {
		if id := strconv.Itoa(p.PID); p.PID != os.Getpid() && strings.HasPrefix(id, toComplete) {
			out = append(out, id+"\t"+termsafe.String(p.Comm))
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
