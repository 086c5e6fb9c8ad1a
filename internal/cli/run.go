package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/selfcheck"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// RunOptions are the flags of `ctxlab run` (and of bare `ctxlab`), every
// one a typed field that addRunFlags fills.
type RunOptions struct {
	Quick, Full bool
	CPUs        string
	GOMAXPROCS  string
	Reps        int
	BenchTime   time.Duration
	// Budget is how long each comparison measured side by side may take
	// its rounds (--budget; 0 leaves the comparisons out).
	Budget  time.Duration
	Timeout time.Duration
	Format  string
	Output  string
	Workers string
	Hogs    string
	Set     []string
	// Python is the CPython the CPython arms drive (--python): a command
	// or path, or all; empty means python3.
	Python string
	// Counters opens perf counters on every participating thread (--counters).
	Counters bool
	// DB is the history database (--db); empty means store.DefaultPath.
	DB string
	// NoStore leaves the run out of the history (--no-store).
	NoStore bool
	// Detail adds the per-experiment tables after the verdict.
	Detail bool
	// CommandLine is what the stored run records as its command line.
	CommandLine []string
	Stdout      io.Writer
	Stderr      io.Writer
	// flags reports which flags the user gave.
	flags *pflag.FlagSet
	// beforeSave, when set (by tests), runs between measuring and storing.
	beforeSave func() error
}

func (o *RunOptions) changed(name string) bool { return o.flags != nil && o.flags.Changed(name) }

// addRunFlags defines run's flags (bare ctxlab has the same ones) on c,
// filling o.
func addRunFlags(c *cobra.Command, o *RunOptions) {
	f := c.Flags()
	o.flags = f
	f.BoolVar(&o.Quick, "quick", false, "the quick suite: fewer arms and repetitions (≤ 30 s on 2 cores)")
	f.BoolVar(&o.Full, "full", false, "the full suite: every arm, full sizes, longer repetitions")
	f.StringVar(&o.CPUs, "cpus", "", "CPUs the arms may use, e.g. 0 or 0,1 or 0-3 (default: all online)")
	f.StringVar(&o.GOMAXPROCS, "gomaxprocs", "", "GOMAXPROCS values to run arms at, e.g. 1,2, each "+intRange(1, maxGOMAXPROCS)+" (default: per experiment)")
	f.IntVar(&o.Reps, "reps", 0, "repetitions per arm, "+intRange(1, maxReps)+" (default 5; 3 with --quick)")
	f.DurationVar(&o.BenchTime, "benchtime", 0, "target time of one repetition, "+durRange(minBenchTime, maxBenchTime)+" (default 200ms; 60ms with --quick)")
	f.DurationVar(&o.Timeout, "timeout", 60*time.Second, "time limit per arm, "+durRange(minTimeout, maxTimeout))
	f.DurationVar(&o.Budget, "budget", 0, "time each comparison the verdict states may take, its two arms measured side by side, adding rounds while undecided, "+durRange(0, maxBudget)+"; 0s leaves them out (default 1s with --quick, 25 × the benchtime otherwise)")
	f.StringVar(&o.Format, "format", "table", "output format: "+strings.Join(report.Formats, ", "))
	f.StringVarP(&o.Output, "output", "o", "", "write the result to this file instead of stdout")
	f.StringVar(&o.Workers, "workers", "", "worker counts for ring and yield, and lookups in flight for concurrency, e.g. 2,100,1000, each "+intRange(1, maxWorkers))
	f.StringVar(&o.Hogs, "hogs", "", "CPU hog counts for interference, e.g. 0,1,2,6, each "+intRange(0, maxHogs))
	// The backticked word is the flag's placeholder in the help: --set key=value.
	f.StringArrayVar(&o.Set, "set", nil, "an experiment's option as `key=value`, once per key; ctxlab list EXPERIMENT shows its options")
	f.BoolVar(&o.Detail, "detail", false, "after the verdict, print every experiment's table, checks and notes (table format)")
	addPythonFlag(f, &o.Python)
	f.BoolVar(&o.Counters, "counters", false, "open perf counters (instructions, cycles, cache and TLB misses, switches …) on every participating thread; unsupported ones say why")
	addDBFlag(f, &o.DB)
	f.BoolVar(&o.NoStore, "no-store", false, "do not save this run in the history database")
}

func newRunCmd(o *RunOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "run [EXPERIMENT | PATTERN …]",
		Short: "run the default suite, or the named experiments and arms",
		Long: `Run experiments and print a table (or --format json).

Arguments are experiment names (pingpong) or arm globs (pingpong/thread/*,
pingpong/*/futex/same-cpu). Without arguments every experiment runs.
--quick keeps the quick arms of each experiment; --full runs full sizes.`,
		Example: `  ctxlab run pingpong
  ctxlab run 'pingpong/thread/*' --cpus 0
  ctxlab run --quick --format json -o run.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSuite(cmd.Context(), o, args)
		},
	}
	addRunFlags(c, o)
	return c
}

// Limits on numeric flags, named in their help and error messages.
const (
	maxReps       = 1000
	maxGOMAXPROCS = 4096
	maxHogs       = 1024
	maxWorkers    = 1000000
	minBenchTime  = time.Millisecond
	maxBenchTime  = time.Minute
	minTimeout    = time.Second
	maxTimeout    = time.Hour
	maxBudget     = 10 * time.Minute
)

// plan is a validated request: everything checked before anything starts.
type plan struct {
	params exp.Params
	cfg    runner.Config
	sel    []exp.Selection
}

func validate(o *RunOptions, args []string, host *sysinfo.Host) (*plan, error) {
	if o.Quick && o.Full {
		return nil, usagef("--quick and --full exclude each other")
	}
	suite := exp.SuiteDefault
	if o.Quick {
		suite = exp.SuiteQuick
	} else if o.Full {
		suite = exp.SuiteFull
	}
	p := exp.Params{Suite: suite, Host: host, CPUs: host.OnlineCPUs}
	if err := cpusParam(o, host, &p); err != nil {
		return nil, err
	}
	if err := listParams(o, &p); err != nil {
		return nil, err
	}
	given, err := setValues(o.Set)
	if err != nil {
		return nil, err
	}
	if p.Python, err = pythonChoice(o, given); err != nil {
		return nil, err
	}
	cfg, err := runConfig(o, suite)
	if err != nil {
		return nil, err
	}
	if !validFormat(o.Format) {
		return nil, usagef("--format %q: must be one of %s", o.Format, strings.Join(report.Formats, ", "))
	}
	if err := checkOutput("-o", o.Output, o.DB); err != nil {
		return nil, err
	}
	// Every --set key and value is checked, and parsed, before any arm is
	// built.
	if p.Options, err = exp.ParseSettings(given); err != nil {
		return nil, &UsageError{err}
	}
	sel, err := exp.Select(args, p)
	if err != nil {
		return nil, &UsageError{err}
	}
	cfg.Host = host
	cfg.StartLoad = host.Load1
	cfg.Counters = o.Counters
	return &plan{params: p, cfg: cfg, sel: sel}, nil
}

// cpusParam sets p's CPUs from --cpus: online, and in ctxlab's allowed set.
func cpusParam(o *RunOptions, host *sysinfo.Host, p *exp.Params) error {
	if o.CPUs == "" {
		return nil
	}
	cpus, err := sysinfo.ParseCPUList(o.CPUs)
	if err != nil {
		return usagef("--cpus %q: %v; online CPUs are %s", o.CPUs, err, sysinfo.FormatCPUList(host.OnlineCPUs))
	}
	if err := host.ValidateCPUs(cpus); err != nil {
		return usagef("--cpus %s: %v", o.CPUs, err)
	}
	allowed, _ := measure.Affinity()
	in := map[int]bool{}
	for _, c := range allowed {
		in[c] = true
	}
	for _, c := range cpus {
		if len(allowed) > 0 && !in[c] {
			return usagef("--cpus %s: CPU %d is online but not in ctxlab's allowed set %s (taskset or cgroup cpuset)", o.CPUs, c, sysinfo.FormatCPUList(allowed))
		}
	}
	p.CPUs, p.CPUsGiven = cpus, true
	return nil
}

// listParams sets p's lists from --gomaxprocs, --workers and --hogs.
func listParams(o *RunOptions, p *exp.Params) error {
	var err error
	if o.GOMAXPROCS != "" {
		if p.GOMAXPROCS, err = intList("--gomaxprocs", o.GOMAXPROCS, 1, maxGOMAXPROCS); err != nil {
			return err
		}
	}
	if o.Workers != "" {
		if p.Workers, err = intList("--workers", o.Workers, 1, maxWorkers); err != nil {
			return err
		}
	}
	if o.Hogs != "" {
		if p.Hogs, err = intList("--hogs", o.Hogs, 0, maxHogs); err != nil {
			return err
		}
	}
	return nil
}

// setValues reads --set key=value, each key once.
func setValues(set []string) (map[string]string, error) {
	given := map[string]string{}
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--set %q: want key=value", kv)
		}
		if prev, dup := given[k]; dup {
			return nil, usagef("--set %s given twice (%s=%s, then %s=%s): give each option once", k, k, prev, k, v)
		}
		given[k] = v
	}
	return given, nil
}

// runConfig is the suite's runner config with --reps, --benchtime and
// --timeout checked and applied.
func runConfig(o *RunOptions, suite string) (runner.Config, error) {
	cfg := runner.ForSuite(suite)
	if o.changed("reps") {
		if o.Reps < 1 || o.Reps > maxReps {
			return cfg, outOfRange("--reps", o.Reps, intRange(1, maxReps))
		}
		cfg.Reps = o.Reps
	}
	if o.changed("benchtime") {
		if o.BenchTime < minBenchTime || o.BenchTime > maxBenchTime {
			return cfg, outOfRange("--benchtime", o.BenchTime, durRange(minBenchTime, maxBenchTime))
		}
		cfg.BenchTime = o.BenchTime
	}
	if o.changed("budget") {
		if o.Budget < 0 || o.Budget > maxBudget {
			return cfg, outOfRange("--budget", o.Budget, durRange(0, maxBudget))
		}
		cfg.PairBudget, cfg.NoPairs = o.Budget, o.Budget == 0
	}
	if o.Timeout < minTimeout || o.Timeout > maxTimeout {
		return cfg, outOfRange("--timeout", o.Timeout, durRange(minTimeout, maxTimeout))
	}
	cfg.Timeout = o.Timeout
	return cfg, nil
}

func validFormat(f string) bool {
	for _, x := range report.Formats {
		if x == f {
			return true
		}
	}
	return false
}

// maxListLen bounds every list flag: each value is at least one arm.
const maxListLen = 64

// intList parses "1,2,4" with every value in [lo, hi] and at most
// maxListLen values, counted before anything is parsed.
func intList(flag, s string, lo, hi int) ([]int, error) {
	if n := strings.Count(s, ",") + 1; n > maxListLen {
		return nil, usagef("%s: %d values; at most %d, each %d..%d", flag, n, maxListLen, lo, hi)
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, usagef("%s %q: %q is not a whole number; want a list like 1,2,4 with values %d..%d", flag, s, part, lo, hi)
		}
		if n < lo || n > hi {
			return nil, outOfRange(flag, n, intRange(lo, hi))
		}
		out = append(out, n)
	}
	return out, nil
}

// runSuite validates, measures, stores and prints.
func runSuite(ctx context.Context, o *RunOptions, args []string) error {
	host := sysinfo.Detect()
	pl, err := validate(o, args, host)
	if err != nil {
		return err
	}
	if err := precheckStore(ctx, o); err != nil {
		return err
	}
	out, err := openOutput("-o", o.Output, o.DB, o.Stdout)
	if err != nil {
		return err
	}
	defer out.close()
	// Only a valid request with a CPython arm starts Python (to ask the
	// interpreter what it is, and whether --set py-call imports), and
	// SIGINT stops it. A new history is made only after it answered, so a
	// refusal here leaves none behind.
	if err := exp.Resolve(ctx, pl.sel); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &UsageError{err}
	}
	if err := checkStore(ctx, o); err != nil {
		return err
	}
	pl.cfg.ClockCost = measure.ClockCost()
	syscallNs, syscallPathNs := measure.SyscallPath()
	if f, ok := o.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		pl.cfg.Progress, pl.cfg.ProgressWidth = o.Stderr, termWidth(o.Stderr)
	}
	run := &result.Run{
		Schema: result.SchemaVersion, ID: newRunID(), Time: time.Now().UTC(),
		Version: version(), GoVersion: runtime.Version(), CommandLine: o.CommandLine,
		Suite: pl.params.Suite, Env: host.Env, ClockCostNs: pl.cfg.ClockCost,
		SyscallNs: syscallNs, SyscallPathNs: syscallPathNs,
	}
	if len(args) > 0 {
		run.Suite = "custom"
	}
	run.Env.Harness = lastHarness(ctx, o.DB, host.Env.Hostname)
	run.Warnings = envWarnings(host)
	arms, exps, interrupted := runner.Run(ctx, pl.cfg, pl.sel)
	// Counters are probed after the arms, not before: probing them (on a
	// throwaway thread) just before an arm slowed its thread round trips
	// by 0.7-1.6% (docs/harness.md), and no arm needs
	// the probe's answer.
	run.Env.Counters = probeCounters()
	run.Arms, run.Experiments, run.Interrupted = arms, exps, interrupted
	harnessNotes(run)
	saveErr := saveRun(ctx, o, run)
	stored := !o.NoStore && !run.Interrupted && saveErr == nil
	if err := out.write(func(w io.Writer) error { return writeRun(w, run, o.Format, o.Detail, stored) }); err != nil {
		return errors.Join(saveErr, err)
	}
	if interrupted {
		return interruptedErr(o.Output)
	}
	return saveErr
}

// termWidth is w's width in columns when w is a terminal, else 0: the
// verdict is laid out for it, and long lines are wrapped at spaces there
// rather than cut mid-word by the terminal.
// onScreen runs print with w wrapped at the terminal's width
// (textcol.LineWrapper), so no line a person reads there is cut by the
// terminal; off a terminal it passes everything on as it is.
func onScreen(w io.Writer, print func(io.Writer) error) error {
	lw := textcol.NewLineWrapper(w, termWidth(w))
	err := print(lw)
	if ferr := lw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// writeRun prints a finished run: in the table format the verdict alone
// (a suite's one screen, or a selection's compact tables) laid out for
// the terminal's width (report.VerdictWidth off a terminal), the tables
// too with --detail; other formats in full. stored says whether the
// history holds it, for the verdict's pointers.
func writeRun(w io.Writer, run *result.Run, format string, detail, stored bool) error {
	if (format == "table" || format == "") && !detail {
		width := termWidth(w)
		for _, l := range report.VerdictLines(run, stored, width) {
			for _, part := range textcol.Wrap(l, width) {
				if _, err := fmt.Fprintln(w, part); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return writeReport(w, run, format)
}

// writeReport writes run in format. The table format on a terminal has
// its long lines (checks, notes, findings) wrapped at spaces, as the
// verdict's are, rather than cut mid-word by the terminal.
func writeReport(w io.Writer, run *result.Run, format string) error {
	return writeReportWidth(w, run, format, termWidth(w))
}

// writeReportWidth is writeReport for a terminal width columns wide (≤ 0:
// not a terminal, nothing is wrapped).
func writeReportWidth(w io.Writer, run *result.Run, format string, width int) error {
	if run.Suite == selfcheck.Suite && (format == "table" || format == "") {
		lw := textcol.NewLineWrapper(w, width)
		writeSelfcheck(lw, run, width)
		return lw.Flush()
	}
	if width <= 0 || (format != "table" && format != "") {
		return report.Write(w, run, format)
	}
	var buf bytes.Buffer
	err := report.Write(&buf, run, format)
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		for _, part := range textcol.Wrap(l, width) {
			if _, werr := fmt.Fprintln(w, part); werr != nil {
				return werr
			}
		}
	}
	return err
}

// probeCounters tries every perf event on a throwaway OS thread: a thread
// that has had perf events keeps per-task perf state, and a measuring
// thread that inherited it (or the main thread, which never exits) ran a
// pipe round trip ~7% slower here. The probe thread exits afterwards.
func probeCounters() []result.CounterInfo {
	var out []result.CounterInfo
	t, err := mech.StartThread(nil)
	if err != nil {
		for _, ev := range measure.Events {
			out = append(out, result.CounterInfo{Name: ev.Name, Kind: ev.Kind, Unsupported: "not probed: " + err.Error()})
		}
		return out
	}
	defer t.Stop()
	t.Do(func() {
		for _, ev := range measure.Events {
			ok, why := measure.ProbeEvent(ev)
			out = append(out, result.CounterInfo{Name: ev.Name, Kind: ev.Kind, Supported: ok, Unsupported: why})
		}
	})
	return out
}

func envWarnings(h *sysinfo.Host) []string {
	var w []string
	if h.Hypervisor {
		w = append(w, "a VM: cross-CPU handoffs wait for a vCPU to wake; steal skews figures")
	}
	if h.Governor != "" && h.Governor != "performance" {
		w = append(w, fmt.Sprintf("CPU frequency governor is %q, not \"performance\": clock speed may vary between arms", h.Governor))
	}
	if h.CgoEnabled == "1" {
		w = append(w, "built with cgo: glibc registers every thread for rseq, which each OS switch then updates: thread and process handoffs read higher than with CGO_ENABLED=0 (5–7% on the VMs measured: docs/harness.md)")
	}
	switch {
	case strings.HasPrefix(h.CPUQuota, "unknown"):
		w = append(w, "the cgroup CPU quota is "+h.CPUQuota+": a quota's throttling, which adds tail latency, cannot be ruled out")
	case h.CPUQuota != "" && h.CPUQuota != "max" && !strings.HasPrefix(h.CPUQuota, "max "):
		w = append(w, "a cgroup CPU quota is set ("+h.CPUQuota+"): throttling can add tail latency")
	}
	return w
}

func newRunID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
