package runner

import (
	"context"
	"sort"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// gauge measures a bench whose figure is a quantity (exp.Gauge): one
// reading per repetition, summarised like a time, so a memory figure has
// repetitions, a spread and a noise flag too.
func gauge(ctx, actx context.Context, cfg Config, bench exp.Gauge, r result.Arm, reps int, limit time.Duration, before sysinfo.Noise) result.Arm {
	closeBench := closeOnce(bench)
	type read struct {
		rd  exp.Reading
		err error
	}
	var values []float64
	metrics := map[string][]float64{}
	var ops int64
	var failed error
	for rep := 0; rep < reps && failed == nil; rep++ {
		got, gone := await(actx, func() read {
			rd, err := bench.Read(actx)
			return read{rd, err}
		}, func() { closeBench() }, abandonAfter, nil)
		if gone {
			return abandoned(r, ctx, actx, limit)
		}
		if got.err == nil && actx.Err() != nil {
			got.err = actx.Err() // stop here: the bench is closed
		}
		if got.err != nil {
			failed = got.err
			break
		}
		values = append(values, got.rd.Value)
		ops = got.rd.Ops
		for k, v := range got.rd.Metrics {
			metrics[k] = append(metrics[k], v)
		}
	}
	if err := closeBench(); err != nil && failed == nil {
		r.Notes = append(r.Notes, "teardown: "+err.Error())
	}
	after := sysinfo.Sample(cfg.Host)
	endStatus(&r, ctx, actx, limit, failed)
	if len(values) == 0 {
		return r
	}
	r.Ops = ops
	r.RepMeans = values
	sum := measure.Summarize(values)
	r.Median, r.Min, r.Max = sum.Median, sum.Min, sum.Max
	if len(metrics) > 0 {
		r.Metrics = map[string]float64{}
		for k, vs := range metrics {
			sort.Float64s(vs)
			r.Metrics[k] = vs[len(vs)/2]
		}
	}
	r.Noise = Noise(r, before, after, cfg.Host, cfg.StartLoad)
	return r
}
