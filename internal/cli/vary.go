package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/vary"
)

// VaryOptions are diagnose's flags for --vary: the user's command at each
// value of a name, side by side.
type VaryOptions struct {
	Vary       []string
	Reps       int
	Settle     time.Duration
	Timeout    time.Duration
	Work       string
	WorkFrom   string
	Output     string
	NoStore    bool
	ShowOutput bool
	flags      *pflag.FlagSet
	// source opens the perf counters; tests give a fake one.
	source measure.TreeSource
	// seed fixes the rounds' order (tests); 0: random.
	seed uint64
}

// Limits of the --vary flags, stated in their help.
const (
	// varyInterval is --vary's time between /proc readings: each reading
	// wakes ctxlab, which on a 2-vCPU machine preempts the command's
	// threads; at 200ms (diagnose's default) two threads on two CPUs read
	// ~14% more switches than perf stat counts for them, at 1s ~4%, within
	// the noise (docs/diagnose.md).
	varyInterval   = time.Second
	maxSettle      = time.Minute
	minVaryTimeout = time.Second
	maxVaryTimeout = 24 * time.Hour
)

// varyOnly are the flags that mean something with --vary only; the
// display flags watch shares mean nothing with it.
var (
	varyOnly     = []string{"reps", "settle", "timeout", "work", "work-from", "output", "show-output"}
	notWithVary  = []string{"top", "by-name", "sort"}
	varyFormats  = []string{"table", "json", "bench"}
	varyLongHelp = `
With --vary NAME=V1,V2[,…], diagnose runs CMD at each value instead of
once: {NAME} in CMD's arguments is replaced by the value and NAME=value is
set in its environment (so GOMAXPROCS, OMP_NUM_THREADS or the program's
own pool-size variable works as well as a flag). Several --vary make
a grid of at most 64 points. Each of --reps rounds runs every value once,
in a new shuffled order, --settle apart; each run is measured whole (wall
time, perf task-clock, switches, migrations, page faults and, where the
machine offers them, instructions, cycles, IPC, LLC and dTLB misses, for
every thread and child; voluntary and involuntary switches from rusage;
run-queue wait sampled from /proc). The command's output is kept, not
shown (--show-output shows it on stderr); its stdin is /dev/null.

The table of the values side by side and the reading go to stderr: per
value the median and min–max, noisy by run's rule; the split of the extra
CPU time over the first value into the direct part (Δ switches × this
host's measured cost of a switch, the one the verdict, budget and watch
give, and where it came from) and the rest, not in the switch path, explained by the hardware
counters or, without them, set beside user and system time, run-queue
wait, migrations and page faults;
and the decision: the best wall time (the best throughput with --work or
--work-from), significant or not by compare's statistics. --format json or
bench writes the run to stdout (or -o); it is stored in the history as a
diagnose run (--no-store, --db) for show, compare (compare RUN:T=2
RUN:T=32 sets two values side by side) and report. A value whose command
fails is reported with its exit status and not run again; the others go
on. Ctrl-C stops the run in flight, kills what it started, and prints the
runs that finished (not stored). Exit status: 0, 1 when a value failed,
130 when interrupted.`
	varyExample = `
  ctxlab diagnose --vary T=2,32 -- ctxlab workload --threads {T} --ws 8MiB
  ctxlab diagnose --vary GOMAXPROCS=1,2,4 --reps 5 --format bench -- ./server --bench`
)

// addVaryFlags adds --vary and its flags to diagnose.
func addVaryFlags(c *cobra.Command, o *VaryOptions) {
	f := c.Flags()
	o.flags = f
	f.StringArrayVar(&o.Vary, "vary", nil, fmt.Sprintf("run CMD at each value of `NAME=V1,V2,...`: {NAME} in its arguments, NAME in its environment; several --vary make a grid of %d..%d points; see docs/diagnose.md", vary.MinPoints, vary.MaxPoints))
	f.IntVar(&o.Reps, "reps", 3, "with --vary: runs per value, each round in a new shuffled order, "+intRange(1, maxReps))
	f.DurationVar(&o.Settle, "settle", 500*time.Millisecond, "with --vary: pause between runs, "+durRange(0, maxSettle))
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "with --vary: time limit of one run, "+durRange(minVaryTimeout, maxVaryTimeout))
	f.StringVar(&o.Work, "work", "", "with --vary: units of work one run does (e.g. 1e6), for figures per unit and throughput; 1e-9..1e15")
	f.StringVar(&o.WorkFrom, "work-from", "", "with --vary: a regular expression that finds a run's units of work in its stdout (the last match, its first group), e.g. 'elements: (\\d+)'")
	f.StringVarP(&o.Output, "output", "o", "", "with --vary: write the --format json or bench result (or the table) to this file instead of stdout")
	f.BoolVar(&o.NoStore, "no-store", false, "do not save the run in the history database")
	f.BoolVar(&o.ShowOutput, "show-output", false, "with --vary: show the command's stdout and stderr on stderr (they are kept, not shown)")
	if fl := f.Lookup("format"); fl != nil {
		fl.Usage += "; with --vary: table, json or bench"
	}
	if fl := f.Lookup("interval"); fl != nil {
		fl.Usage += "; with --vary 1s unless given (each reading preempts the command a little)"
	}
	if fl := f.Lookup("db"); fl != nil {
		fl.Usage += "; also where the run is stored"
	}
	c.Long += "\n" + varyLongHelp
	c.Example += varyExample
}

// varyDiagnose runs diagnose --vary when --vary is given (handled), and
// refuses --vary's own flags without it.
func varyDiagnose(cmd *cobra.Command, o *DiagnoseOptions, args []string) (handled bool, err error) {
	v := &o.Vary
	if len(v.Vary) == 0 {
		for _, name := range varyOnly {
			if v.flags != nil && v.flags.Changed(name) {
				return true, usagef("--%s needs --vary NAME=V1,V2: without it diagnose runs the command once", name)
			}
		}
		return false, nil
	}
	o.Args = args
	return true, runVary(cmd.Context(), cmd, o)
}

// varyPlan is a validated diagnose --vary: everything checked before
// anything runs.
type varyPlan struct {
	points  []vary.Point
	command vary.Command
	format  string
}

// validateVary checks every flag, the grid and the command at every
// point; a refusal names the bad value and the allowed range (exit 2).
func validateVary(o *DiagnoseOptions) (*varyPlan, error) {
	v := &o.Vary
	for _, name := range notWithVary {
		if v.flags != nil && v.flags.Changed(name) {
			return nil, usagef("--%s has no effect with --vary (it orders and folds the threads of one run's profile)", name)
		}
	}
	format := o.Format
	if format == "auto" {
		format = "table"
	}
	if err := oneOf("--format", format, varyFormats); err != nil {
		return nil, usagef("with --vary, %v", err)
	}
	if v.flags != nil && !v.flags.Changed("interval") {
		o.Interval = varyInterval
	}
	if o.Interval < minInterval || o.Interval > maxInterval {
		return nil, outOfRange("--interval", o.Interval, durRange(minInterval, maxInterval))
	}
	var axes []vary.Axis
	for _, s := range v.Vary {
		a, err := vary.ParseAxis(s)
		if err != nil {
			return nil, &UsageError{err}
		}
		axes = append(axes, a)
	}
	points, err := vary.Grid(axes)
	if err != nil {
		return nil, &UsageError{err}
	}
	if v.Reps < 1 || v.Reps > maxReps {
		return nil, outOfRange("--reps", v.Reps, intRange(1, maxReps))
	}
	if v.Settle < 0 || v.Settle > maxSettle {
		return nil, outOfRange("--settle", v.Settle, durRange(0, maxSettle))
	}
	if v.Timeout < minVaryTimeout || v.Timeout > maxVaryTimeout {
		return nil, outOfRange("--timeout", v.Timeout, durRange(minVaryTimeout, maxVaryTimeout))
	}
	c := vary.Command{Args: o.Args, Env: os.Environ(), Interval: o.Interval, Timeout: v.Timeout,
		Source: v.source, Events: measure.Events, Root: procstat.DefaultRoot, WSS: o.wssOn()}
	if c.Source == nil {
		c.Source = measure.PerfTree{}
	}
	if v.Work != "" && v.WorkFrom != "" {
		return nil, usagef("--work and --work-from exclude each other: give the units of work, or where to read them")
	}
	if v.Work != "" {
		n, err := strconv.ParseFloat(v.Work, 64)
		if err != nil || !(n >= 1e-9 && n <= result.MaxCount) {
			return nil, usagef("--work %q: want a number of units of work per run in 1e-9..1e15, e.g. 1e6", v.Work)
		}
		c.Work = n
	}
	if v.WorkFrom != "" {
		re, err := regexp.Compile(v.WorkFrom)
		if err != nil {
			return nil, usagef("--work-from %q: not a regular expression: %v", v.WorkFrom, err)
		}
		c.WorkFrom = re
	}
	if v.ShowOutput {
		c.Show = o.Stderr
	}
	if err := checkOutput("-o", v.Output, o.DB); err != nil {
		return nil, err
	}
	if len(o.Args) == 0 {
		return nil, usagef("give the command to run after --: ctxlab diagnose --vary NAME=V1,V2 -- CMD ARGS…")
	}
	for _, p := range points {
		a := p.Expand(o.Args)
		if _, err := exec.LookPath(a[0]); err != nil {
			return nil, usagef("command %q at %s: %v", a[0], p.Label(), err)
		}
	}
	return &varyPlan{points: points, command: c, format: format}, nil
}

// runVary validates, runs the grid, analyses, prints, stores.
func runVary(ctx context.Context, cmd *cobra.Command, o *DiagnoseOptions) error {
	pl, err := validateVary(o)
	if err != nil {
		return err
	}
	v := &o.Vary
	hist := &RunOptions{DB: o.DB, NoStore: v.NoStore, Stdout: o.Stdout, Stderr: o.Stderr, Output: v.Output, Format: pl.format}
	if err := checkStore(ctx, hist); err != nil {
		return err
	}
	out, err := openOutput("-o", v.Output, o.DB, o.Stdout)
	if err != nil {
		return err
	}
	defer out.close()

	host := sysinfo.Detect()
	pl.command.Host = host
	began := time.Now().UTC()
	a := &vary.Analysis{Command: o.Args, Points: pl.points, Reps: v.Reps, Settle: v.Settle, Interval: o.Interval}
	switch {
	case v.Work != "":
		a.WorkFrom = "--work " + v.Work
	case v.WorkFrom != "":
		a.WorkFrom = "--work-from " + v.WorkFrom
	}
	a.Samples, a.Interrupted = runGrid(ctx, pl, v, o.Stderr)

	vary.Analyze(a, varyCost(ctx, o, a.Interrupted), host, host.Load1)
	run := varyRun(cmd, o, pl, a, host, began)
	if err := varyDisplay(o, a); err != nil {
		return err
	}
	saveErr := saveRun(ctx, hist, run)
	if v.Output != "" || pl.format != "table" {
		werr := out.write(func(w io.Writer) error {
			if pl.format == "table" {
				return a.Table(w, 0)
			}
			return report.Write(w, run, pl.format)
		})
		if werr != nil {
			return errors.Join(saveErr, werr)
		}
	}
	if a.Interrupted {
		return interruptedErr(v.Output)
	}
	if saveErr != nil {
		return saveErr
	}
	var failed []string
	for _, val := range a.Values {
		if !val.OK() {
			failed = append(failed, fmt.Sprintf("%s %s", val.Point.Label(), val.Reason))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the command failed at %s; the other values are above", strings.Join(failed, "; "))
	}
	return nil
}

// varyDisplay shows the values on stderr by the rule watch and diagnose
// follow: a table on a terminal, JSON lines redirected (--format auto), or
// as --format says (json; table; bench, the run on stdout, leaves stderr
// to auto's rule).
func varyDisplay(o *DiagnoseOptions, a *vary.Analysis) error {
	if o.Format == "json" || (o.Format != "table" && !isTerminal(o.Stderr)) {
		return a.WriteJSON(o.Stderr)
	}
	return a.Table(o.Stderr, termWidth(o.Stderr))
}

// varyCost is this host's cost per switch, the one price uses: from the
// history, else a 2-second calibration (none after Ctrl-C).
func varyCost(ctx context.Context, o *DiagnoseOptions, interrupted bool) vary.Cost {
	if !o.Price {
		return vary.Cost{Why: "--price=false"}
	}
	o.noCalibrate, o.wantCurve = interrupted, o.wssOn()
	if interrupted {
		ctx = context.WithoutCancel(ctx)
	}
	c, indirect, err := costRun(ctx, &o.WatchOptions)
	if err != nil {
		return vary.Cost{Why: err.Error()}
	}
	curve, why := o.wssCurve(ctx, indirect)
	return vary.Cost{Cost: c, OK: true, Curve: curve, CurveWhy: why}
}

// varyRun is the analysis as a stored run.
func varyRun(cmd *cobra.Command, o *DiagnoseOptions, pl *varyPlan, a *vary.Analysis, host *sysinfo.Host, began time.Time) *result.Run {
	arms := a.Arms()
	run := &result.Run{
		Schema: result.SchemaVersion, ID: newRunID(), Time: began, Version: version(), GoVersion: runtime.Version(),
		CommandLine: commandLine(cmd, &o.Vary, o.Args), Suite: result.SuiteDiagnose, Env: host.Env, Interrupted: a.Interrupted,
		Warnings: envWarnings(host), Arms: arms,
		Experiments: []result.Experiment{{Name: vary.Experiment, Op: arms[0].Op,
			Summary:  fmt.Sprintf("%s at %s", strings.Join(o.Args, " "), vary.Label(pl.points)),
			Findings: a.Reading(), Comparisons: a.Comparisons()}},
	}
	run.Env.Counters = probeCounters()
	run.ClockCostNs = measure.ClockCost() // the clock that timed the runs (time.Now), as every run states it
	return run
}

// runGrid runs the rounds: each a new shuffled order of the points, a
// settle pause between runs, a value that failed not run again. It stops
// at Ctrl-C with the runs that finished.
func runGrid(ctx context.Context, pl *varyPlan, v *VaryOptions, stderr io.Writer) ([]vary.Sample, bool) {
	seed := v.seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rounds := vary.Rounds(len(pl.points), v.Reps, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	var pr *runner.Progress
	if isTerminal(stderr) {
		pr = runner.NewProgress(stderr, termWidth(stderr), len(pl.points)*v.Reps)
	}
	defer pr.Done()
	failed := map[int]bool{}
	var samples []vary.Sample
	step := 0
	for r, order := range rounds {
		for _, pi := range order {
			step++
			if failed[pi] {
				continue
			}
			if step > 1 && v.Settle > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(v.Settle):
				}
			}
			if ctx.Err() != nil {
				return samples, true
			}
			pr.Step(step, fmt.Sprintf("%s, round %d of %d", pl.points[pi].Label(), r+1, v.Reps))
			s := pl.command.Run(ctx, pl.points[pi])
			s.Point, s.Round = pi, r
			samples = append(samples, s)
			if s.Status == result.StatusInterrupted || ctx.Err() != nil {
				return samples, true
			}
			if !s.OK() {
				failed[pi] = true
			}
		}
	}
	return samples, false
}

// commandLine is what the stored run records: ctxlab diagnose, the flags
// given, then the command.
func commandLine(cmd *cobra.Command, v *VaryOptions, args []string) []string {
	out := []string{"ctxlab", "diagnose"}
	for _, s := range v.Vary {
		out = append(out, "--vary="+s)
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "vary" {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return append(append(out, "--"), args...)
}

// valueRef is RUN:NAME=V, one value of a diagnose --vary run (compare).
var valueRef = regexp.MustCompile(`^(.*?):([A-Za-z_][A-Za-z0-9_]*=.*)$`)

// loadRunValue is loadRun that also takes RUN:NAME=V (RUN:T=2/N=4 in a
// grid): the run narrowed to that value, its arms named without it
// (vary.Select). A file of that very name is read as a file.
func loadRunValue(ctx context.Context, db, ref string, stderr io.Writer) (*result.Run, error) {
	m := valueRef.FindStringSubmatch(ref)
	if _, err := os.Stat(ref); m == nil || err == nil {
		return loadRunKind(ctx, db, ref, result.ExperimentRun, stderr)
	}
	run, err := loadRunKind(ctx, db, m[1], result.DiagnoseRun, stderr)
	if err != nil {
		return nil, err
	}
	r, err := vary.Select(run, m[2])
	if err != nil {
		return nil, &UsageError{err}
	}
	return r, nil
}
