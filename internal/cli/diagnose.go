package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/pyprobe"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/vary"
	"github.com/ctxlab/ctxlab/internal/watch"
	"github.com/ctxlab/ctxlab/internal/wss"
)

// exitStatusError carries a command's exit status out through cli.Main,
// which returns it as ctxlab's own (diagnose exits as its command did).
type exitStatusError struct{ code int }

func (e *exitStatusError) Error() string { return fmt.Sprintf("command exited with status %d", e.code) }

// DiagnoseOptions are the flags of `ctxlab diagnose`.
type DiagnoseOptions struct {
	WatchOptions
	Args []string
	// PythonProbe is --python-probe: auto, on or off (docs/pyprobe.md).
	PythonProbe string
	pyProbe     pyprobe.Mode
	// PythonCalls is --python-probe-calls: the most thread hops a second
	// the probe times (0: every one, and every poll of every loop).
	PythonCalls int
	commandLine []string    // what the stored run records
	Vary        VaryOptions // --vary and its flags (vary.go)
}

func newDiagnoseCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &DiagnoseOptions{WatchOptions: WatchOptions{Stdout: stdout, Stderr: stderr}}
	c := &cobra.Command{
		Use:   "diagnose [flags] -- CMD [ARGS...]",
		Short: "run a command and print its switching profile and a reading when it exits",
		Long: `diagnose runs CMD (stdin, stdout and stderr passed through), samples it,
all its threads and its descendant processes every interval until it exits,
counts perf software events (context-switches, cpu-migrations, task-clock,
page-faults) and hardware ones where the machine offers them for the whole
run, and then prints — on stderr, like perf stat — the profile of its whole
life, the counters, its rusage and a reading. ctxlab exits with CMD's status
(130 when Ctrl-C or SIGTERM stopped it).

diagnose ends when CMD exits. Processes CMD started that are still running
then (a daemon, a job left in the background) are named in a note and ended
with it; nothing CMD starts outlives ctxlab, even one killed with SIGKILL
(its keeper ends the tree: docs/watch-diagnose.md).

The run is stored in the history as a diagnose run (--no-store, --db): its
figures, readings and price, and every JSON record --format json writes
(the CPython probe's included), for show, report and compare (two
diagnoses of a program, arm by arm).`,
		Example: `  ctxlab diagnose -- stress-ng --cpu 8 --timeout 3s
  ctxlab diagnose --by-name -- ./server --bench`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("diagnose needs a command to run: ctxlab diagnose [flags] -- COMMAND [ARGS…] (e.g. ctxlab diagnose -- python3 app.py)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if handled, err := varyDiagnose(cmd, o, args); handled {
				return err
			}
			if err := o.validateDisplay(); err != nil {
				return err
			}
			if o.Interval < minInterval || o.Interval > maxInterval {
				return outOfRange("--interval", o.Interval, durRange(minInterval, maxInterval))
			}
			if o.pyProbe, err = pyprobe.ParseMode(o.PythonProbe); err != nil {
				return usagef("%v", err)
			}
			if o.PythonCalls < 0 || o.PythonCalls > pyprobe.MaxCallsPerS {
				return outOfRange("--python-probe-calls", o.PythonCalls, fmt.Sprintf("0..%d (0: every call and poll)", pyprobe.MaxCallsPerS))
			}
			if o.Vary.NoStore { // --db is read for the price only; else runDiagnose checks it as a store
				if err := o.checkDB(cmd.Context()); err != nil {
					return err
				}
			}
			o.Args = args
			o.commandLine = commandLine(cmd, &o.Vary, args)
			return runDiagnose(cmd.Context(), o)
		},
	}
	c.Flags().SetInterspersed(false) // flags after CMD belong to CMD
	c.Flags().DurationVar(&o.Interval, "interval", 200*time.Millisecond, "time between readings, "+durRange(minInterval, maxInterval))
	c.Flags().StringVar(&o.PythonProbe, "python-probe", "auto", "time a CPython program from inside: loop lag, thread hops, the GIL (auto: when CMD is a CPython interpreter or a script for one; on: the same, and a note saying why not when it is not; off)")
	c.Flags().IntVar(&o.PythonCalls, "python-probe-calls", pyprobe.CallsPerS, fmt.Sprintf("the most thread hops a second the CPython probe times, 0..%d; above it, or above %d polls a second of a loop, it times them in windows and only counts the rest, so counts stay exact (0: every call and poll timed, at several µs a call)", pyprobe.MaxCallsPerS, pyprobe.PollsPerS))
	addDisplayFlags(c, &o.WatchOptions)
	addVaryFlags(c, &o.Vary)
	return c
}

// CounterRecord is the JSON line for one perf counter of a diagnose run.
type CounterRecord struct {
	Kind        string  `json:"kind"` // counter
	Name        string  `json:"name"`
	Type        string  `json:"type"` // software, hardware
	Value       *uint64 `json:"value"`
	Scaled      bool    `json:"scaled,omitempty"`
	UserOnly    bool    `json:"user_only,omitempty"`
	Unsupported string  `json:"unsupported,omitempty"`
}

// RusageRecord is the JSON line for the command's rusage from wait4.
type RusageRecord struct {
	Kind        string  `json:"kind"` // rusage
	Voluntary   int64   `json:"voluntary"`
	Involuntary int64   `json:"involuntary"`
	UserUs      int64   `json:"user_us"`
	SysUs       int64   `json:"sys_us"`
	MinorFaults int64   `json:"minor_faults"`
	MaxRSSKiB   int64   `json:"max_rss_kib"`
	ExitStatus  int     `json:"exit_status"`
	WallS       float64 `json:"wall_s"`
}

// readCounters turns the counters' readings, once the command has
// exited, into their JSON lines (measure.TreeCounters.Read holds the
// unsupported rule).
func readCounters(rs []measure.TreeReading) []CounterRecord {
	var out []CounterRecord
	for _, r := range rs {
		out = append(out, CounterRecord{Kind: "counter", Name: r.Event.Name, Type: r.Event.Kind, Value: r.Value, Scaled: r.Scaled,
			UserOnly: r.UserOnly, Unsupported: r.Unsupported})
	}
	return out
}

// runDiagnose runs the command once, prints what it measured, prices it
// and stores it as a diagnose run.
func runDiagnose(ctx context.Context, o *DiagnoseOptions) error {
	path, err := exec.LookPath(o.Args[0])
	if err != nil {
		return usagef("command %q: %v", o.Args[0], err)
	}
	hist := &RunOptions{DB: o.DB, NoStore: o.Vary.NoStore, Stdout: o.Stdout, Stderr: o.Stderr}
	if err := checkStore(ctx, hist); err != nil {
		return err
	}
	host := sysinfo.Detect()
	r, err := diagnoseOnce(ctx, o, path, host)
	if err != nil {
		return err
	}
	if err := printDiagnosis(o, r); err != nil {
		return err
	}
	if err := writePyProbe(o, r.py); err != nil {
		return err
	}
	// The price, from rusage: it counts every switch of the command and its
	// waited-for children, which sampling partly misses.
	ru := r.ru
	seen := price.Seen{Seconds: ru.WallS, Vol: uint64(ru.Voluntary), Invol: uint64(ru.Involuntary), RSSBytes: ru.MaxRSSKiB * 1024,
		CPUNs: uint64(max(ru.UserUs+ru.SysUs, 0)) * 1000, HasCPU: ru.UserUs+ru.SysUs > 0}
	o.noCalibrate = r.interrupted
	d := newDisplay(&o.WatchOptions, o.Stderr, "")
	out := d.prose()
	pr, err := o.wssPrice(ctx, out, d.json, seen, r.wss, counterCheck(r.recs)) // the working set, then the price (wss.go)
	if err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	run := r.run(o, host, pr)
	run.Interrupted = r.interrupted
	if err := saveRun(ctx, hist, run); err != nil {
		return err
	}
	if r.interrupted { // stopped by ctxlab: 130, whatever the signal made the command return
		return errInterrupted
	}
	if ru.ExitStatus != 0 {
		return &exitStatusError{ru.ExitStatus}
	}
	return nil
}

// diagnosed is one run of the command as diagnose measured it.
type diagnosed struct {
	sum         watch.Profile
	recs        []CounterRecord
	ru          RusageRecord
	note, left  string
	py          *pyprobe.Report
	wss         *wss.Reading // nil with --wss off
	sample      vary.Sample  // the same figures as one run of diagnose --vary
	began       time.Time
	interrupted bool
}

// diagnoseOnce runs the command as a grid of one point (vary.Command,
// through launch) with ctxlab's stdin, stdout and stderr, sampling it
// every interval until it exits, and reads everything; nothing it started
// outlives it.
func diagnoseOnce(ctx context.Context, o *DiagnoseOptions, path string, host *sysinfo.Host) (*diagnosed, error) {
	c := vary.Command{Args: o.Args, Env: os.Environ(), Interval: o.Interval, Source: measure.PerfTree{}, Events: measure.Events,
		Host: host, Root: procstat.DefaultRoot, Stdio: &vary.Stdio{In: os.Stdin, Out: o.Stdout, Err: o.Stderr}, WSS: o.wssOn()}
	probe, probeNote := preparePyProbe(ctx, o, &c, path)
	if probe != nil {
		defer probe.Close()
		c.Started = func(int) { probe.Started() }
	}
	r := &diagnosed{began: time.Now()}
	r.sample = c.Run(ctx, vary.Point{})
	if r.sample.PID == 0 {
		if ctx.Err() != nil {
			return nil, errInterrupted
		}
		return nil, errors.New(r.sample.Reason)
	}
	s := &r.sample
	r.interrupted = s.Status == result.StatusInterrupted
	r.sum = s.Profile
	r.wss = s.WSS // the working set (wss.go)
	r.recs = readCounters(s.Counters)
	r.ru = RusageRecord{Kind: "rusage", ExitStatus: s.ExitStatus, WallS: float64(s.WallNs) / 1e9,
		Voluntary: s.Rusage.Vol, Involuntary: s.Rusage.Invol, UserUs: s.Rusage.UserNs / 1e3, SysUs: s.Rusage.SysNs / 1e3,
		MinorFaults: s.Rusage.MinFlt, MaxRSSKiB: s.Rusage.MaxRSSKiB}
	if probeNote != "" {
		s.Notes = append(s.Notes, probeNote)
	}
	if s.Sampling != "" {
		s.Notes = append(s.Notes, "the command could not be sampled: "+s.Sampling)
	}
	r.note = strings.Join(s.Notes, "; ")
	r.left = vary.SelfCPUNote(s.SelfCPUNs, s.Rusage.UserNs+s.Rusage.SysNs, s.WallNs, s.Held)
	r.py = finishPyProbe(probe, &r.sum)
	return r, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// coverage compares what /proc sampling saw with what rusage counted.
func coverage(sum watch.Profile, ru RusageRecord) string {
	seen := sum.Total.Switches()
	all := uint64(ru.Voluntary + ru.Involuntary)
	if all == 0 {
		return ""
	}
	return fmt.Sprintf("/proc sampling saw %d of the %d switches rusage counted for the command and its waited-for children (%.0f%%); "+
		"it misses each thread's last partial interval and processes shorter than an interval",
		seen, all, 100*float64(seen)/float64(all))
}

// noteRecord is the JSON line of one of diagnose's notes.
type noteRecord struct {
	Kind string `json:"kind"` // note
	Text string `json:"text"`
}

// notes are the diagnosis's notes: how much of the switches sampling saw,
// what the run noted, and ctxlab's own share of the CPU.
func (r *diagnosed) notes() []string {
	var out []string
	for _, n := range []string{coverage(r.sum, r.ru), r.note, r.left} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// jsonRecords are the diagnosis's own records, as --format json writes
// them: the whole run's profile as shown (--by-name, --sort, --top) with
// its readings, the counters, the notes and the rusage.
func (r *diagnosed) jsonRecords(o *DiagnoseOptions) []any {
	q, readings, _ := (&display{o: &o.WatchOptions}).shape(r.sum)
	out := watch.Records(q, "summary", readings)
	for _, c := range r.recs {
		out = append(out, c)
	}
	for _, n := range r.notes() {
		out = append(out, noteRecord{Kind: "note", Text: n})
	}
	return append(out, r.ru)
}

// writeJSONLines writes records one JSON object a line, control
// characters from outside escaped.
func writeJSONLines(w io.Writer, records []any) error {
	enc := json.NewEncoder(termsafe.JSON(w))
	for _, rec := range records {
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}

// printDiagnosis writes the diagnosis: its JSON records, or the profile's
// table, the counters, the rusage and the notes for a person.
func printDiagnosis(o *DiagnoseOptions, r *diagnosed) error {
	sum, recs, ru := r.sum, r.recs, r.ru
	d := newDisplay(&o.WatchOptions, o.Stderr, "")
	if d.json {
		return writeJSONLines(o.Stderr, r.jsonRecords(o))
	}
	title := fmt.Sprintf("ctxlab diagnose: %s, whole run (exit status %d, %.2f s)", termsafe.String(o.Args[0]), ru.ExitStatus, ru.WallS)
	if err := d.summary(sum, title); err != nil {
		return err
	}
	w := d.prose()
	defer w.Flush()
	fmt.Fprintln(w, "counters for the whole run (perf_event_open, inherited by every thread and child):")
	for _, r := range recs {
		switch {
		case r.Value != nil && r.Name == "task-clock":
			fmt.Fprintf(w, "  %-18s %14s\n", r.Name, result.FormatNs(float64(*r.Value)))
		case r.Value != nil:
			extra := ""
			if r.UserOnly {
				extra += " (user mode only)"
			}
			if r.Scaled {
				extra += " (scaled: multiplexed)"
			}
			fmt.Fprintf(w, "  %-18s %14d%s\n", r.Name, *r.Value, extra)
		default:
			fmt.Fprintf(w, "  %-18s %14s  %s\n", r.Name, "unsupported:", r.Unsupported)
		}
	}
	fmt.Fprintf(w, "rusage (the command and its waited-for children): %d voluntary, %d involuntary switches; user %s, sys %s; %d minor faults; max RSS %d KiB\n",
		ru.Voluntary, ru.Involuntary, result.FormatNs(float64(ru.UserUs)*1e3), result.FormatNs(float64(ru.SysUs)*1e3), ru.MinorFaults, ru.MaxRSSKiB)
	for _, n := range r.notes() {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// run is the diagnosis as a stored diagnose run: one arm, "diagnose",
// with the figures of one run of diagnose --vary (show, report, compare
// against another diagnose of the program), the readings and the price
// as its findings, and every JSON record --format json writes.
func (r *diagnosed) run(o *DiagnoseOptions, host *sysinfo.Host, pr *price.Price) *result.Run {
	a := vary.Single(o.Args, r.sample, o.Interval, vary.Cost{Why: "plain diagnose: the price is in the findings"}, host, host.Load1)
	arms := a.Arms()
	var findings []string
	for _, rd := range watch.Read(r.sum, 3) {
		findings = append(findings, rd.Subject+": "+rd.Text)
	}
	if r.py != nil {
		findings = append(findings, r.py.Findings()...)
	}
	if r.wss != nil {
		findings = append(findings, r.wss.Lines...)
	}
	if pr != nil {
		findings = append(findings, pr.Lines...)
	}
	run := &result.Run{
		Schema: result.SchemaVersion, ID: newRunID(), Time: r.began.UTC(), Version: version(), GoVersion: runtime.Version(),
		CommandLine: o.commandLine, Suite: result.SuiteDiagnose, Env: host.Env, Warnings: envWarnings(host), Arms: arms,
		Experiments: []result.Experiment{{Name: vary.Experiment, Op: arms[0].Op, Summary: strings.Join(o.Args, " "), Findings: findings}},
		Records:     r.records(o, pr),
	}
	run.Env.Counters = probeCounters()
	run.ClockCostNs = measure.ClockCost() // the clock that timed the command (time.Now), as every run states it
	return run
}

// records are the diagnosis as --format json writes it, whatever the
// format shown: its own records, the CPython probe's, the working set's
// and the price's, each encoded as the display encodes it. A record that
// cannot be encoded (a figure that is not a number) is left out.
func (r *diagnosed) records(o *DiagnoseOptions, pr *price.Price) []json.RawMessage {
	recs := r.jsonRecords(o)
	if r.py != nil {
		recs = append(recs, r.py.Records()...)
	}
	if r.wss != nil {
		recs = append(recs, r.wss)
	}
	if pr != nil {
		recs = append(recs, priceRecord{"price", *pr})
	}
	var out []json.RawMessage
	for _, rec := range recs {
		var b bytes.Buffer
		if writeJSONLines(&b, []any{rec}) == nil {
			out = append(out, json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))))
		}
	}
	return out
}
