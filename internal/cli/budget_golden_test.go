package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

var updateBudget = flag.Bool("update-budget", false, "rewrite testdata/golden/budget.txt")

// budgetGoldenRun is a run with every kind of arm budget meets: CPU time
// from each source, wall time only, hogged arms, a figure that is no time,
// a failed arm, and a share above one core.
func budgetGoldenRun() *result.Run {
	f := func(x float64) *float64 { return &x }
	task := func(x float64) []result.Counter { return []result.Counter{{Name: "task-clock", PerOp: f(x)}} }
	ok := result.StatusOK
	return &result.Run{Schema: 1, ID: "20261201T000000-abcdef", Time: time.Date(2026, 12, 1, 10, 4, 0, 0, time.UTC),
		Env: result.Env{Hostname: "golden"}, Arms: []result.Arm{
			{Name: "pingpong/goroutine/chan/gomaxprocs=1", Experiment: "pingpong", Substrate: "goroutine", Op: "round trip", Status: ok, Unit: "ns/op", Median: 310, CPUNsPerOp: f(305)},
			{Name: "pingpong/thread/futex/same-cpu", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: ok, Unit: "ns/op", Median: 7400, CPUNsPerOp: f(7300),
				Placement: "same-cpu", Switches: &result.Switches{Voluntary: 2, Involuntary: 0.96}},
			{Name: "pingpong/thread/futex/cross-cpu", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: ok, Unit: "ns/op", Median: 41000, CPUNsPerOp: f(9800)},
			{Name: "pingpong/process/pipe/unpinned", Experiment: "pingpong", Substrate: "process", Op: "round trip", Status: ok, Unit: "ns/op", Median: 12000, Counters: task(11000)},
			{Name: "pingpong/process/pipe/same-cpu", Experiment: "pingpong", Substrate: "process", Op: "round trip", Status: ok, Unit: "ns/op", Median: 9000},
			{Name: "pingpong/thread/pipe/unpinned", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: result.StatusFailed, Unit: "ns/op"},
			{Name: "yield/thread/sched_yield/k=10/same-cpu", Experiment: "yield", Substrate: "thread", Op: "yield", Status: ok, Unit: "ns/op", Median: 900,
				Metrics: map[string]float64{"cpu-ns/yield": 880}},
			{Name: "interference/timer/goroutine-spin/hogs=1/gomaxprocs=1", Experiment: "interference", Substrate: "goroutine", Op: "1 ms timer sleep (percentiles: wake delay beyond the 1 ms)",
				Status: ok, Unit: "ns/op", Median: 1.9e7, CPUNsPerOp: f(1.8e7), Params: map[string]string{"hogs": "1"}},
			{Name: "interference/timer/none/hogs=0/gomaxprocs=1", Experiment: "interference", Substrate: "goroutine", Op: "1 ms timer sleep (percentiles: wake delay beyond the 1 ms)",
				Status: ok, Unit: "ns/op", Median: 1.1e6, CPUNsPerOp: f(4.2e5), Params: map[string]string{"hogs": "0"}},
			{Name: "spawn/goroutine/idle-memory", Experiment: "spawn", Substrate: "goroutine", Op: "idle worker", Status: ok, Unit: "B/op", Median: 2600},
			{Name: "cachecost/sweep/random/W=32MiB/T=64", Experiment: "cachecost", Substrate: "thread", Op: "element visited", Status: ok, Unit: "ns/element", Median: 30},
		}}
}

// TestBudgetGolden pins the whole budget screen, for the pipe and for a
// terminal, over budgetGoldenRun and its slices (wall time only, only
// unpriced arms).
func TestBudgetGolden(t *testing.T) {
	run := budgetGoldenRun()
	var b bytes.Buffer
	for _, c := range []struct {
		name  string
		arms  []int
		rate  float64
		glob  string
		width int
	}{
		{"every arm, a pipe", nil, 10000, "", 0},
		{"every arm, 80 columns", nil, 10000, "", 80},
		{"every arm at 2M/s, 60 columns", nil, 2e6, "", 60},
		{"pingpong threads", nil, 50000, "pingpong/thread/*", 0},
		{"wall time only", []int{4, 9, 10}, 1000, "", 0},
		{"only unpriced arms", []int{7, 9}, 1000, "", 0},
		{"nothing matches", nil, 1000, "ring/*", 0},
	} {
		r := *run
		if c.arms != nil {
			r.Arms = nil
			for _, i := range c.arms {
				r.Arms = append(r.Arms, run.Arms[i])
			}
		}
		fmt.Fprintf(&b, "== %s (rate %g, --arm %q)\n", c.name, c.rate, c.glob)
		if err := writeBudget(&b, &r, c.rate, c.glob, c.width); err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
	}
	path := filepath.Join("testdata", "golden", "budget.txt")
	if *updateBudget {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("budget output differs from %s:\n%s", path, b.String())
	}
}
