package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/quantum"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"golang.org/x/sys/unix"
)

func TestPlanInterference(t *testing.T) {
	for _, suite := range []string{exp.SuiteQuick, exp.SuiteDefault, exp.SuiteFull} {
		plan := planInterference(suite, defaultHogs(suite), 4)
		names := map[string]bool{}
		starve := 0
		for _, a := range plan {
			if names[a.name()] {
				t.Errorf("%s: duplicate arm %s", suite, a.name())
			}
			names[a.name()] = true
			if a.shape == shapeStarve {
				starve++
			}
		}
		for _, must := range []string{
			"interference/timer/goroutine-spin/hogs=1/gomaxprocs=1",
			"interference/timer/process-spin/hogs=1/gomaxprocs=1",
			"interference/timer/goroutine-spin/hogs=1/gomaxprocs=2",
			"interference/chanpair/none/hogs=0/gomaxprocs=1",
			"interference/chanpair/goroutine-spin/hogs=1/gomaxprocs=1",
		} {
			if !names[must] {
				t.Errorf("%s suite lacks %s", suite, must)
			}
		}
		switch suite {
		case exp.SuiteQuick:
			if starve != 0 || len(plan) > 8 {
				t.Errorf("quick suite: %d arms, %d starvation arms; want ≤ 8 and none", len(plan), starve)
			}
		default:
			if starve != 2 {
				t.Errorf("%s suite: %d starvation arms, want 2", suite, starve)
			}
		}
		if suite == exp.SuiteFull {
			for _, must := range []string{
				"interference/netpoll/goroutine-spin/hogs=6/gomaxprocs=7",
				"interference/timer/thread-spin/hogs=2/gomaxprocs=1",
				"interference/timer/goroutine-stream/hogs=1/gomaxprocs=1",
				"interference/procpipe/process-stream/hogs=6/gomaxprocs=2",
				"interference/futex/thread-spin/hogs=6/gomaxprocs=8",
				"interference/timer/goroutine-spin/hogs=1/gomaxprocs=4", // all CPUs
				"interference/timer/goroutine-spin/hogs=6/gomaxprocs=4",
			} {
				if !names[must] {
					t.Errorf("full suite lacks %s", must)
				}
			}
		}
	}
}

func TestHogCountValidation(t *testing.T) {
	host := &sysinfo.Host{}
	host.OnlineCPUs = []int{0, 1}
	host.ThreadsMax = 800
	host.NprocLimit = 4000
	host.MemAvailableB = 64 << 30
	p := exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0, 1}, Host: host}
	for _, c := range []struct {
		hogs []int
		want string // "" = accepted
	}{
		{[]int{0, 1, 2, 6}, ""},
		{[]int{-1}, "--hogs -1: must be 0 or more"},
		{[]int{1, 101}, "--hogs 101: at most 100 hogs here (1/8 of threads-max 800)"},
	} {
		p.Hogs = c.hogs
		_, err := interferenceArms(p)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("hogs %v: unexpected error %v", c.hogs, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("hogs %v: got error %v, want %q", c.hogs, err, c.want)
		}
	}
	host.ThreadsMax, host.NprocLimit = 1<<20, 40
	p.Hogs = []int{11}
	if _, err := interferenceArms(p); err == nil || !strings.Contains(err.Error(), "RLIMIT_NPROC 40") {
		t.Errorf("RLIMIT_NPROC: got %v", err)
	}
	host.NprocLimit, host.MemAvailableB = -1, 1<<30
	p.Hogs = []int{64}
	if _, err := interferenceArms(p); err == nil || !strings.Contains(err.Error(), "available memory") {
		t.Errorf("memory: got %v", err)
	}
}

// testCfg is a small runner config: tests assert structure, never times.
func testCfg(bench, timeout time.Duration) runner.Config {
	return runner.Config{Reps: 2, BenchTime: bench, WarmUp: 10 * time.Millisecond, WarmUpOps: 1000,
		Timeout: timeout, MaxSamples: 20000, ClockCost: 30, Host: sysinfo.Detect()}
}

// captured runs arm a through the runner and returns the result and the
// bench it opened, so a test can look for its hogs afterwards.
func captured(t *testing.T, ctx context.Context, cfg runner.Config, a ifArm) (result.Arm, *ifBench) {
	t.Helper()
	spec, ok := exp.Lookup("interference")
	if !ok {
		t.Fatal("interference not registered")
	}
	a.hog.BufBytes = 8 << 20
	qs, _ := quantaFor(cfg.Host, true)
	var got *ifBench
	arm := exp.Arm{Name: a.name(), GOMAXPROCS: a.gmp, Op: shapeOps[a.shape],
		Params: map[string]string{"hog": a.hog.Place + "-" + a.hog.Kind}}
	if a.shape == shapeStarve {
		arm.Timeout = starveLimit
	}
	arm.Open = func(ctx context.Context) (exp.Bench, error) {
		b, err := openInterference(ctx, a, qs, "", []int{0})
		if err == nil {
			got = b.(*ifBench)
		}
		return b, err
	}
	r := runner.Arm(ctx, cfg, spec, arm)
	if got == nil {
		t.Fatalf("%s did not open: %s %s", a.name(), r.Status, r.Reason)
	}
	return r, got
}

// assertHogsGone fails unless every hog thread has left /proc/self/task
// and every child process is reaped and gone.
func assertHogsGone(t *testing.T, x *ifBench, pids []int) {
	t.Helper()
	if x.hogs != nil {
		for _, tid := range x.hogs.TIDs() {
			if tid == os.Getpid() {
				// A locked goroutine that exits on the main thread parks
				// it (the main thread cannot exit): prove it no longer spins.
				if cpu := threadCPU(t, tid, 300*time.Millisecond); cpu > 100*time.Millisecond {
					t.Errorf("main thread %d still burns CPU (%v in 300 ms) after the hogs stopped", tid, cpu)
				}
				continue
			}
			path := fmt.Sprintf("/proc/self/task/%d", tid)
			deadline := time.Now().Add(3 * time.Second)
			for {
				if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("hog thread %d still exists", tid)
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	if n := child.Alive(); n != 0 {
		t.Errorf("%d child processes still alive", n)
	}
	for _, pid := range pids {
		if err := unix.Kill(pid, 0); err != unix.ESRCH {
			t.Errorf("child %d still exists (kill 0: %v)", pid, err)
		}
	}
}

// threadCPU is the CPU time thread tid uses over d (utime+stime from /proc).
func threadCPU(t *testing.T, tid int, d time.Duration) time.Duration {
	read := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		var u, s int64
		fmt.Sscan(f[11], &u)
		fmt.Sscan(f[12], &s)
		return u + s
	}
	a := read()
	time.Sleep(d)
	return time.Duration(read()-a) * 10 * time.Millisecond // USER_HZ = 100
}

func hogPIDs(x *ifBench) []int {
	pids := append([]int(nil), x.Participants().PIDs...)
	if x.hogs != nil {
		pids = append(pids, x.hogs.PIDs()...)
	}
	return pids
}

func TestHogCleanupSuccess(t *testing.T) {
	for _, a := range []ifArm{
		{shape: shapeTimer, hog: hogSpec{N: 2, Place: hogThread, Kind: hogSpin}, gmp: 2},
		{shape: shapeNetpoll, hog: hogSpec{N: 2, Place: hogProcess, Kind: hogSpin}, gmp: 2},
		{shape: shapeChanPair, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogStream}, gmp: 1},
	} {
		t.Run(a.name(), func(t *testing.T) {
			r, x := captured(t, context.Background(), testCfg(20*time.Millisecond, 20*time.Second), a)
			// A 20 ms benchtime leaves a timer behind two hogs on a busy
			// 2-CPU machine (~17 ms an op) too few ops: finished all the same.
			if r.Status != result.StatusOK && r.Status != result.StatusTooFewOps {
				t.Fatalf("status %s: %s", r.Status, r.Reason)
			}
			if r.Percentiles == nil || r.Percentiles.Samples == 0 || len(r.Histogram) == 0 {
				t.Errorf("no percentiles or histogram: %+v", r.Percentiles)
			}
			if _, ok := r.Metrics["go-sched-wakeups"]; !ok {
				t.Errorf("no runtime/metrics sched latency in %v", r.Metrics)
			}
			if len(x.hogs.TIDs())+len(x.hogs.PIDs()) == 0 && a.hog.Place != hogGoroutine {
				t.Errorf("no hog threads or processes recorded")
			}
			assertHogsGone(t, x, hogPIDs(x))
		})
	}
}

func TestHogCleanupTimeout(t *testing.T) {
	// A 20 s repetition under a 1 s limit: the arm must time out and take
	// its hogs (threads and processes) down with it. (Sizing alone needs a
	// batch of a tenth of the benchtime, 2 s, so it cannot finish in time
	// even when a hog-slowed batch makes the op look slow: with 5 s, a
	// batch of 0.5 s did, the repetitions came out short, and it ended ok.)
	for _, a := range []ifArm{
		{shape: shapeTimer, hog: hogSpec{N: 2, Place: hogThread, Kind: hogSpin}, gmp: 1},
		{shape: shapeProcPipe, hog: hogSpec{N: 1, Place: hogProcess, Kind: hogSpin}, gmp: 2},
	} {
		t.Run(a.name(), func(t *testing.T) {
			r, x := captured(t, context.Background(), testCfg(20*time.Second, time.Second), a)
			if r.Status != result.StatusTimedOut {
				t.Fatalf("status %s (%s), want timed out", r.Status, r.Reason)
			}
			assertHogsGone(t, x, hogPIDs(x))
		})
	}
}

// interruptAfter returns a context cancelled by SIGINT, as the CLI's is,
// and sends this process a real SIGINT after d. The returned func waits
// for the signal to have been sent before unregistering, so a stray SIGINT
// can never kill the test binary.
func interruptAfter(d time.Duration) (context.Context, func()) {
	time.Sleep(measure.PerfSettleLeft()) // an earlier test's counters: interrupt the arm, not the settle
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		time.Sleep(d)
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}()
	return ctx, func() {
		<-sent
		<-ctx.Done()
		stop()
	}
}

func TestHogCleanupSIGINT(t *testing.T) {
	for _, a := range []ifArm{
		{shape: shapeNetpoll, hog: hogSpec{N: 2, Place: hogProcess, Kind: hogSpin}, gmp: 1},
		{shape: shapeTimer, hog: hogSpec{N: 2, Place: hogThread, Kind: hogSpin}, gmp: 1},
	} {
		t.Run(a.name(), func(t *testing.T) {
			ctx, done := interruptAfter(400 * time.Millisecond)
			r, x := captured(t, ctx, testCfg(5*time.Second, 20*time.Second), a)
			done()
			if r.Status != result.StatusInterrupted {
				t.Fatalf("status %s (%s), want interrupted", r.Status, r.Reason)
			}
			assertHogsGone(t, x, hogPIDs(x))
		})
	}
}

func TestStarvationTimesOut(t *testing.T) {
	// GODEBUG=asyncpreemptoff=1 and GOMAXPROCS=1 in a child: the hog is
	// never preempted. The arm ends "timed out" within its limit with the
	// samples it got, and the child (with its hog) is gone.
	a := ifArm{shape: shapeStarve, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogSpin}, gmp: 1, preemptOff: true}
	limit := 2 * time.Second
	start := time.Now()
	r, x := captured(t, context.Background(), testCfg(time.Second, limit), a)
	took := time.Since(start)
	if r.Status != result.StatusTimedOut {
		t.Fatalf("status %s (%s), want timed out", r.Status, r.Reason)
	}
	if !strings.Contains(r.Reason, limit.String()) {
		t.Errorf("reason %q does not name the %v limit", r.Reason, limit)
	}
	// The runner waits at most 5 s for a stuck arm after the limit; this one
	// must not need it (Close kills the child, which ends Run at once).
	if took > limit+4*time.Second {
		t.Errorf("took %v for a %v limit", took, limit)
	}
	if r.Percentiles == nil || r.Percentiles.Samples < starveAfter {
		t.Errorf("want ≥ %d samples from before the starvation, got %+v", starveAfter, r.Percentiles)
	}
	if r.Metrics["starve-samples"] < starveAfter {
		t.Errorf("metrics %v", r.Metrics)
	}
	joined := strings.Join(r.Notes, "\n")
	if !strings.Contains(joined, "never ran again") {
		t.Errorf("notes do not explain the starvation:\n%s", joined)
	}
	assertHogsGone(t, x, x.Participants().PIDs)

	// The fix: Gosched in the hog's loop lets the same child finish.
	a.hog.Kind = hogGosched
	r, x = captured(t, context.Background(), testCfg(30*time.Millisecond, 10*time.Second), a)
	if r.Status != result.StatusOK {
		t.Fatalf("gosched hog: status %s (%s), want ok", r.Status, r.Reason)
	}
	if r.Metrics["starve-samples-after-hog"] < 1 {
		t.Errorf("gosched hog: no wake-up after the hog started: %v", r.Metrics)
	}
	assertHogsGone(t, x, x.Participants().PIDs)
}

func TestInterferenceChecks(t *testing.T) {
	mk := func(name string, p50, p99, max float64, m map[string]float64) result.Arm {
		parts := strings.Split(name, "/")
		return result.Arm{Name: name, Status: result.StatusOK, Mechanism: parts[1],
			Params:      map[string]string{"hog": parts[2], "hogs": strings.TrimPrefix(parts[3], "hogs=")},
			Percentiles: &result.Percentiles{Samples: 100, P50: p50, P99: p99, Max: max}, Metrics: m}
	}
	arms := []result.Arm{
		mk("interference/timer/goroutine-spin/hogs=1/gomaxprocs=1", 19e6, 39e6, 40e6, map[string]float64{"p50-go-preempt-periods": 2}),
		mk("interference/timer/process-spin/hogs=1/gomaxprocs=1", 70e3, 2e6, 3e6, nil),
		mk("interference/timer/goroutine-spin/hogs=1/gomaxprocs=2", 70e3, 6e6, 7e6, nil),
		mk("interference/chanpair/none/hogs=0/gomaxprocs=1", 29e3, 50e3, 1e6, nil),
		mk("interference/chanpair/goroutine-spin/hogs=1/gomaxprocs=1", 30e3, 52e3, 20e6, map[string]float64{"go-preempt-samples": 3}),
		{Name: "interference/starve/goroutine-spin/hogs=1/gomaxprocs=1/asyncpreemptoff", Mechanism: shapeStarve,
			Status: result.StatusTimedOut, Params: map[string]string{"hog": "goroutine-spin"}},
	}
	want := []bool{true, true, false, true, true}
	got := interferenceChecks(arms)
	if len(got) != len(want) {
		t.Fatalf("got %d checks, want %d: %+v", len(got), len(want), got)
	}
	for i, c := range got {
		if c.Holds != want[i] {
			t.Errorf("check %d %q: holds=%v, want %v (%s)", i, c.Name, c.Holds, want[i], c.Detail)
		}
	}
	if f := interferenceFindings(arms); len(f) != 2 || !strings.Contains(f[0], "hogs in a process → p99 2 ms") {
		t.Errorf("findings: %q", f)
	}
}

func TestAnnotateQuantum(t *testing.T) {
	qs := []quantum.Quantum{quantum.GoPreemption(), quantum.KernelSlice(1_400_000, "EEVDF", "test"), quantum.Tick(250)}
	x := &ifBench{arm: ifArm{shape: shapeTimer, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogSpin}}, quanta: qs}
	// 30 wake-ups piled at 19.5–21 ms, 10 fast ones: p50 sits in the pile.
	var samples []int64
	for i := 0; i < 10; i++ {
		samples = append(samples, 60_000+int64(i)*1000)
	}
	for i := 0; i < 30; i++ {
		samples = append(samples, 19_500_000+int64(i)*50_000)
	}
	var r result.Arm
	x.Analyze(&exp.Record{Samples: samples, Ops: 40}, &r)
	if r.Metrics["p50-go-preempt-periods"] != 2 || r.Metrics["p50-in-pile"] != 1 || r.Metrics["go-preempt-samples"] != 30 {
		t.Errorf("metrics %v", r.Metrics)
	}
	if j := strings.Join(r.Notes, "\n"); !strings.Contains(j, "p50 sits at") || !strings.Contains(j, "2 sysmon periods") {
		t.Errorf("notes:\n%s", j)
	}
	// Smeared over 10–40 ms (no pile): p50 itself is still read.
	samples = samples[:0]
	for i := 0; i < 40; i++ {
		samples = append(samples, 10_000_000+int64(i)*750_000)
	}
	r = result.Arm{}
	x.Analyze(&exp.Record{Samples: samples, Ops: 40}, &r)
	if r.Metrics["p50-in-pile"] != 0 || r.Metrics["p50-go-preempt-periods"] != 2 {
		t.Errorf("smear: metrics %v", r.Metrics)
	}
}
