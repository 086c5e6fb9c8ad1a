package runner

import (
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// counterSource is the perf backend; tests may replace it with a fake.
var counterSource measure.CounterSource = measure.PerfSource{}

// armCounters are the perf counters of one arm, open on exactly the
// threads of its declared participants (exp.Participants), found when the
// arm is opened. They count only the timed regions: they are one of the
// probes the runner brackets every repetition with. Switch counts from
// rusage and /proc stay the source of truth for switches; the counters add
// to them.
type armCounters struct {
	set  *measure.CounterSet
	tids []int
	errs []string
}

// openArmCounters opens the counters when --counters is on or the arm asks
// for them; otherwise it returns nil.
func openArmCounters(cfg Config, a exp.Arm, parts exp.Participants) *armCounters {
	if !cfg.Counters && !a.Counters {
		return nil
	}
	tids := participantTIDs(parts)
	return &armCounters{set: measure.OpenCounters(counterSource, measure.Events, tids), tids: tids}
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

func (c *armCounters) note(err error) {
	if err != nil && len(c.errs) < 3 {
		c.errs = append(c.errs, err.Error())
	}
}

func (c *armCounters) begin()    { c.note(c.set.Begin()) }
func (c *armCounters) end()      { c.note(c.set.End()) }
func (c *armCounters) mark()     { c.set.Mark() }
func (c *armCounters) rollback() { c.set.Rollback() }

// fill adds the counters per op, the derived figures (IPC, misses per
// 1 000 instructions) and any warnings to r.
func (c *armCounters) fill(r *result.Arm, rec *exp.Record) {
	ops := float64(rec.Ops)
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
		r.SetMetric(k, v)
	}
	r.Notes = append(r.Notes, c.set.Warnings()...)
	for _, e := range c.errs {
		r.Notes = append(r.Notes, "reading counters: "+e)
	}
}

func (c *armCounters) close() { c.set.Close() }
