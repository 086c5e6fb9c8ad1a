package wss

import (
	"strings"
	"testing"

	_ "github.com/ctxlab/ctxlab/internal/experiments" // the refill curve is cachecost's declaration
	"github.com/ctxlab/ctxlab/internal/result"
)

var host = []result.Cache{{Level: 1, Type: "Data", SizeB: 32 * result.KiB}, {Level: 1, Type: "Instruction", SizeB: 32 * result.KiB},
	{Level: 2, Type: "Unified", SizeB: result.MiB}, {Level: 3, Type: "Unified", SizeB: 32 * result.MiB, SharedCPUs: 2}}

// curveRun measured 1 µs per switch at 1 MiB and 3 µs at 8 MiB.
func curveRun() *result.Run {
	mk := func(mode, w, wb string, median float64) result.Arm {
		sw := 2.0
		if mode == "per-switch-solo" {
			sw = 0
		}
		return result.Arm{Name: "cachecost/" + mode + "/W=" + w, Experiment: "cachecost", Status: result.StatusOK, Median: median,
			Params: map[string]string{"mode": mode, "W": w, "W_bytes": wb}, Switches: &result.Switches{Voluntary: sw}}
	}
	return &result.Run{ID: "run1", Arms: []result.Arm{
		mk("per-switch", "0", "0", 6000),
		mk("per-switch", "1MiB", "1048576", 16000), mk("per-switch-solo", "1MiB", "1048576", 8000),
		mk("per-switch", "8MiB", "8388608", 60000), mk("per-switch-solo", "8MiB", "8388608", 48000),
	}}
}

// The reading sets the set per thread beside the caches and the busy
// threads, and prices it from the curve: each case is the figures a
// sampling could give and the words they must read as.
func TestRead(t *testing.T) {
	for _, c := range []struct {
		name      string
		median    int64
		busy      int
		alike     bool
		switches  float64
		want      []string
		indirectN float64
	}{
		{"32 threads of 8 MiB", 256 * result.MiB, 32, true, 100, []string{
			"≈ 8 MiB per thread (÷ 32 busy threads",
			"8 MiB per thread, 32 threads busy on 2 CPUs, beside a 32 MiB L3 shared by 2 CPUs, 1 MiB L2 per core: together they overflow it: every resume refetches most of its data from memory",
			"the indirect cost does not matter here: indirect cost ≈ 300 µs: 100 switches × 3 µs per switch at 8 MiB (cachecost/per-switch/W=8MiB (3 µs) in run run1)",
		}, 3e5},
		{"32 threads of 8 MiB switching often", 256 * result.MiB, 32, true, 1e5, []string{
			"the indirect cost matters: indirect cost ≈ 300 ms: 100k switches × 3 µs per switch at 8 MiB (cachecost/per-switch/W=8MiB (3 µs) in run run1), 30% of its CPU time",
		}, 3e8},
		{"more than all the CPU", 256 * result.MiB, 32, true, 1e6, []string{
			"the indirect cost matters: indirect cost: 1M switches × 3 µs per switch at 8 MiB (cachecost/per-switch/W=8MiB (3 µs) in run run1) would be more than all the program's CPU time (1 s)",
		}, 1e9},
		{"one thread larger than the LLC", 64 * result.MiB, 1, true, 10, []string{
			"64 MiB per thread, 1 threads busy on 2 CPUs",
			"indirect cost ≈ 120 µs: 10 switches × 12 µs per switch at 32 MiB",
		}, 1.2e5},
		{"2 threads of 16 KiB", 64 * result.KiB, 2, true, 200, []string{
			"2 threads busy on 2 CPUs", "each thread can keep a CPU",
			"a small working set: the indirect cost does not matter here",
		}, 200 * 1000 * 32.0 / 1024},
		{"4 threads of 256 KiB", result.MiB, 4, true, 1000, []string{"the 2 threads taking turns on a CPU fit its L2 together"}, 1000 * 250},
		{"unlike threads", 12 * result.MiB, 3, false, 10, []string{"≈ 12 MiB per thread (the whole working set: the 3 busy threads are not alike; an upper end per thread)",
			"together they fit the L3", "the indirect cost does not matter here"}, 10 * 4500},
	} {
		r := &Reading{Kind: "wss", Intervals: 5, IntervalS: 0.2, MedianBytes: c.median, MaxBytes: c.median, RSSBytes: c.median, BusyThreads: c.busy, Alike: c.alike,
			CostNs: 1e6, ProgramCPUNs: 1e9, CostShare: 0.001}
		if c.alike {
			r.PerThreadBytes = c.median / int64(c.busy)
			r.AlikeWhy = "÷ " + string(rune('0'+c.busy%10)) + " busy threads"
			if c.busy == 32 {
				r.AlikeWhy = "÷ 32 busy threads"
			}
		} else {
			r.AlikeWhy = "the 3 busy threads are not alike"
		}
		text := strings.Join(r.Read(Setting{Caches: host, CPUs: 2, Switches: c.switches, CPUNs: 1e9, Curve: curveRun()}), "\n")
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: reading lacks %q:\n%s", c.name, w, text)
			}
		}
		if r.Indirect == nil || r.Indirect.TotalNs < c.indirectN*0.999 || r.Indirect.TotalNs > c.indirectN*1.001 {
			t.Errorf("%s: indirect %+v, want %.0f ns", c.name, r.Indirect, c.indirectN)
		}
		if !strings.Contains(text, "sampling cost: 1 ms of ctxlab's CPU time, 0.1% of the program's 1 s (bound: 2.0%)") {
			t.Errorf("%s: no cost line:\n%s", c.name, text)
		}
	}
	r := &Reading{Intervals: 1, MedianBytes: 1, BusyThreads: 1}
	if got := strings.Join(r.Read(Setting{CPUs: 2}), "\n"); !strings.Contains(got, "beside the caches: unsupported: this kernel reports no cache sizes") {
		t.Errorf("no caches: %s", got)
	}
}

// Threads are alike when they share one name (a pool) or their CPU times
// agree within ×3; the set per thread is then kept, and otherwise not.
func TestPerThread(t *testing.T) {
	names := map[int]string{1: "a", 2: "b", 3: "c", 4: "d"}
	r := &Reading{MedianBytes: 30 << 20, BusyThreads: 3, PerThreadBytes: 10 << 20}
	r.perThread(map[int]uint64{1: 100, 2: 150, 3: 190, 4: 1}, names) // 4 ran under a hundredth of the busiest: not busy
	if !r.Alike || r.PerThreadBytes != 10<<20 || !strings.Contains(r.AlikeWhy, "÷ 3 busy threads, assuming") || !strings.Contains(r.AlikeWhy, "within ×3") {
		t.Errorf("alike by CPU: %+v", r)
	}
	r = &Reading{MedianBytes: 30 << 20, BusyThreads: 2, PerThreadBytes: 15 << 20}
	r.perThread(map[int]uint64{1: 100, 2: 400}, names)
	if per, how := r.PerThread(); r.Alike || per != 30<<20 || !strings.Contains(r.AlikeWhy, "not alike") || !strings.Contains(how, "upper end") {
		t.Errorf("unlike: %+v", r)
	}
	r = &Reading{MedianBytes: 30 << 20, BusyThreads: 2, PerThreadBytes: 15 << 20}
	r.perThread(map[int]uint64{1: 100, 2: 400}, map[int]string{1: "worker", 2: "worker"})
	if !r.Alike || r.PerThreadBytes != 15<<20 || !strings.Contains(r.AlikeWhy, `all named "worker", a pool of one kind`) {
		t.Errorf("alike by name: %+v", r)
	}
}
