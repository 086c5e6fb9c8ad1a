package runner

import (
	"sort"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// counterSource is the perf backend; tests may replace it with a fake.
var counterSource measure.CounterSource = measure.PerfSource{}

// armCounters are the perf counters of one arm, open on every
// participating thread: the bench's own threads (exp.Threads) or else every
// thread of ctxlab, and every thread of each child process. They count only
// the timed regions (the runner's snapshots bracket them). Switch counts
// from rusage and /proc stay the source of truth for switches; the counters
// add to them. A nil *armCounters does nothing.
type armCounters struct {
	set     *measure.CounterSet
	threads int
	errs    []string
}

// openArmCounters opens the counters when --counters is on or the arm asks
// for them; otherwise it returns nil.
func openArmCounters(cfg Config, a exp.Arm, bench exp.Bench, children []int) *armCounters {
	if !cfg.Counters && !a.Counters {
		return nil
	}
	var tids []int
	if t, ok := bench.(exp.Threads); ok {
		tids = append(tids, t.Threads()...)
	} else if self, err := procstat.DefaultRoot.TIDs(selfPID); err == nil {
		tids = append(tids, self...)
	}
	for _, pid := range children {
		if ct, err := procstat.DefaultRoot.TIDs(pid); err == nil {
			tids = append(tids, ct...)
		}
	}
	sort.Ints(tids)
	tids = uniq(tids)
	return &armCounters{set: measure.OpenCounters(counterSource, measure.Events, tids), threads: len(tids)}
}

func uniq(xs []int) []int {
	var out []int
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// wrap returns snap extended to read the counters just outside the clock.
func (c *armCounters) wrap(snap func(begin bool)) func(begin bool) {
	if c == nil {
		return snap
	}
	return func(begin bool) {
		var err error
		if begin {
			snap(true)
			err = c.set.Begin()
		} else {
			err = c.set.End()
			snap(false)
		}
		if err != nil && len(c.errs) < 3 {
			c.errs = append(c.errs, err.Error())
		}
	}
}

// fill adds the counters per op, the derived figures (IPC, misses per
// 1 000 instructions) and any warnings to r.
func (c *armCounters) fill(r *result.Arm) {
	if c == nil {
		return
	}
	ops := float64(r.Ops) * float64(len(r.RepMeans))
	vals := c.set.Values()
	for _, v := range vals {
		rc := result.Counter{Name: v.Name, Unsupported: v.Unsupported}
		if v.Unsupported == "" && ops > 0 {
			per := v.Value / ops
			rc.PerOp = &per
		}
		r.Counters = append(r.Counters, rc)
	}
	for k, v := range measure.Derived(vals) {
		if r.Metrics == nil {
			r.Metrics = map[string]float64{}
		}
		r.Metrics[k] = v
	}
	r.Notes = append(r.Notes, c.set.Warnings()...)
	for _, e := range c.errs {
		r.Notes = append(r.Notes, "reading counters: "+e)
	}
}

func (c *armCounters) close() {
	if c != nil {
		c.set.Close()
	}
}
