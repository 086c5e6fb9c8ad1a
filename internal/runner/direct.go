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

// selfTimed measures a bench that times itself (exp.SelfTimed, the
// CPython driver) and turns what it returns into the same result as a Go
// arm: the same summary, percentiles, histogram, switch and noise fields.
// The runner sizes it by its own rule, as it sizes a Loop: the bench runs
// the batches and the repetitions it is told to.
func selfTimed(ctx, actx context.Context, cfg Config, bench exp.SelfTimed, r result.Arm, reps int, limit time.Duration, before sysinfo.Noise) result.Arm {
	closeBench := closeOnce(bench)
	type measured struct {
		d     *exp.DirectResult
		perOp float64
		err   error
	}
	m, gone := await(actx, func() measured {
		d, perOp, err := measureSelfTimed(actx, cfg, bench, reps)
		return measured{d, perOp, err}
	}, func() { closeBench() }, abandonAfter, nil)
	if gone {
		return abandoned(r, ctx, actx, limit)
	}
	if err := closeBench(); err != nil && m.err == nil {
		r.Notes = append(r.Notes, "teardown: "+err.Error())
	}
	d, err := m.d, m.err
	if err != nil {
		// What a self-timed bench returns with an error cannot be split
		// by repetition (its samples and counts are totals): only a
		// measurement that finished counts, as a failed repetition of a
		// Loop is rolled back.
		d = nil
	}
	after := sysinfo.Sample(cfg.Host)
	endStatus(&r, ctx, actx, limit, err)
	if r.Status == result.StatusTimedOut && err != nil {
		r.Reason += "; " + err.Error()
	}
	if d == nil || len(d.RepMeans) == 0 {
		return r
	}
	return directResult(r, cfg, d, m.perOp, before, after)
}

// directResult fills r from what a self-timed bench measured, sized at
// perOp ns an op.
func directResult(r result.Arm, cfg Config, d *exp.DirectResult, perOp float64, before, after sysinfo.Noise) result.Arm {
	if len(d.Params) > 0 {
		params := map[string]string{}
		for k, v := range r.Params {
			params[k] = v
		}
		for k, v := range d.Params {
			params[k] = v
		}
		r.Params = params
	}
	fill(&r, cfg, d.RepMeans, 0, samplerOf(d.Samples))
	r.Ops = d.OpsPerRep
	if d.TotalOps > 0 {
		n := float64(d.TotalOps)
		r.Switches = &result.Switches{
			Voluntary: float64(d.Voluntary) / n, Involuntary: float64(d.Involuntary) / n,
			ChildVoluntary: float64(d.ChildVoluntary) / n, ChildInvoluntary: float64(d.ChildInvoluntary) / n,
		}
		if d.Migrations >= 0 {
			m := float64(d.Migrations) / n
			r.Migrations = &m
		}
		if d.CPUNs != nil {
			c := float64(*d.CPUNs) / n
			r.CPUNsPerOp = &c
		}
	}
	if d.SampleEvery > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("percentiles from every %d%s op (%d samples)", d.SampleEvery, ordinal(d.SampleEvery), len(d.Samples)))
	}
	for k, v := range d.Metrics {
		r.SetMetric(k, v)
	}
	r.Notes = append(r.Notes, d.Notes...)
	r.Noise = Noise(r, before, after, cfg.Host, cfg.StartLoad)
	var walls []int64
	for _, m := range d.RepMeans {
		walls = append(walls, int64(m*float64(d.OpsPerRep)))
	}
	addReasons(&r.Noise, sizingReasons(walls, repTarget(cfg.BenchTime, int(d.OpsPerRep), perOp)))
	fewOps(&r, int(d.OpsPerRep), perOp, cfg.BenchTime)
	return r
}

// measureSelfTimed starts the bench, sizes it (size, over its own
// batches) and asks for the repetitions that sizing gives, sampled as the
// runner samples a Loop but by the bench's own clock and units. It says
// what an op cost when sized.
func measureSelfTimed(actx context.Context, cfg Config, bench exp.SelfTimed, reps int) (*exp.DirectResult, float64, error) {
	t, err := bench.Start(actx)
	if err != nil {
		return nil, 0, err
	}
	perOp, err := size(actx, cfg, func(n int) (int, int64, error) { return bench.Batch(actx, n) })
	if err != nil {
		return nil, 0, err
	}
	req := exp.DirectRequest{Reps: reps, OpsPerRep: opsPerRep(cfg.BenchTime, perOp, t.MinOps), PerOpNs: perOp}
	if t.Sampled {
		maxSamples := cfg.MaxSamples
		if t.MaxSamples > 0 && (maxSamples <= 0 || t.MaxSamples < maxSamples) {
			maxSamples = t.MaxSamples
		}
		req.SampleEvery = sampleEvery(reps*req.OpsPerRep, t.UnitOps, maxSamples, t.ClockNs, perOp)
	}
	d, err := bench.Measure(actx, req)
	return d, perOp, err
}

// samplerOf holds a self-timed bench's samples, for fill.
func samplerOf(samples []int64) *measure.Sampler {
	if len(samples) == 0 {
		return nil
	}
	s := measure.NewSampler(len(samples), len(samples), 1)
	for _, v := range samples {
		s.Record(v)
	}
	return s
}
