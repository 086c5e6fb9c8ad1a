package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// loop measures a bench the runner times: warm-up and sizing, then the
// repetitions, each bracketed by the probes.
func loop(ctx, actx context.Context, cfg Config, a exp.Arm, bench exp.Loop, r result.Arm, reps int, limit time.Duration, before sysinfo.Noise) result.Arm {
	closeBench := closeOnce(bench)
	m := newLoopRun(cfg, a, bench, reps)
	// The measuring goroutine may still read the probes (perf counter
	// fds) when it is abandoned: they are closed once it has returned,
	// if it ever does.
	err, gone := await(actx, func() error { return m.measure(actx) }, func() { closeBench() }, abandonAfter, func(error) { m.ps.close() })
	if gone {
		return abandoned(r, ctx, actx, limit)
	}
	defer m.ps.close()
	if cerr := closeBench(); cerr != nil && err == nil {
		r.Notes = append(r.Notes, "teardown: "+cerr.Error())
	}
	after := sysinfo.Sample(cfg.Host)
	endStatus(&r, ctx, actx, limit, err)
	return m.result(r, before, after)
}

// loopRun is one Loop arm being measured: its probes, and what its
// measuring goroutine records for the result.
type loopRun struct {
	cfg   Config
	bench exp.Loop
	reps  int
	parts exp.Participants
	task  *taskProbe
	ac    *armCounters // nil without counters
	ps    probes

	sampler   *measure.Sampler
	perOp     float64 // ns an op, as sizing found it
	opsPerRep int
	means     []float64
	walls     []int64
	cpus      []int
}

func newLoopRun(cfg Config, a exp.Arm, bench exp.Loop, reps int) *loopRun {
	m := &loopRun{cfg: cfg, bench: bench, reps: reps, parts: bench.Participants()}
	m.task = newTaskProbe(m.parts)
	m.ps = probes{m.task, newSchedProbe()}
	if m.ac = openArmCounters(cfg, a, m.parts); m.ac != nil {
		m.ps = append(m.ps, m.ac)
	}
	return m
}

// measure sizes the bench, then runs the repetitions until one fails.
func (m *loopRun) measure(actx context.Context) error {
	perOp, err := size(actx, m.cfg, loopBatch(actx, m.bench.Run))
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	m.perOp, m.opsPerRep = perOp, opsPerRep(m.cfg.BenchTime, perOp, 0)
	if tp, ok := m.bench.(exp.TimedPhase); ok {
		tp.StartTimed(m.opsPerRep)
	}
	total := m.reps * m.opsPerRep
	m.sampler = measure.NewSampler(total, m.cfg.MaxSamples, sampleEvery(total, 1, m.cfg.MaxSamples, m.cfg.ClockCost, perOp))
	for rep := 0; rep < m.reps; rep++ {
		if actx.Err() != nil {
			return actx.Err()
		}
		if err := m.repetition(actx, rep); err != nil {
			return err
		}
	}
	// The workers are still there: read where they may run.
	m.cpus = participantCPUs(m.parts)
	return nil
}

// repetition runs one timed repetition under the probes.
func (m *loopRun) repetition(actx context.Context, rep int) error {
	m.ps.mark()
	m.sampler.Mark()
	b := measure.NewB(actx, m.opsPerRep, m.sampler, m.ps.snap)
	b.StartTimer()
	err := m.bench.Run(b)
	b.StopTimer()
	if err != nil {
		// Only finished repetitions count: drop what the probes and the
		// sampler saw of this one, whose ops are not counted either. When
		// none finished because the arm's time ran out, the sampled ops of
		// this one are all the arm has (a starved timer): they stay, and a
		// note says so. A repetition that broke keeps nothing.
		m.ps.rollback()
		if rep > 0 || actx.Err() == nil {
			m.sampler.Rollback()
		}
		return err
	}
	m.walls = append(m.walls, b.Elapsed())
	m.means = append(m.means, float64(b.Elapsed())/float64(m.opsPerRep))
	return nil
}

// result fills r from what the repetitions recorded, once the bench is
// closed: the summary, the probes' figures, the bench's own analysis and
// the noise flags.
func (m *loopRun) result(r result.Arm, before, after sysinfo.Noise) result.Arm {
	if len(m.cpus) > 0 {
		r.CPUs = m.cpus
	}
	if len(m.means) == 0 && m.sampler.Len() == 0 {
		return r
	}
	reps := len(m.means)
	if r.Status != result.StatusOK && reps > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d repetitions finished before it stopped", reps, m.reps))
	}
	if reps == 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("no repetition finished: the percentiles are the %d sampled ops of the one that did not", m.sampler.Len()))
	}
	rec := &exp.Record{Ops: int64(m.opsPerRep) * int64(reps), SampleEvery: m.sampler.Every()}
	for _, w := range m.walls {
		rec.WallNs += w
	}
	fill(&r, m.cfg, m.means, m.opsPerRep, m.sampler)
	if m.sampler.Len() > 0 {
		rec.Samples = m.sampler.Sorted()
	}
	m.ps.fill(&r, rec)
	if an, ok := m.bench.(exp.Analyzer); ok {
		an.Analyze(rec, &r)
	}
	r.Noise = Noise(r, before, after, m.cfg.Host, m.cfg.StartLoad)
	addReasons(&r.Noise, sizingReasons(m.walls, repTarget(m.cfg.BenchTime, m.opsPerRep, m.perOp)))
	fewOps(&r, m.opsPerRep, m.perOp, m.cfg.BenchTime)
	if m.cfg.Observe != nil {
		o := Observation{Arm: r.Name, Participants: m.parts, RepWallNs: m.walls}
		o.Switches, o.WholeSwitches = m.task.totals()
		if m.ac != nil {
			o.CounterTIDs = m.ac.tids
		}
		m.cfg.Observe(o)
	}
	return r
}
