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
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Config is how hard to measure.
type Config struct {
	Reps       int           // repetitions per arm (SPEC §2 rule 2)
	BenchTime  time.Duration // target duration of one repetition
	WarmUp     time.Duration // warm-up before timing (rule 1)
	WarmUpOps  int           // …or this many ops, whichever comes first
	Timeout    time.Duration // per-arm limit (SPEC §3)
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
	// Progress, if not nil, gets a status line (arm i of n, elapsed,
	// estimate) rewritten in place as each arm starts: a terminal only.
	Progress io.Writer
}

// ForSuite returns the default Config for a suite.
func ForSuite(suite string) Config {
	c := Config{Reps: 5, BenchTime: 200 * time.Millisecond, WarmUp: 100 * time.Millisecond,
		WarmUpOps: 1 << 20, Timeout: 60 * time.Second, MaxSamples: 200000}
	switch suite {
	case exp.SuiteQuick:
		c.Reps, c.BenchTime, c.WarmUp = 3, 60*time.Millisecond, 30*time.Millisecond
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
	pr := newProgress(cfg.Progress, total)
	defer pr.done()
	for _, s := range sel {
		var mine []result.Arm
		for _, a := range s.Arms {
			i++
			if ctx.Err() != nil {
				interrupted = true
				break
			}
			pr.arm(i, a.Name)
			r := Arm(ctx, cfg, s.Spec, a)
			mine = append(mine, r)
			if ctx.Err() != nil {
				interrupted = true
				break
			}
		}
		e := result.Experiment{Name: s.Spec.Name, Summary: s.Spec.Summary, Op: s.Spec.Op}
		if s.Spec.Derive != nil {
			s.Spec.Derive(mine)
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
		arms = append(arms, mine...)
		exps = append(exps, e)
		if interrupted {
			break
		}
	}
	return arms, exps, interrupted
}

// counts is what the runner accumulates over the timed regions of an arm.
type counts struct {
	vol, invol           int64
	childVol, childInvol int64
	migrations           int64
	haveMigrations       bool
}

type snapshot struct {
	vol, invol           int64
	childVol, childInvol int64
	migr                 map[int]uint64 // tid -> se.nr_migrations, self and children
}

func takeSnapshot(children []int) snapshot {
	var s snapshot
	s.vol, s.invol, _ = measure.SelfSwitches()
	s.migr = map[int]uint64{}
	root := procstat.DefaultRoot
	pids := append([]int{selfPID}, children...)
	for k, pid := range pids {
		tasks, err := root.ReadTasks(pid)
		if err != nil {
			continue
		}
		for _, t := range tasks {
			if k > 0 {
				s.childVol += int64(t.Voluntary)
				s.childInvol += int64(t.Involuntary)
			}
			if t.HasSched {
				s.migr[t.TID] = t.Migrations
			}
		}
	}
	return s
}

// Arm measures one arm; it never returns an error: failures, timeouts and
// unsupported arms are results with a status and a reason.
func Arm(ctx context.Context, cfg Config, spec *exp.Spec, a exp.Arm) result.Arm {
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

	// Placement: GOMAXPROCS and the process's CPU mask for the arm's life.
	prevProcs := runtime.GOMAXPROCS(r.GOMAXPROCS)
	defer runtime.GOMAXPROCS(prevProcs)
	if len(a.CPUs) > 0 {
		prevMask, err := measure.Affinity()
		if err == nil {
			defer measure.PinProcess(prevMask)
		}
		if err := measure.PinProcess(a.CPUs); err != nil {
			r.Status, r.Reason = result.StatusFailed, err.Error()
			return r
		}
	}

	before := sysinfo.Sample(cfg.Host)
	limit := cfg.Timeout
	if a.Timeout > 0 && a.Timeout < limit {
		limit = a.Timeout
	}
	actx, cancel := withArmLimit(ctx, limit)
	defer cancel()
	if a.Direct != nil {
		return direct(ctx, actx, cfg, a, r, reps, before)
	}

	bench, err := open(actx, a)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			r.Status, r.Reason = result.StatusTimedOut, fmt.Sprintf("setup did not finish within %v", limit)
			return r
		}
		r.Status, r.Reason = result.StatusFailed, "setup: "+err.Error()
		if errors.Is(err, exp.ErrUnsupported) {
			r.Status = result.StatusUnsupported
		}
		return r
	}

	var c counts
	var children []int
	if ch, ok := bench.(exp.Children); ok {
		children = ch.Children()
	}
	var base snapshot
	snap := func(begin bool) {
		s := takeSnapshot(children)
		if begin {
			base = s
			return
		}
		c.vol += s.vol - base.vol
		c.invol += s.invol - base.invol
		c.childVol += s.childVol - base.childVol
		c.childInvol += s.childInvol - base.childInvol
		for tid, m := range s.migr {
			if m0, ok := base.migr[tid]; ok {
				c.migrations += int64(m - m0)
				c.haveMigrations = true
			}
		}
	}

	ac := openArmCounters(cfg, a, bench, children)
	defer ac.close()
	snap = ac.wrap(snap)

	var sampler *measure.Sampler
	var means []float64
	var opsPerRep int
	type outcome struct{ err error }
	done := make(chan outcome, 1)
	go func() {
		// Warm-up: grow n until the warm-up time or op count is reached,
		// which also estimates the op's cost for sizing the repetitions.
		n, ops := 1, 0
		var spent, lastElapsed int64
		lastN := 0
		warmStart := measure.Now()
		for {
			b := measure.NewB(actx, n, nil, nil)
			b.StartTimer()
			if err := bench.Run(b); err != nil {
				done <- outcome{fmt.Errorf("warm-up: %w", err)}
				return
			}
			b.StopTimer()
			ops += n
			spent += b.Elapsed()
			lastN, lastElapsed = n, b.Elapsed()
			if measure.Now()-warmStart >= int64(cfg.WarmUp) || ops >= cfg.WarmUpOps || actx.Err() != nil {
				break
			}
			n = growN(n, b.Elapsed(), cfg.WarmUp)
		}
		// The last (largest) warm-up batch estimates the op's cost best: the
		// first ones carry cold caches and lazy set-up.
		perOp := float64(spent) / float64(ops)
		if lastN > 0 && lastElapsed > 0 {
			perOp = float64(lastElapsed) / float64(lastN)
		}
		if perOp <= 0 {
			perOp = 1
		}
		opsPerRep = int(math.Max(1, math.Min(1e9, float64(cfg.BenchTime)/perOp)))
		// Timestamps cost more than the calibrated clock read around a
		// blocking op (measured: sampling every 6 µs pipe round trip added
		// 3–10% to the mean, every 10th op under 1%), so sample no more
		// often than every (2000 × clock / op)-th op: every op only from ~50 µs up.
		minEvery := int(math.Ceil(2000 * cfg.ClockCost / perOp))
		sampler = measure.NewSampler(reps*opsPerRep, cfg.MaxSamples, minEvery)
		for rep := 0; rep < reps; rep++ {
			if actx.Err() != nil {
				done <- outcome{actx.Err()}
				return
			}
			b := measure.NewB(actx, opsPerRep, sampler, snap)
			b.StartTimer()
			err := bench.Run(b)
			b.StopTimer()
			if err != nil {
				done <- outcome{err}
				return
			}
			means = append(means, float64(b.Elapsed())/float64(opsPerRep))
		}
		done <- outcome{nil}
	}()

	var out outcome
	abandoned := false
	select {
	case out = <-done:
	case <-actx.Done():
		// Unblock a stuck arm (starved partner, hung child), then give it a
		// moment to return what it has.
		bench.Close()
		select {
		case out = <-done:
		case <-time.After(5 * time.Second):
			abandoned = true
		}
	}
	if !abandoned {
		if err := bench.Close(); err != nil && out.err == nil {
			r.Notes = append(r.Notes, "teardown: "+err.Error())
		}
	}
	after := sysinfo.Sample(cfg.Host)

	switch {
	case ctx.Err() != nil:
		r.Status, r.Reason = result.StatusInterrupted, "interrupted"
	case actx.Err() != nil:
		r.Status, r.Reason = result.StatusTimedOut, fmt.Sprintf("did not finish within %v", limit)
		if abandoned {
			r.Reason += "; a worker did not stop and was abandoned"
		}
	case out.err != nil:
		r.Status, r.Reason = result.StatusFailed, out.err.Error()
	}
	if len(means) == 0 && (sampler == nil || sampler.Len() == 0) {
		return r
	}
	if r.Status != result.StatusOK && len(means) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d repetitions finished before it stopped", len(means), reps))
	}
	fill(&r, cfg, means, opsPerRep, sampler, c)
	ac.fill(&r)
	if an, ok := bench.(exp.Annotator); ok && !abandoned {
		an.Annotate(&r)
	}
	r.Noise = noise(r, before, after, cfg.Host, cfg.StartLoad)
	return r
}

var selfPID = pid()

// growN picks the next warm-up batch size from the last one's time,
// aiming at a tenth of the warm-up per call and growing at most 10×.
func growN(n int, elapsed int64, warm time.Duration) int {
	target := float64(warm) / 10
	next := n * 10
	if elapsed > 0 {
		est := int(float64(n) * target / float64(elapsed))
		if est < next {
			next = est
		}
	}
	if next <= n {
		next = n + 1
	}
	return next
}

func fill(r *result.Arm, cfg Config, means []float64, opsPerRep int, s *measure.Sampler, c counts) {
	r.Ops = int64(opsPerRep)
	r.RepMeans = means
	sum := measure.Summarize(means)
	r.Median, r.Min, r.Max = sum.Median, sum.Min, sum.Max
	totalOps := float64(opsPerRep * len(means))
	if totalOps > 0 {
		r.Switches = &result.Switches{
			Voluntary:        float64(c.vol+c.childVol) / totalOps,
			Involuntary:      float64(c.invol+c.childInvol) / totalOps,
			ChildVoluntary:   float64(c.childVol) / totalOps,
			ChildInvoluntary: float64(c.childInvol) / totalOps,
		}
		if c.haveMigrations {
			m := float64(c.migrations) / totalOps
			r.Migrations = &m
		}
	}
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

func noise(r result.Arm, before, after sysinfo.Noise, h *sysinfo.Host, startLoad float64) result.Noise {
	n := result.Noise{Load1Before: before.Load1, Load1After: after.Load1}
	if r.Min > 0 {
		n.Spread = r.Max / r.Min
	}
	if dt := after.Total - before.Total; dt > 0 {
		n.StealPct = 100 * (after.Steal - before.Steal) / dt
	}
	n.Throttled = after.Throttled - before.Throttled
	n.ThrottledUs = after.ThrottledUs - before.ThrottledUs
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
	ch := make(chan opened, 1)
	go func() {
		b, err := a.Open(ctx)
		ch <- opened{b, err}
	}()
	select {
	case o := <-ch:
		return o.b, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.err == nil && o.b != nil {
				o.b.Close()
			}
		}()
		return nil, ctx.Err()
	}
}
