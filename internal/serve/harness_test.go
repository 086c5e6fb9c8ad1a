package serve_test

import (
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/serve"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// The last selfcheck of the host is exported, a gauge per checked arm; a
// row that could not run is left out; a host never checked exports none.
func TestHarnessMetrics(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	h := &result.HarnessCheck{RunID: "r", Time: at, Rows: []result.HarnessRow{
		{Arm: "pingpong/process/pipe/unpinned", Reference: "raw pipe loop, two Go processes", Status: result.StatusOK, Ratio: 1.01, Limit: 1.05},
		{Arm: "pingpong/process/pipe/unpinned", Reference: "perf bench sched pipe", Status: result.StatusOK, Ratio: 1.12, Limit: 1.05},
		{Arm: "pingpong/thread/pipe/unpinned", Reference: "perf bench sched pipe -T", Status: result.StatusOK, Ratio: 1.09, Limit: 1.05},
		{Arm: "hop/pytask/direct", Reference: "perf_counter loop", Status: result.StatusUnsupported, Reason: "no python3", Limit: 1.05},
	}}
	gather := func(h *result.HarnessCheck) map[string][]float64 {
		s := serve.New(serve.Options{Interval: time.Minute, BudgetPct: 1, ProbeTimeout: time.Second, Host: sysinfo.Detect(),
			Version: "test", NoRuntimeMetrics: true, Harness: h})
		mfs, err := s.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				name := mf.GetName()
				for _, l := range m.GetLabel() {
					if l.GetName() == "arm" && mf.GetName() == "ctxlab_selfcheck_over" {
						name += "{" + l.GetValue() + "}"
					}
				}
				out[name] = append(out[name], m.GetGauge().GetValue())
			}
		}
		return out
	}
	got := gather(h)
	if r := got["ctxlab_selfcheck_ratio"]; len(r) != 3 {
		t.Errorf("ctxlab_selfcheck_ratio %v; want the three checked rows", r)
	}
	if l := got["ctxlab_selfcheck_limit_ratio"]; len(l) != 2 || l[0] != 1.05 {
		t.Errorf("ctxlab_selfcheck_limit_ratio %v; want one per checked arm", l)
	}
	// Over one of its two references but within the other: not over.
	if o := got["ctxlab_selfcheck_over{pingpong/process/pipe/unpinned}"]; len(o) != 1 || o[0] != 0 {
		t.Errorf("the process pipe's over %v; want 0", o)
	}
	if o := got["ctxlab_selfcheck_over{pingpong/thread/pipe/unpinned}"]; len(o) != 1 || o[0] != 1 {
		t.Errorf("the thread pipe's over %v; want 1", o)
	}
	if ts := got["ctxlab_selfcheck_timestamp_seconds"]; len(ts) != 1 || ts[0] != float64(at.Unix()) {
		t.Errorf("ctxlab_selfcheck_timestamp_seconds %v; want %d", ts, at.Unix())
	}
	if none := gather(nil); len(none["ctxlab_selfcheck_ratio"])+len(none["ctxlab_selfcheck_timestamp_seconds"]) != 0 {
		t.Errorf("a host never checked exports %v", none)
	}
}
