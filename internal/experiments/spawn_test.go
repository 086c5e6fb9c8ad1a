package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

func TestSpawnRuns(t *testing.T) {
	arms, err := spawnArms(exp.Params{Suite: exp.SuiteQuick, CPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	before := taskCount(t)
	for _, a := range arms {
		if a.Unsupported != "" {
			t.Logf("%s unsupported: %s", a.Name, a.Unsupported)
			continue
		}
		if a.Mechanism == "idle" {
			continue // the memory gauges: TestSpawnMemoryOrdered
		}
		s := OpenSpawn(context.Background(), a.Substrate, a.Mechanism, "/bin/true")
		n := 50
		if a.Substrate == "process" {
			n = 3
		}
		ts, _ := s.(*threadSpawn)
		if ts != nil {
			ts.TIDs = make([]int32, n)
		}
		b := measure.NewB(context.Background(), n, nil, nil)
		b.StartTimer()
		if err := s.Run(b); err != nil {
			t.Fatalf("%s: Run: %v", a.Name, err)
		}
		b.StopTimer()
		s.Close()
		if ts != nil {
			// Each op exits its locked thread, so the next op gets a new one.
			seen := map[int32]bool{}
			for _, tid := range ts.TIDs {
				if tid == 0 || seen[tid] {
					t.Errorf("%s: thread %d used twice or not at all in %v", a.Name, tid, ts.TIDs)
					break
				}
				seen[tid] = true
			}
		}
	}
	if a := child.Alive(); a != 0 {
		t.Errorf("%d children alive after spawn arms", a)
	}
	waitThreads(t, before, threadSlack)
}

func TestSpawnMemoryOrdered(t *testing.T) {
	before := taskCount(t)
	g, err := GoroutineMemory(context.Background(), 2000)
	if err != nil {
		t.Fatal(err)
	}
	th, err := ThreadMemory(context.Background(), 200)
	if err != nil {
		t.Fatal(err)
	}
	waitThreads(t, before, threadSlack)
	p, err := ProcessMemory(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if a := child.Alive(); a != 0 {
		t.Errorf("%d idle children alive after ProcessMemory", a)
	}
	t.Logf("goroutine %v\nthread %v\nprocess %v", g, th, p)
	for name, m := range map[string]map[string]float64{"goroutine": g, "thread": th, "process": p} {
		if m["rss-bytes/worker"] <= 0 {
			t.Errorf("%s: rss-bytes/worker %v, want > 0", name, m["rss-bytes/worker"])
		}
	}
	if g["stack-bytes/worker"] <= 0 || g["stack-start-bytes"] <= 0 {
		t.Errorf("goroutine stack figures not positive: %v", g)
	}
	if !(g["rss-bytes/worker"] < th["rss-bytes/worker"] && th["rss-bytes/worker"] < p["rss-bytes/worker"]) {
		t.Errorf("memory per worker not ordered goroutine < thread < process: %.0f, %.0f, %.0f",
			g["rss-bytes/worker"], th["rss-bytes/worker"], p["rss-bytes/worker"])
	}
	// The checks read the same figures off arms.
	arms := []result.Arm{
		{Name: "spawn/goroutine/go", Substrate: "goroutine", Status: result.StatusOK, Metrics: g},
		{Name: "spawn/thread/locked", Substrate: "thread", Status: result.StatusOK, Metrics: th},
		{Name: "spawn/process/exec", Substrate: "process", Status: result.StatusOK, Metrics: p},
	}
	var ordered bool
	for _, c := range spawnChecks(arms) {
		if strings.Contains(c.Name, "ordered") {
			ordered = c.Holds
		}
	}
	if !ordered {
		t.Error("the ordering check does not hold on the same figures")
	}
}
