package experiments

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func TestYieldEveryWorkerYields(t *testing.T) {
	for _, threads := range []bool{false, true} {
		for _, k := range []int{1, 7, 100} {
			y, err := OpenYield(context.Background(), k, threads, nil)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range []int{3*k + 5, k, 1} {
				b := measure.NewB(context.Background(), n, nil, nil)
				b.StartTimer()
				if err := y.Run(b); err != nil {
					t.Fatalf("threads=%v k=%d: Run(%d): %v", threads, k, n, err)
				}
				b.StopTimer()
				total += n
			}
			y.Close()
			var sum int64
			for i, c := range y.Yields() {
				sum += c
				if c == 0 {
					t.Errorf("threads=%v k=%d: worker %d never yielded", threads, k, i)
				}
			}
			if sum != int64(total) {
				t.Errorf("threads=%v k=%d: %d yields counted, want %d", threads, k, sum, total)
			}
		}
	}
}

func TestYieldCloseMidRun(t *testing.T) {
	// As the arms do: a P per thread, so Go's scheduler stays out of the way.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(51))
	y, err := OpenYield(context.Background(), 50, true, [][]int{{0}})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		b := measure.NewB(context.Background(), 1<<50, nil, nil)
		b.StartTimer()
		errc <- y.Run(b)
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	y.Close()
	t.Logf("Close of 50 yielding threads took %v", time.Since(start))
	select {
	case err := <-errc:
		if err == nil {
			t.Error("Run cut short by Close returned nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of Close")
	}
	// Idle runtime threads for the 51 Ps may stay; the workers' own may not.
	waitTIDsGone(t, y.TIDs())
}

func TestYieldArmsAndLimits(t *testing.T) {
	h := sysinfo.Detect()
	arms, err := yieldArms(exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0, 1}, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]exp.Arm{}
	for _, a := range arms {
		names[a.Name] = a
	}
	for _, want := range []string{"yield/goroutine/gosched/k=10000/gomaxprocs=1", "yield/goroutine/gosched/k=1/gomaxprocs=all",
		"yield/thread/sched_yield/k=1/alone", "yield/thread/sched_yield/k=2/own-cpu", "yield/thread/sched_yield/k=1000/same-cpu"} {
		if _, ok := names[want]; !ok {
			t.Errorf("missing arm %s", want)
		}
	}
	if a := names["yield/thread/sched_yield/k=100/same-cpu"]; a.GOMAXPROCS != 101 || len(a.CPUs) != 1 {
		t.Errorf("k=100 same-cpu: GOMAXPROCS %d CPUs %v, want 101 and one CPU", a.GOMAXPROCS, a.CPUs)
	}
	small := &sysinfo.Host{}
	small.ThreadsMax, small.NprocLimit = 1000, -1
	_, err = yieldArms(exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0}, Host: small, Workers: []int{5000}})
	if err == nil || !strings.Contains(err.Error(), "5000") || !strings.Contains(err.Error(), "threads-max (1000)") {
		t.Errorf("5000 threads over threads-max 1000: %v", err)
	}
	_, err = yieldArms(exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0}, Host: small, Workers: []int{200000}})
	if err == nil || !strings.Contains(err.Error(), "100000") {
		t.Errorf("200000 goroutines: %v", err)
	}
}

func TestYieldChecks(t *testing.T) {
	arms := []result.Arm{
		{Name: "floor", Substrate: "thread", Placement: "alone", Params: map[string]string{"k": "1"}, Status: result.StatusOK, Median: 100, Switches: &result.Switches{Involuntary: 0.001}},
		{Name: "same", Substrate: "thread", Placement: "same-cpu", Params: map[string]string{"k": "10"}, Status: result.StatusOK, Median: 900, Switches: &result.Switches{Involuntary: 0.2}},
	}
	cs := yieldChecks(arms)
	if len(cs) != 2 || !cs[0].Holds || cs[1].Holds {
		t.Errorf("checks %+v: want the floor to hold and 0.2 switches/yield on one CPU not to", cs)
	}
}
