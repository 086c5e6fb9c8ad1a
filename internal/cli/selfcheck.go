package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/selfcheck"
	"github.com/ctxlab/ctxlab/internal/sqlop"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// SelfcheckOptions are the flags of `ctxlab selfcheck`.
type SelfcheckOptions struct {
	Rounds      int
	CPU         int
	Reps        int
	BenchTime   time.Duration
	Settle      time.Duration
	Python      string
	Format      string
	DB          string
	NoStore     bool
	Stdout      io.Writer
	Stderr      io.Writer
	CommandLine []string
	// Sets are --set KEY=VALUE: the user's query (db, query, args,
	// db-shm), held to the application's own loop.
	Sets    []string
	cmd     *cobra.Command
	cpuFlag string // --cpu as given; "" = the first allowed CPU
}

const (
	maxSelfcheckRounds = 20
	maxSelfcheckReps   = 20
)

func newSelfcheckCmd(stdout, stderr io.Writer, cmdline []string) *cobra.Command {
	o := &SelfcheckOptions{Stdout: stdout, Stderr: stderr, CommandLine: cmdline}
	c := &cobra.Command{
		Use:   "selfcheck",
		Short: "prove the harness's overhead here: ctxlab's arms beside perf bench, plain loops and perf_counter loops, interleaved",
		Long: `selfcheck runs ctxlab's own arms beside instruments ctxlab did not write,
on this machine, in interleaved rounds, each round in a new shuffled order,
every workload's workers on one CPU (--cpu):

  pingpong/goroutine/chan/gomaxprocs=1  a testing.B loop at -cpu 1 (built in)
  pingpong/thread/futex/unpinned        a raw-syscall futex loop (built in: rawloop)
  pingpong/thread/eventfd/unpinned      a raw-syscall eventfd loop (built in: rawloop)
  pingpong/thread/pipe/unpinned         perf bench sched pipe -T (when perf is installed)
  pingpong/process/pipe/unpinned        perf bench sched pipe, and the same raw
                                        loop between two Go processes (built in)
  callchain/pythread/plain              a plain perf_counter loop, same interpreter
  hop/pytask/direct                     a plain perf_counter loop of the seed's lookup

Each arm runs as ctxlab run ARM --cpus CPU would, in a process of its own,
and so does each reference. Each round's ratio is ctxlab ÷ reference, so
drift of the machine between rounds cancels; the row is their median and
min–max, and an arm over 1.05× is named in the verdict (an arm with two
references only when it is over both: perf bench's processes are
single-threaded, a Go process never is). It takes about 35 s.
The check is stored in the history: ctxlab env and every later run's
environment (and report) show it, a run's arm that was over here in every round carries a
note, and serve exports it.`,
		Example: `  ctxlab selfcheck
  ctxlab selfcheck --rounds 5 --cpu 1 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cmd = cmd
			return runSelfcheck(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.IntVar(&o.Rounds, "rounds", 3, "interleaved rounds, "+intRange(1, maxSelfcheckRounds))
	f.StringVar(&o.cpuFlag, "cpu", "", "the CPU every arm's and reference's workers run on, "+intRange(0, result.MaxCPUs-1)+" (default: the first CPU ctxlab may use)")
	f.IntVar(&o.Reps, "reps", 3, "repetitions of each arm and reference per round, "+intRange(1, maxSelfcheckReps))
	f.DurationVar(&o.BenchTime, "benchtime", 100*time.Millisecond, "target time of one repetition, "+durRange(minBenchTime, maxBenchTime))
	f.DurationVar(&o.Settle, "settle", 250*time.Millisecond, "pause before each command, so none runs in another's wake, "+durRange(0, maxSettle))
	f.StringVar(&o.Python, "python", "python3", "the CPython whose arms are checked (a command or path)")
	f.StringVar(&o.Format, "format", "table", "table or json (the stored run's JSON)")
	f.StringArrayVar(&o.Sets, "set", nil, "your query, held to your application's own loop: db=PATH, query='SELECT … ?', args=range:A..B or file:PATH, db-shm=read-only|write (as for ctxlab run hop)")
	addDBFlag(f, &o.DB)
	f.BoolVar(&o.NoStore, "no-store", false, "do not save the check in the history database")
	return c
}

func runSelfcheck(ctx context.Context, o *SelfcheckOptions) error {
	switch {
	case o.Rounds < 1 || o.Rounds > maxSelfcheckRounds:
		return outOfRange("--rounds", o.Rounds, intRange(1, maxSelfcheckRounds))
	case o.Reps < 1 || o.Reps > maxSelfcheckReps:
		return outOfRange("--reps", o.Reps, intRange(1, maxSelfcheckReps))
	case o.BenchTime < minBenchTime || o.BenchTime > maxBenchTime:
		return outOfRange("--benchtime", o.BenchTime, durRange(minBenchTime, maxBenchTime))
	case o.Settle < 0 || o.Settle > maxSettle:
		return outOfRange("--settle", o.Settle, durRange(0, maxSettle))
	case o.Format != "table" && o.Format != "json":
		return usagef("--format %q: must be table or json", o.Format)
	}
	host := sysinfo.Detect()
	h, err := selfcheckHost(o, host)
	if err != nil {
		return err
	}
	ro := &RunOptions{DB: o.DB, NoStore: o.NoStore, Stdout: o.Stdout, Stderr: o.Stderr, Format: o.Format}
	if err := checkStore(ctx, ro); err != nil {
		return err
	}
	if h.Exe, err = os.Executable(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "ctxlab-selfcheck-")
	if err != nil {
		return err
	}
	forget := launch.Temp(dir) // the keeper removes it if ctxlab dies first
	defer func() { os.RemoveAll(dir); forget() }()
	h.Dir = dir
	h.Perf, h.PerfWhy = selfcheck.ProbePerf(ctx)
	comps, err := selfcheck.Comparisons(h)
	if err != nil {
		return err
	}
	plan, clear := selfcheckPlan(o)
	began := time.Now().UTC()
	before := sysinfo.Sample(host)
	rows := selfcheck.Run(ctx, comps, plan)
	after := sysinfo.Sample(host)
	clear()
	verdict := selfcheck.Verdict(rows)
	if dt := after.Total - before.Total; dt > 0 {
		if n := selfcheck.StealNote(100*(after.Steal-before.Steal)/dt, runner.MaxStealPct); n != "" {
			verdict += "; " + n
		}
	}
	run := &result.Run{
		Schema: result.SchemaVersion, ID: newRunID(), Time: began,
		Version: version(), GoVersion: runtime.Version(), CommandLine: o.CommandLine,
		Suite: selfcheck.Suite, Env: host.Env, ClockCostNs: measure.ClockCost(),
		Arms: selfcheck.Arms(rows, o.CPU), Interrupted: ctx.Err() != nil,
		Experiments: []result.Experiment{{Name: selfcheck.Experiment, Summary: "ctxlab's arms beside instruments it did not write, interleaved",
			Op: "ctxlab ÷ reference", Findings: []string{verdict}}},
	}
	run.Warnings = envWarnings(host)
	length := selfcheckLength(o, time.Since(began), host, before, after)
	if length != "" && !run.Interrupted {
		run.Warnings = append(run.Warnings, "selfcheck: "+length)
	}
	saveErr := saveRun(ctx, ro, run)
	if err := printSelfcheck(o, run, length); err != nil {
		return errors.Join(saveErr, err)
	}
	if run.Interrupted {
		return errInterrupted
	}
	return saveErr
}

// printSelfcheck writes the check: the run's JSON, or its table and
// verdict wrapped at the terminal, then its length when the load made it
// longer than the README says.
func printSelfcheck(o *SelfcheckOptions, run *result.Run, length string) error {
	if o.Format == "json" {
		enc := json.NewEncoder(termsafe.JSON(o.Stdout))
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	}
	return onScreen(o.Stdout, func(w io.Writer) error {
		writeSelfcheck(w, run, termWidth(o.Stdout))
		if length != "" && !run.Interrupted {
			_, err := fmt.Fprintln(w, "length: "+length)
			return err
		}
		return nil
	})
}

// selfcheckLength says how long the check took and under what load when
// that was longer than the README's "about 35 s" for the default flags;
// "" otherwise, and with other --rounds, --reps, --benchtime, --settle or
// a --set query, for which the README gives no length.
func selfcheckLength(o *SelfcheckOptions, took time.Duration, host *sysinfo.Host, before, after sysinfo.Noise) string {
	if len(o.Sets) > 0 || o.Rounds != 3 || o.Reps != 3 || o.BenchTime != 100*time.Millisecond || o.Settle != 250*time.Millisecond {
		return ""
	}
	steal := 0.0
	if dt := after.Total - before.Total; dt > 0 {
		steal = 100 * (after.Steal - before.Steal) / dt
	}
	return selfcheck.LengthNote(took, selfcheck.Usual, before.Load1, after.Load1, len(host.OnlineCPUs), steal)
}

// selfcheckHost is where the checks run: --cpu (in ctxlab's allowed set,
// the first of it by default) and --python (none on PATH leaves the
// CPython checks out, unless --python named one).
func selfcheckHost(o *SelfcheckOptions, host *sysinfo.Host) (selfcheck.Host, error) {
	allowed, _ := measure.Affinity()
	if len(allowed) == 0 {
		allowed = host.OnlineCPUs
	}
	if o.cpuFlag == "" {
		o.CPU = allowed[0]
	} else if n, err := strconv.Atoi(o.cpuFlag); err != nil || n < 0 || n >= result.MaxCPUs {
		return selfcheck.Host{}, usagef("--cpu %q: want a CPU number in %s", o.cpuFlag, intRange(0, result.MaxCPUs-1))
	} else if o.CPU = n; !slices.Contains(allowed, o.CPU) {
		return selfcheck.Host{}, usagef("--cpu %d: not a CPU ctxlab may use; want one of %s", o.CPU, sysinfo.FormatCPUList(allowed))
	}
	h := selfcheck.Host{CPU: o.CPU, Reps: o.Reps, BenchTime: o.BenchTime}
	if err := selfcheckUser(o, &h); err != nil {
		return h, err
	}
	py, err := exec.LookPath(o.Python)
	switch {
	case err != nil && o.cmd != nil && o.cmd.Flags().Changed("python"):
		return h, usagef("--python %s: %v; want a python3 command or path", o.Python, err)
	case err != nil:
		h.PythonWhy = "no " + o.Python + " on PATH (--python PATH picks one)"
	default:
		h.Python = py
	}
	return h, nil
}

// selfcheckUser reads --set: the user's query, checked as ctxlab run
// checks it, before anything starts.
func selfcheckUser(o *SelfcheckOptions, h *selfcheck.Host) error {
	if len(o.Sets) == 0 {
		return nil
	}
	kv := map[string]string{}
	for _, s := range o.Sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || !slices.Contains([]string{"db", "query", "args", "db-shm"}, k) {
			return usagef("--set %s: selfcheck takes db=PATH, query=…, args=… and db-shm=…", s)
		}
		kv[k] = v
	}
	u, err := sqlop.CheckUser(kv["db"], kv["query"], kv["args"], kv["db-shm"])
	if err != nil {
		return usagef("%v", err)
	}
	kv["db"] = u.Path
	h.User = u
	for _, k := range []string{"db", "query", "args", "db-shm"} {
		if v, ok := kv[k]; ok {
			h.UserSets = append(h.UserSets, "--set", k+"="+v)
		}
	}
	return nil
}

// selfcheckPlan is the rounds' plan: a command takes ~reps × benchtime
// plus its start, and one that has not answered in 20 times that, or a
// minute, is stuck. On a terminal a status line shows the progress, and
// clear wipes it.
func selfcheckPlan(o *SelfcheckOptions) (plan selfcheck.Plan, clear func()) {
	plan = selfcheck.Plan{Rounds: o.Rounds, Settle: o.Settle, Timeout: max(time.Minute, 20*time.Duration(o.Reps)*o.BenchTime)}
	clear = func() {}
	if f, ok := o.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		width := termWidth(o.Stderr)
		plan.Progress = func(done, total int, what string) {
			fmt.Fprintf(o.Stderr, "\r\x1b[K%s", textcol.Clip(fmt.Sprintf("selfcheck %d/%d: %s", done, total, termsafe.String(what)), width-1))
		}
		clear = func() { fmt.Fprint(o.Stderr, "\r\x1b[K") }
	}
	return plan, clear
}

// writeSelfcheck prints a selfcheck run's rows and its verdict for a
// terminal width columns wide (0: none).
func writeSelfcheck(w io.Writer, run *result.Run, width int) {
	check := selfcheck.FromRun(run)
	cpu, rounds := 0, 0
	for _, a := range run.Arms {
		if len(a.CPUs) > 0 {
			cpu = a.CPUs[0]
		}
		rounds = max(rounds, len(a.RepMeans))
	}
	fmt.Fprintf(w, "ctxlab selfcheck · %s · workers on CPU %d · %s, each shuffled\n", termsafe.String(hostLine(run.Env)), cpu, fmt.Sprintf("%d round%s", rounds, plural(rounds)))
	fmt.Fprintln(w, "ratio: ctxlab's median ÷ the reference's, per round; the row is their median and min–max")
	table := [][]string{{"arm", "ratio", "min–max", "ctxlab", "reference", ""}}
	for i, r := range check.Rows {
		a := run.Arms[i]
		switch r.Status {
		case result.StatusOK:
			mark := ""
			if r.Over() {
				mark = " over"
			}
			table = append(table, []string{r.Arm, fmt.Sprintf("%.2f×%s", r.Ratio, mark), fmt.Sprintf("%.2f–%.2f", r.Min, r.Max),
				result.FormatNs(a.Metrics["ctxlab-ns/op"]), result.FormatNs(a.Metrics["reference-ns/op"]), r.Reference})
		default:
			table = append(table, []string{r.Arm, r.Status, "", "", "", r.Reference})
		}
	}
	textcol.Fit(w, table, width, func(col, _ int) bool { return col >= 1 && col <= 4 })
	for _, r := range check.Rows {
		if r.Status != result.StatusOK {
			fmt.Fprintf(w, "  %s: %s\n", r.Arm, termsafe.String(r.Reason))
		}
	}
	for _, l := range textcol.Wrap("verdict: "+termsafe.String(check.Verdict), width) {
		fmt.Fprintln(w, l)
	}
}

// hostLine is the machine in a few words: CPU model, CPUs, VM.
func hostLine(e result.Env) string {
	s := e.CPUModel + ", " + strconv.Itoa(e.LogicalCPUs) + " CPUs"
	if e.Hypervisor {
		s += ", VM"
	}
	return s
}

// lastHarness is the last selfcheck stored for this host, or nil: a run,
// env and the report show it beside the clock's cost. The history is only
// read; a missing or unreadable one is no check.
func lastHarness(ctx context.Context, db, hostname string) *result.HarnessCheck {
	s, err := openStore(ctx, db, false)
	if err != nil {
		return nil
	}
	defer s.Close()
	run, err := s.Latest(ctx, selfcheck.Suite, hostname)
	if err != nil {
		return nil // none stored yet (store.ErrNotFound), or unreadable
	}
	return selfcheck.FromRun(run)
}

// harnessNotes adds to every arm that the last selfcheck found over its
// limit on this host, in every one of at least 3 rounds, a note that says
// by how much (a median over a noisy check's rounds is no such finding).
func harnessNotes(run *result.Run) {
	h := run.Env.Harness
	for i := range run.Arms {
		a := &run.Arms[i]
		if r, ok := h.Row(a.Name); ok && r.SurelyOver() {
			a.Notes = append(a.Notes, fmt.Sprintf("ctxlab selfcheck (%s) read this arm %.2f× %s on this host (its rounds %.2f–%.2f×, limit %.2f×): up to %.0f%% of its figure may be the harness",
				h.Time.Format("2006-01-02"), r.Ratio, r.Reference, r.Min, r.Max, r.Limit, 100*(1-1/r.Ratio)))
		}
	}
}
