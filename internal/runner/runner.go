// Package runner measures arms: it owns the clock, warm-up, repetitions,
// sampling, switch and migration counting, placement (GOMAXPROCS and CPU
// affinity), time limits and noise detection, as testing.B does for
// benchmarks. Experiments only do the work; reporters only print.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Config is how hard to measure.
type Config struct {
	Reps       int           // repetitions per arm
	BenchTime  time.Duration // target duration of one repetition
	WarmUp     time.Duration // warm-up before timing (rule 1)
	WarmUpOps  int           // …or this many ops, whichever comes first
	Timeout    time.Duration // per-arm limit
	MaxSamples int           // per-op latency samples kept per arm
	ClockCost  float64       // ns per timestamp, from measure.ClockCost
	Host       *sysinfo.Host
	// StartLoad is the 1-minute load average when the run started. It,
	// not the load before each arm, decides the "high load" noise reason:
	// ctxlab's own earlier arms (a 1 000-thread ring) raise the average for
	// a minute and must not make every later arm look noisy.
	StartLoad float64
	// Counters opens perf counters on every participating thread (--counters).
	Counters bool
	// Observe, if not nil, gets what the runner saw of each arm besides
	// its result (participants, whole-process switches): for tests.
	Observe func(Observation)
	// Progress, if not nil, gets a status line (arm i of n, elapsed,
	// estimate) rewritten in place as each arm starts: a terminal only.
	// ProgressWidth is that terminal's width in columns, which the line is
	// cut to (≤ 0: not known).
	Progress      io.Writer
	ProgressWidth int
	// PairBudget is how long a comparison measured side by side may take
	// rounds, adding more while its answer is undecided (0: 25 benchtimes).
	PairBudget time.Duration
	// NoPairs leaves the comparisons out (selfcheck, tests of one arm).
	NoPairs bool
}

// ForSuite returns the default Config for a suite.
func ForSuite(suite string) Config {
	c := Config{Reps: 5, BenchTime: 200 * time.Millisecond, WarmUp: 100 * time.Millisecond,
		WarmUpOps: 1 << 20, Timeout: 60 * time.Second, MaxSamples: 200000}
	switch suite {
	case exp.SuiteQuick:
		c.Reps, c.BenchTime, c.WarmUp = 3, 60*time.Millisecond, 30*time.Millisecond
		// The quick suite's six comparisons take about 3 s side by side on
		// a quiet 2-core machine; each may add rounds for at most 1 s.
		c.PairBudget = time.Second
	case exp.SuiteFull:
		c.BenchTime = 500 * time.Millisecond
	}
	return c
}

// Run measures every selected arm in order, then evaluates each
// experiment's checks. A cancelled ctx (SIGINT) stops after the current
// arm is torn down; what finished is returned with Interrupted set.
func Run(ctx context.Context, cfg Config, sel []exp.Selection) ([]result.Arm, []result.Experiment, bool) {
	var arms []result.Arm
	var exps []result.Experiment
	total := 0
	for _, s := range sel {
		total += len(s.Arms)
	}
	i := 0
	interrupted := false
	pr := NewProgress(cfg.Progress, cfg.ProgressWidth, total)
	defer pr.Done()
	for _, s := range sel {
		var mine []result.Arm
		for _, a := range s.Arms {
			i++
			if ctx.Err() != nil {
				interrupted = true
				break
			}
			pr.Step(i, a.Name)
			r := Arm(ctx, cfg, s.Spec, a)
			mine = append(mine, r)
			if ctx.Err() != nil {
				interrupted = true
				break
			}
		}
		e := result.Experiment{Name: s.Spec.Name, Summary: s.Spec.Summary, Op: s.Spec.Op}
		if d, ok := exp.Hook[exp.Deriver](s.Spec); ok {
			d.Derive(mine)
		}
		if s.Spec.Checks != nil {
			e.Checks = s.Spec.Checks(mine)
			for _, c := range e.Checks {
				if len(c.Arms) == 1 {
					for k := range mine {
						if mine[k].Name == c.Arms[0] {
							mine[k].Checks = append(mine[k].Checks, c)
						}
					}
				}
			}
		}
		if s.Spec.Findings != nil {
			e.Findings = s.Spec.Findings(mine)
		}
		if !interrupted && !cfg.NoPairs {
			e.Comparisons = comparePairs(ctx, cfg, s.Spec, s.Arms, mine)
		}
		arms = append(arms, mine...)
		exps = append(exps, e)
		if interrupted {
			break
		}
	}
	return arms, exps, interrupted
}

// Arm measures one arm; it never returns an error: failures, timeouts and
// unsupported arms are results with a status and a reason. Every result
// records how long the arm took, set-up and warm-up included. An arm that
// opens no perf counters may first wait up to measure.PerfSettle
// (settlePerf); that wait is not in the arm's duration, nor its limit.
func Arm(ctx context.Context, cfg Config, spec *exp.Spec, a exp.Arm) result.Arm {
	var waited time.Duration
	if a.Unsupported == "" && !cfg.Counters && !a.Counters {
		waited = settlePerf(ctx)
	}
	t0 := time.Now()
	r := arm(ctx, cfg, spec, a)
	if waited > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("started %s late: the kernel's perf hooks, on since an earlier arm's counters closed, had to go off first",
			result.FormatNs(float64(waited))))
	}
	if a.Unsupported == "" { // listed, not run
		r.DurationNs = int64(time.Since(t0))
	}
	return r
}

// settlePerf waits, before an arm that opens no perf counters, until the
// kernel has switched off the scheduler hooks that ctxlab's own last
// counters turned on (measure.PerfSettle), so the arm does not pay for
// them: a cachecost arm (which asks for counters) followed by a pingpong
// arm, say. An arm with counters pays the hooks for its own anyway. Under
// --counters no arm waits, though CPython and gauge arms open none (only
// the runner's own loop opens them): which an arm is shows only once it is
// set up, and a wait there would count against the arm's limit. It
// returns early when ctx is done, and says how long it waited.
func settlePerf(ctx context.Context) time.Duration {
	left := measure.PerfSettleLeft()
	if left <= 0 {
		return 0
	}
	t0 := time.Now()
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return time.Since(t0)
}

func arm(ctx context.Context, cfg Config, spec *exp.Spec, a exp.Arm) result.Arm {
	r := result.Arm{
		Name: a.Name, Experiment: spec.Name, Substrate: a.Substrate, Mechanism: a.Mechanism,
		Params: a.Params, Op: a.Op, Unit: a.Unit, GOMAXPROCS: a.GOMAXPROCS, Placement: a.Placement,
		CPUs: a.CPUs, Status: result.StatusOK,
	}
	if r.Op == "" {
		r.Op = spec.Op
	}
	if r.Unit == "" {
		r.Unit = "ns/op"
	}
	if r.GOMAXPROCS == 0 {
		r.GOMAXPROCS = runtime.GOMAXPROCS(0)
	}
	if a.Unsupported != "" {
		r.Status, r.Reason = result.StatusUnsupported, a.Unsupported
		return r
	}
	reps := cfg.Reps
	if a.Reps > 0 {
		reps = a.Reps
	}

	unplace, err := place(&r, a.CPUs)
	defer unplace()
	if err != nil {
		r.Status, r.Reason = result.StatusFailed, err.Error()
		return r
	}

	before := sysinfo.Sample(cfg.Host)
	limit := cfg.Timeout
	if a.Timeout > 0 && a.Timeout < limit {
		limit = a.Timeout
	}
	actx, cancel := withArmLimit(ctx, limit)
	defer cancel()

	bench, err := open(actx, a)
	if err != nil {
		return setupFailed(r, ctx, actx, limit, err)
	}
	switch b := bench.(type) {
	case exp.Loop:
		r = loop(ctx, actx, cfg, a, b, r, reps, limit, before)
	case exp.SelfTimed:
		r = selfTimed(ctx, actx, cfg, b, r, reps, limit, before)
	case exp.Gauge:
		r = gauge(ctx, actx, cfg, b, r, reps, limit, before)
	default:
		bench.Close()
		r.Status, r.Reason = result.StatusFailed, fmt.Sprintf("setup: %T is not an exp.Loop, exp.SelfTimed or exp.Gauge bench", bench)
		return r
	}
	if got := runtime.GOMAXPROCS(0); got != r.GOMAXPROCS {
		addReasons(&r.Noise, []string{fmt.Sprintf("GOMAXPROCS was %d when the arm ended, not its %d: the figure may not be the arm's", got, r.GOMAXPROCS)})
	}
	return r
}

// place sets GOMAXPROCS and the process's CPU mask for the arm's life,
// and returns what puts them back. Setting GOMAXPROCS, even to its current
// value, also stops Go (1.25 on) from resizing it to the CPU mask: once
// PinProcess has confined the harness to the CPUs the workers leave,
// sysmon would otherwise cut GOMAXPROCS to their count within a second,
// and two locked threads at GOMAXPROCS=1 queue for the one P at every
// runtime-aware wait (a plain eventfd ping-pong, pinned so, went from 7.2
// to 155–226 µs a round trip). The arm is flagged if it did not hold.
func place(r *result.Arm, cpus []int) (undo func(), err error) {
	prevProcs := runtime.GOMAXPROCS(r.GOMAXPROCS)
	undo = func() { runtime.GOMAXPROCS(prevProcs) }
	if len(cpus) == 0 {
		return undo, nil
	}
	if prevMask, err := measure.Affinity(); err == nil {
		undo = func() { measure.PinProcess(prevMask); runtime.GOMAXPROCS(prevProcs) }
	}
	return undo, measure.PinProcess(cpus)
}

// setupFailed is the result of an arm whose set-up (Open) returned err.
func setupFailed(r result.Arm, ctx, actx context.Context, limit time.Duration, err error) result.Arm {
	switch {
	case ctx.Err() != nil:
		// Ctrl-C during set-up: the run was interrupted, not the arm
		// broken (open closes whatever the set-up still brings up).
		r.Status, r.Reason = result.StatusInterrupted, "interrupted during setup"
	case actx.Err() != nil:
		r.Status, r.Reason = result.StatusTimedOut, fmt.Sprintf("setup did not finish within %v", limit)
	case errors.Is(err, exp.ErrSkipped):
		r.Status, r.Reason = result.StatusSkipped, err.Error()
	case errors.Is(err, exp.ErrUnsupported):
		r.Status, r.Reason = result.StatusUnsupported, "setup: "+err.Error()
	default:
		r.Status, r.Reason = result.StatusFailed, "setup: "+err.Error()
	}
	return r
}

// Observation is what the runner saw of one arm beyond its result, for
// tests that hold the core to its promises (Config.Observe).
type Observation struct {
	Arm          string
	Participants exp.Participants
	// Switches are the participants' switches over the timed repetitions;
	// WholeSwitches are ctxlab's own (getrusage RUSAGE_SELF) plus every
	// thread of the declared children over the same repetitions.
	Switches, WholeSwitches int64
	// CounterTIDs are the threads perf counters were opened on (nil
	// without counters).
	CounterTIDs []int
	// RepWallNs is each timed repetition's wall time.
	RepWallNs []int64
}

// closeOnce returns a Close for b that calls it once and then repeats its
// answer: the runner closes a stuck arm's bench early, to unblock it, and
// again as it tears the arm down, and a bench need not expect two calls.
func closeOnce(b exp.Bench) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = b.Close() })
		return err
	}
}

// endStatus says how an arm ended: interrupted (the run's context),
// timed out (the arm's limit), or what its error says (skipped,
// unsupported, failed). Nothing is set when it ran to the end.
func endStatus(r *result.Arm, ctx, actx context.Context, limit time.Duration, err error) {
	switch {
	case ctx.Err() != nil:
		r.Status, r.Reason = result.StatusInterrupted, "interrupted"
	case actx.Err() != nil:
		r.Status, r.Reason = result.StatusTimedOut, fmt.Sprintf("did not finish within %v", limit)
	case errors.Is(err, exp.ErrSkipped):
		r.Status, r.Reason = result.StatusSkipped, err.Error()
	case errors.Is(err, exp.ErrUnsupported):
		r.Status, r.Reason = result.StatusUnsupported, err.Error()
	case err != nil:
		r.Status, r.Reason = result.StatusFailed, err.Error()
	}
}

func addReasons(n *result.Noise, reasons []string) {
	if len(reasons) == 0 {
		return
	}
	n.Reasons = append(n.Reasons, reasons...)
	sort.Strings(n.Reasons)
	n.Noisy = true
}

var selfPID = pid()

// fill summarises the repetition means and the sampled latencies.
func fill(r *result.Arm, cfg Config, means []float64, opsPerRep int, s *measure.Sampler) {
	r.Ops = int64(opsPerRep)
	r.RepMeans = means
	sum := measure.Summarize(means)
	r.Median, r.Min, r.Max = sum.Median, sum.Min, sum.Max
	if s != nil && s.Len() > 0 {
		sorted := s.Sorted()
		p := &result.Percentiles{
			Samples: int64(len(sorted)),
			P50:     float64(measure.Quantile(sorted, 0.50)),
			P90:     float64(measure.Quantile(sorted, 0.90)),
			P95:     float64(measure.Quantile(sorted, 0.95)),
			P99:     float64(measure.Quantile(sorted, 0.99)),
			P999:    float64(measure.Quantile(sorted, 0.999)),
			Max:     float64(sorted[len(sorted)-1]),
		}
		p.NearClock = p.P50 < 10*cfg.ClockCost
		r.Percentiles = p
		for _, b := range measure.LogBuckets(sorted) {
			r.Histogram = append(r.Histogram, result.Bucket{LowNs: float64(b.Low), HighNs: float64(b.High), Count: b.Count})
		}
		if s.Every() > 1 {
			r.Notes = append(r.Notes, fmt.Sprintf("percentiles from every %d%s op (%d samples)", s.Every(), ordinal(s.Every()), len(sorted)))
		}
	}
}

func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}

// Noise thresholds (SPEC §2 rule 8).
const (
	MaxSpread   = 1.25 // max/min of repetition means
	MaxStealPct = 5.0  // % of CPU time stolen by the hypervisor during the arm
)

// Noise is the one rule that flags an arm noisy (SPEC §2 rule 8): its
// repetitions spread over MaxSpread, the hypervisor stole more than
// MaxStealPct of the CPU between before and after, the load average was
// high when the run started, or a CPU quota throttled it. diagnose --vary
// flags each value by it too.
func Noise(r result.Arm, before, after sysinfo.Noise, h *sysinfo.Host, startLoad float64) result.Noise {
	n := result.Noise{Load1Before: before.Load1, Load1After: after.Load1}
	if r.Min > 0 {
		n.Spread = r.Max / r.Min
	}
	if dt := after.Total - before.Total; dt > 0 {
		n.StealPct = 100 * (after.Steal - before.Steal) / dt
	}
	// A cgroup file that could be read before but not after (or a counter
	// reset by a cgroup move) would make a negative count, which no reader
	// accepts (result.Validate): count only what grew.
	n.Throttled = max(after.Throttled-before.Throttled, 0)
	n.ThrottledUs = max(after.ThrottledUs-before.ThrottledUs, 0)
	if len(r.RepMeans) > 1 && n.Spread > MaxSpread {
		n.Reasons = append(n.Reasons, fmt.Sprintf("repetitions spread %.2fx (max/min > %.2f)", n.Spread, MaxSpread))
	}
	if n.StealPct > MaxStealPct {
		n.Reasons = append(n.Reasons, fmt.Sprintf("hypervisor stole %.1f%% of CPU time", n.StealPct))
	}
	cpus := 1
	if h != nil && len(h.OnlineCPUs) > 0 {
		cpus = len(h.OnlineCPUs)
	}
	if startLoad > 1.5*float64(cpus) {
		n.Reasons = append(n.Reasons, fmt.Sprintf("load average %.1f on %d CPUs when the run started", startLoad, cpus))
	}
	if n.Throttled > 0 {
		n.Reasons = append(n.Reasons, fmt.Sprintf("cgroup CPU quota throttled %d periods (%d µs)", n.Throttled, n.ThrottledUs))
	}
	sort.Strings(n.Reasons)
	n.Noisy = len(n.Reasons) > 0
	return n
}

// Describe is a one-line description of a config for logs.
func (c Config) Describe() string {
	return strings.TrimSpace(fmt.Sprintf("%d reps × %v, warm-up %v, timeout %v", c.Reps, c.BenchTime, c.WarmUp, c.Timeout))
}

// open sets the arm up under the arm's time limit: a setup that hangs (a
// child that never answers) is abandoned when ctx ends, and whatever it
// opens later is closed as soon as it returns.
func open(ctx context.Context, a exp.Arm) (exp.Bench, error) {
	type opened struct {
		b   exp.Bench
		err error
	}
	o, gone := await(ctx, func() opened {
		b, err := a.Open(ctx)
		return opened{b, err}
	}, nil, 0, func(o opened) {
		if o.err == nil && o.b != nil {
			o.b.Close()
		}
	})
	if gone {
		return nil, ctx.Err()
	}
	return o.b, o.err
}
