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
func selfTimed(ctx, actx context.Context, cfg Config, bench exp.SelfTimed, r result.Arm, reps int, limit time.Duration, before sysinfo.Noise) result.Arm {
	closeBench := closeOnce(bench)
	req := exp.DirectRequest{Reps: reps, BenchTime: cfg.BenchTime, WarmUp: cfg.WarmUp,
		WarmUpOps: cfg.WarmUpOps, MaxSamples: cfg.MaxSamples, Policy: policy}
	type measured struct {
		d   *exp.DirectResult
		err error
	}
	m, gone := await(actx, func() measured {
		d, err := bench.Measure(actx, req)
		return measured{d, err}
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
	var s *measure.Sampler
	if len(d.Samples) > 0 {
		s = measure.NewSampler(len(d.Samples), len(d.Samples), 1)
		for _, v := range d.Samples {
			s.Record(v)
		}
	}
	// fill summarises the means and samples; the counts are per op of the
	// driver's own total, which may differ from reps × ops per rep.
	fill(&r, cfg, d.RepMeans, 0, s)
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
	addReasons(&r.Noise, sizingReasons(int(d.OpsPerRep), walls, cfg.BenchTime))
	return r
}
