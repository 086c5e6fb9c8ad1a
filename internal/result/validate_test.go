package result

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each case breaks one field of a valid run; Validate names the field,
// the bad value and the range, and wraps ErrInvalid.
func TestValidateNamesFieldValueAndRange(t *testing.T) {
	neg := -1.0
	for _, tc := range []struct {
		name   string
		mutate func(r *Run)
		want   string
	}{
		{"negative ops", func(r *Run) { r.Arms[0].Ops = -5 }, `arms[0] "pingpong/thread/futex/same-cpu": ops_per_rep is -5; want 0..1e+15`},
		{"negative median", func(r *Run) { r.Arms[0].Median = -3 }, "median is -3; want 0..1e+15"},
		{"huge mean", func(r *Run) { r.Arms[0].RepMeans[1] = 1e308 }, "rep_means[1] is 1e+308; want 0..1e+15"},
		{"minus huge mean", func(r *Run) { r.Arms[0].RepMeans[2] = -1e308 }, "rep_means[2] is -1e+308"},
		{"NaN", func(r *Run) { r.Arms[0].Max = math.NaN() }, "max is NaN"},
		{"Inf", func(r *Run) { r.Arms[0].Min = math.Inf(1) }, "min is +Inf"},
		{"huge bytes", func(r *Run) { r.Arms[0].Unit = "B/op"; r.Arms[0].Median = -1e300 }, "median is -1e+300; want -1e+15..1e+15"},
		{"duplicate arm", func(r *Run) { r.Arms = append(r.Arms, r.Arms[0]) }, `arms[1] "pingpong/thread/futex/same-cpu": the name of arms[0] too; arm names must be unique`},
		{"unnamed arm", func(r *Run) { r.Arms[0].Name = "" }, `arms[0] "": name is empty`},
		{"path id", func(r *Run) { r.ID = "../../../../tmp/x" }, `id "../../../../tmp/x": want 1..128 of A-Z a-z 0-9 . _ -, starting with a letter or digit`},
		{"dot id", func(r *Run) { r.ID = "." }, `id "."`},
		{"dotdot id", func(r *Run) { r.ID = ".." }, `id ".."`},
		{"slash id", func(r *Run) { r.ID = "a/b" }, `id "a/b"`},
		{"flag-like id", func(r *Run) { r.ID = "-rf" }, `id "-rf"`},
		{"min above max", func(r *Run) { r.Arms[0].Min, r.Arms[0].Max = 9e9, 1 }, "want min ≤ median ≤ max"},
		{"unknown status", func(r *Run) { r.Arms[0].Status = "great" }, `status "great": want one of ok, too few ops, timed out`},
		{"colon id", func(r *Run) { r.ID = "a:b" }, `id "a:b"`},
		{"long id", func(r *Run) { r.ID = strings.Repeat("a", 129) }, "want 1..128"},
		{"clock", func(r *Run) { r.ClockCostNs = -1 }, "clock_cost_ns is -1; want 0..1e+15"},
		{"cpus", func(r *Run) { r.Env.LogicalCPUs = -2 }, "env: logical_cpus is -2; want 0..8192"},
		{"online cpu", func(r *Run) { r.Env.OnlineCPUs = []int{0, 9000} }, "env: online_cpus[1] is 9000; want 0..8191"},
		{"cgroup", func(r *Run) { r.Env.CgroupVersion = 3 }, "env: cgroup_version is 3; want 0..2"},
		{"nproc", func(r *Run) { r.Env.NprocLimit = -2 }, "env: rlimit_nproc is -2; want -1 (unlimited) or more"},
		{"steal", func(r *Run) { r.Env.StealPct = 250 }, "env: steal_pct is 250; want -100..100"},
		{"mem", func(r *Run) { r.Env.MemAvailableB = -1 }, "env: mem_available_bytes is -1"},
		{"pinned cpu", func(r *Run) { r.Arms[0].CPUs = []int{-1} }, "cpus[0] is -1; want 0..8191"},
		{"duration", func(r *Run) { r.Arms[0].DurationNs = -1 }, "duration_ns is -1"},
		{"samples", func(r *Run) { r.Arms[0].Percentiles.Samples = -1 }, "percentiles.samples is -1"},
		{"p99", func(r *Run) { r.Arms[0].Percentiles.P99 = -1 }, "percentiles.p99 is -1"},
		{"histogram order", func(r *Run) { r.Arms[0].Histogram[0].HighNs = 10 }, "histogram[0].high_ns is 10; want 4096..1e+15"},
		{"histogram count", func(r *Run) { r.Arms[0].Histogram[1].Count = -7 }, "histogram[1].count is -7"},
		{"switches", func(r *Run) { r.Arms[0].Switches.Involuntary = -0.5 }, "switches_per_op.involuntary is -0.5"},
		{"migrations", func(r *Run) { r.Arms[0].Migrations = &neg }, "migrations_per_op is -1"},
		{"counter", func(r *Run) { r.Arms[0].Counters[0].PerOp = &neg }, "counters[0].per_op is -1"},
		{"cpu per op", func(r *Run) { r.Arms[0].CPUNsPerOp = &neg }, "cpu_ns_per_op is -1"},
		{"metric", func(r *Run) { r.Arms[0].Metrics["z"] = 1e200 }, `metrics["z"] is 1e+200; want -1e+15..1e+15`},
		{"rep metric count", func(r *Run) { r.Arms[0].RepMetrics = map[string][]float64{"cpu-ns/op": {1}} }, `rep_metrics["cpu-ns/op"] has 1 figures and rep_means 3; want one per repetition`},
		{"rep metric value", func(r *Run) { r.Arms[0].RepMetrics = map[string][]float64{"cpu-ns/op": {1, math.Inf(1), 2}} }, `rep_metrics["cpu-ns/op"][1] is +Inf`},
		{"rep metric name", func(r *Run) { r.Arms[0].RepMetrics = map[string][]float64{"": {1, 2, 3}} }, "rep_metrics has an empty name"},
		{"spread", func(r *Run) { r.Arms[0].Noise.Spread = -1 }, "noise.spread is -1"},
		{"throttled", func(r *Run) { r.Arms[0].Noise.Throttled = -1 }, "noise.throttled_periods is -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleRun()
			if err := r.Validate(); err != nil {
				t.Fatalf("the sample run is not valid: %v", err)
			}
			tc.mutate(r)
			err := r.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// What ctxlab writes is valid: edge values its runs do hold (a memory
// delta below zero, an unlimited RLIMIT_NPROC, an unreadable
// perf_event_paranoid), and every run fixture in the repository.
func TestValidateAcceptsRealRuns(t *testing.T) {
	r := sampleRun()
	r.Arms[0].Unit = "B/op"
	r.Arms[0].Median, r.Arms[0].Min = -512, -1024 // RSS shrank while the workers were weighed
	r.Env.NprocLimit = -1
	r.Env.PerfParanoid = 99
	r.ID = "20261130T120000-abc123.imported_2"
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../*/testdata/*.json")
	if len(files) < 4 {
		t.Fatalf("found %d run fixtures: %v", len(files), files)
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		run, err := Read(f)
		f.Close()
		if err != nil {
			continue // not a run document
		}
		if err := run.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
