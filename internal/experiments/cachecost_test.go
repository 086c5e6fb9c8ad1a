package experiments

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func ccParams(suite string, extra map[string]string, memAvail int64) exp.Params {
	h := &sysinfo.Host{}
	h.MemAvailableB = memAvail
	h.ThreadsMax = 100000
	return exp.Params{Suite: suite, CPUs: []int{0, 1}, Host: h, Options: settings(extra)}
}

func TestCachecostArmsQuick(t *testing.T) {
	arms, err := cachecostArms(ccParams(exp.SuiteQuick, nil, 16<<30))
	if err != nil {
		t.Fatal(err)
	}
	// Two W values, sequential, T = cores and T = 16×cores.
	want := []string{"cachecost/sweep/seq/W=256KiB/T=2", "cachecost/sweep/seq/W=256KiB/T=32",
		"cachecost/sweep/seq/W=8MiB/T=2", "cachecost/sweep/seq/W=8MiB/T=32"}
	if len(arms) != len(want) {
		t.Fatalf("quick arms: %d, want %d", len(arms), len(want))
	}
	for i, a := range arms {
		if a.Name != want[i] || !a.Quick || !a.Counters || a.Unit != "ns/element" || a.Unsupported != "" {
			t.Errorf("arm %d: %+v", i, a)
		}
		// GOMAXPROCS above T: the kernel, not the Go scheduler, multiplexes.
		if a.GOMAXPROCS <= atoi(a.Params["T"]) {
			t.Errorf("%s: GOMAXPROCS %d not above T", a.Name, a.GOMAXPROCS)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestCachecostArmsDefault(t *testing.T) {
	arms, err := cachecostArms(ccParams(exp.SuiteDefault, nil, 64<<30))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	count := map[string]int{}
	for _, a := range arms {
		if seen[a.Name] {
			t.Errorf("duplicate arm %s", a.Name)
		}
		seen[a.Name] = true
		count[a.Params["mode"]]++
		if a.Quick {
			t.Errorf("%s is quick in the default suite's arm list", a.Name)
		}
	}
	// 6 W × 2 patterns × 2 T, plus the GOMAXPROCS=cores variant at 2 W × 2 patterns.
	if count["sweep"] != 6*2*2+2*2 {
		t.Errorf("sweep arms: %d", count["sweep"])
	}
	if count["per-switch"] != len(perSwitchW) || count["per-switch-solo"] != len(perSwitchW)-1 || count["slice"] != 2 {
		t.Errorf("arm counts %v", count)
	}
	for _, n := range []string{"cachecost/sweep/random/W=128MiB/T=32", "cachecost/sweep/seq/W=32MiB/T=32/gomaxprocs=2",
		"cachecost/per-switch/pingpong/W=0", "cachecost/per-switch/solo/W=4MiB", "cachecost/slice/block-every=50µs"} {
		if !seen[n] {
			t.Errorf("missing arm %s", n)
		}
	}
}

func TestCachecostOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		extra map[string]string
		want  string
	}{
		{map[string]string{"cachecost.w": "abc"}, `"abc" is not a size`},
		{map[string]string{"cachecost.w": "1KiB"}, "1KiB is out of range; want 4KiB..1GiB"},
		{map[string]string{"cachecost.w": "2GiB"}, "out of range"},
		{map[string]string{"cachecost.t": "2"}, "cachecost.t=2: want a whole number of workers from 3"},
		{map[string]string{"cachecost.t": "99999"}, "to 4096"},
		{map[string]string{"cachecost.pattern": "zigzag"}, `"zigzag" is not a pattern`},
	} {
		_, err := armsWith(cachecostArms, ccParams(exp.SuiteDefault, nil, 16<<30), tc.extra)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want it to contain %q", tc.extra, err, tc.want)
		}
	}
	arms, err := cachecostArms(ccParams(exp.SuiteDefault, map[string]string{"cachecost.w": "64K,1MiB", "cachecost.t": "8", "cachecost.pattern": "random"}, 16<<30))
	if err != nil {
		t.Fatal(err)
	}
	if arms[0].Name != "cachecost/sweep/random/W=64KiB/T=2" || arms[1].Name != "cachecost/sweep/random/W=64KiB/T=8" {
		t.Errorf("options not applied: %s, %s", arms[0].Name, arms[1].Name)
	}
}

// A sweep whose working sets do not fit is refused before it starts.
func TestCachecostMemoryRefusal(t *testing.T) {
	_, err := cachecostArms(ccParams(exp.SuiteDefault, map[string]string{"cachecost.w": "32MiB"}, 256<<20))
	if err == nil || !strings.Contains(err.Error(), "W=32MiB × T=32 workers needs") ||
		!strings.Contains(err.Error(), "MemAvailable") || !strings.Contains(err.Error(), "--set cachecost.w=4MiB") {
		t.Fatalf("err = %v", err)
	}
	// Default sizes that do not fit are listed as unsupported, with the reason.
	arms, err := cachecostArms(ccParams(exp.SuiteDefault, nil, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	var unsup, ok int
	for _, a := range arms {
		if a.Params["mode"] != "sweep" {
			continue
		}
		if a.Unsupported != "" {
			unsup++
			if !strings.Contains(a.Unsupported, "smaller W") {
				t.Errorf("%s: %q", a.Name, a.Unsupported)
			}
		} else {
			ok++
		}
	}
	if unsup == 0 || ok == 0 {
		t.Errorf("with 1 GiB available: %d unsupported, %d runnable sweep arms", unsup, ok)
	}
}

func sweepArm(pattern, w, t string, median, min, max, oncpu float64) result.Arm {
	wb, _ := result.ParseSize(w)
	return result.Arm{Name: "cachecost/sweep/" + pattern + "/W=" + w + "/T=" + t, Status: result.StatusOK,
		Params: map[string]string{"mode": "sweep", "pattern": pattern, "W": w, "W_bytes": itoa(wb), "T": t, "cores": "2", "multiplexer": "kernel"},
		Median: median, Min: min, Max: max, Metrics: map[string]float64{"oncpu-ns/element": oncpu, "runq-wait-ns/element": 1}}
}

func itoa(n int64) string { return strings.TrimSpace(strings.Replace(fmtSizeRaw(n), " ", "", -1)) }

func fmtSizeRaw(n int64) string {
	var b []byte
	if n == 0 {
		return "0"
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func pswArm(mode, w string, median float64) result.Arm {
	wb, _ := result.ParseSize(w)
	return result.Arm{Name: "cachecost/per-switch/" + mode + "/W=" + w, Status: result.StatusOK, Median: median,
		Params: map[string]string{"mode": map[string]string{"pingpong": "per-switch", "solo": "per-switch-solo"}[mode], "W_bytes": itoa(wb)}}
}

func TestCachecostChecks(t *testing.T) {
	arms := []result.Arm{
		sweepArm("random", "8MiB", "2", 10, 9, 11, 20),
		sweepArm("random", "8MiB", "32", 14, 12, 15, 26),   // measurably slower
		sweepArm("random", "32MiB", "2", 20, 18, 22, 40),   // overlapping ranges:
		sweepArm("random", "32MiB", "32", 21, 19, 23, 41),  // not measurably slower
		sweepArm("random", "256KiB", "32", 99, 99, 99, 99), // below 8 MiB: no check
		pswArm("pingpong", "0", 8000),
		pswArm("pingpong", "16KiB", 30000), pswArm("solo", "16KiB", 20000),
		pswArm("pingpong", "1MiB", 5e6), pswArm("solo", "1MiB", 4e6),
	}
	checks := cachecostChecks(arms)
	if len(checks) != 3 {
		t.Fatalf("checks: %+v", checks)
	}
	if !checks[0].Holds || checks[1].Holds {
		t.Errorf("sweep checks: %+v", checks[:2])
	}
	if !strings.Contains(checks[0].Detail, "W=8MiB") || !strings.Contains(checks[0].Detail, "+40%") {
		t.Errorf("detail %q", checks[0].Detail)
	}
	// indirect = (RT − solo − RT(0)) / 2: 16KiB → 1 µs, 1MiB → 496 µs.
	pts, zero, ok := indirectCurve(arms)
	if !ok || zero.Median != 8000 || len(pts) != 2 || pts[0].ns != 1000 || pts[1].ns != 496000 {
		t.Fatalf("curve %+v W=0 %v", pts, zero.Median)
	}
	if c := checks[2]; !c.Holds || !strings.Contains(c.Detail, "16KiB 1 µs") {
		t.Errorf("per-switch check %+v", c)
	}
	f := strings.Join(cachecostFindings(arms), "\n")
	for _, want := range []string{"sweep random W=8MiB: T=32 vs T=2 wall +40%", "on-CPU time per element +30%", "round trip without data (W=0) 8 µs"} {
		if !strings.Contains(f, want) {
			t.Errorf("findings lack %q:\n%s", want, f)
		}
	}
	if regexp.MustCompile(`(^|[^n])direct cost`).MatchString(f) {
		t.Errorf("findings price a switch, which only price.DirectCost does:\n%s", f)
	}
	// Other processes held the CPUs at T = cores: not evaluated, with the reason.
	busy := append([]result.Arm(nil), arms[:2]...)
	busy[0].Metrics = map[string]float64{"oncpu-ns/element": 20, "runq-wait-ns/element": 30}
	if c := cachecostChecks(busy); len(c) != 1 || !c[0].Skipped || c[0].Holds || !strings.Contains(c[0].Detail, "other processes held these CPUs") {
		t.Errorf("shared CPUs: %+v", c)
	}
	// No per-switch or random arms (the quick suite): no checks at all.
	if c := cachecostChecks(arms[4:5]); len(c) != 0 {
		t.Errorf("checks from nothing: %+v", c)
	}
}

// measureBench runs an opened bench through the runner with tiny
// repetitions, the only way its figures are taken.
func measureBench(t *testing.T, name string, open func() (exp.Bench, error)) (result.Arm, []int) {
	t.Helper()
	var tids []int
	spec, _ := exp.Lookup("cachecost")
	r := runner.Arm(context.Background(), tinyConfig(), spec, exp.Arm{Name: "cachecost/test/" + name, Open: func(context.Context) (exp.Bench, error) {
		bn, err := open()
		if err == nil {
			tids = bn.Participants().TIDs
		}
		return bn, err
	}})
	// Finished: ok, or too few ops where a busy machine makes an op slow
	// for the tiny benchtime (its figures are kept all the same).
	if r.Status != result.StatusOK && r.Status != result.StatusTooFewOps {
		t.Fatalf("%s: %s (%s)", name, r.Status, r.Reason)
	}
	return r, tids
}

func TestSweepBench(t *testing.T) {
	r, tids := measureBench(t, "sweep", func() (exp.Bench, error) { return openSweep(context.Background(), 3, 16<<10, true) })
	if len(tids) != 3 || tids[0] == tids[1] || tids[1] == tids[2] {
		t.Fatalf("threads %v", tids)
	}
	if r.Metrics["oncpu-ns/element"] <= 0 || r.CPUNsPerOp == nil || r.Metrics["oncpu-ns/element"] != *r.CPUNsPerOp {
		t.Errorf("on-CPU per element: metrics %v, cpu per op %v", r.Metrics, r.CPUNsPerOp)
	}
	if _, ok := r.Metrics["runq-wait-ns/element"]; !ok {
		t.Errorf("no run-queue wait figure: %v %v", r.Metrics, r.Notes)
	}
	waitTIDsGone(t, tids)
}

func TestPairBenches(t *testing.T) {
	var tids []int
	for _, tc := range []struct {
		name   string
		open   func() (exp.Bench, error)
		metric string
	}{
		{"per-switch W=0", func() (exp.Bench, error) { return openPairBench([]int{0}, 0, 0, 0) }, ""},
		{"per-switch W=16KiB", func() (exp.Bench, error) { return openPairBench([]int{0}, 16<<10, 16<<10, 0) }, ""},
		{"slice", func() (exp.Bench, error) { return openPairBench([]int{0}, 64<<10, 256<<10, 50_000) }, "worker-oncpu-ns/element"},
		{"solo", func() (exp.Bench, error) { return openSolo([]int{0}, 16<<10) }, ""},
	} {
		r, th := measureBench(t, tc.name, tc.open)
		if len(th) == 0 {
			t.Errorf("%s: no participating threads", tc.name)
		}
		tids = append(tids, th...)
		if tc.metric != "" && r.Metrics[tc.metric] <= 0 {
			t.Errorf("%s: %s = %v", tc.name, tc.metric, r.Metrics)
		}
	}
	waitTIDsGone(t, tids)
}

// Close from another goroutine unblocks a Run in progress (the runner's
// timeout path), for every bench kind.
func TestCachecostCloseUnblocksRun(t *testing.T) {
	for _, open := range []func() (exp.Bench, error){
		func() (exp.Bench, error) { return openSweep(context.Background(), 2, 64<<10, false) },
		func() (exp.Bench, error) { return openPairBench([]int{0}, 4<<10, 4<<10, 0) },
		func() (exp.Bench, error) { return openPairBench([]int{0}, 4<<10, 4<<10, 50_000) },
		func() (exp.Bench, error) { return openSolo([]int{0}, 4<<10) },
	} {
		bn, err := open()
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := measure.NewB(context.Background(), 1<<40, nil, nil)
			bn.(exp.Loop).Run(b)
		}()
		time.Sleep(20 * time.Millisecond)
		done := make(chan struct{})
		go func() { bn.Close(); wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not unblock Run")
		}
	}
}
