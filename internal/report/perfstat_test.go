package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func TestPerfStatComparison(t *testing.T) {
	hw := "not offered by this CPU or hypervisor (no such file or directory)"
	counters := func(ins, taskClock float64) []result.Counter {
		c := []result.Counter{{Name: "task-clock", PerOp: &taskClock}, {Name: "LLC-load-misses", Unsupported: hw}}
		if ins > 0 {
			c = append(c, result.Counter{Name: "instructions", PerOp: &ins})
		} else {
			c = append(c, result.Counter{Name: "instructions", Unsupported: hw})
		}
		return c
	}
	run := &result.Run{Arms: []result.Arm{
		{Name: "cachecost/sweep/seq/W=8MiB/T=2", Experiment: "cachecost", Status: result.StatusOK, Unit: "ns/element",
			Median: 2, Min: 2, Max: 2, Params: map[string]string{"compare": "sweep seq W=8MiB"},
			Metrics: map[string]float64{"oncpu-ns/element": 4, "ipc": 2.4}, Counters: counters(0, 4)},
		{Name: "cachecost/sweep/seq/W=8MiB/T=32", Experiment: "cachecost", Status: result.StatusOK, Unit: "ns/element",
			Median: 3, Min: 3, Max: 3, Params: map[string]string{"compare": "sweep seq W=8MiB"},
			Metrics: map[string]float64{"oncpu-ns/element": 5, "ipc": 1.2}, Counters: counters(0, 5)},
		{Name: "pingpong/thread/futex/unpinned", Experiment: "pingpong", Status: result.StatusOK, Median: 10, Min: 10, Max: 10,
			Counters: counters(1500, 9000)},
	}}
	var buf bytes.Buffer
	if err := Table(&buf, run); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"sweep seq W=8MiB", "T=2", "T=32", "delta",
		"ns/element (wall)", "+50.0%", // 2 → 3
		"on-CPU ns/element", "+25.0%",
		"ipc", "-50.0%",
		"counters unsupported here: LLC-load-misses, instructions — " + hw,
		"counters per op", "thread/futex/unpinned", "1500",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// An unsupported counter is never printed as a number.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "LLC-load-misses/op") {
			t.Errorf("unsupported counter has a row: %q", line)
		}
	}
}
