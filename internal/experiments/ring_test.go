package experiments

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// expectedHops is how many tokens worker j receives in one batch of hops
// hops around a ring of n: the driver (0) at hops n, 2n, …; worker j ≥ 1 at
// hops j, j+n, ….
func expectedHops(n, hops, j int) int64 {
	if j == 0 {
		return int64(hops / n)
	}
	if hops < j {
		return 0
	}
	return int64((hops-j)/n + 1)
}

func TestRingHopsCounted(t *testing.T) {
	for _, k := range ringKinds {
		k := k
		n := 7
		if k.sub == "process" {
			n = 4
		}
		t.Run(k.sub+"/"+k.mech, func(t *testing.T) {
			r, err := OpenRing(context.Background(), k.sub, k.mech, n)
			if err != nil {
				t.Fatal(err)
			}
			// A partial lap, an exact number of laps, a single hop.
			batches := []int{3*n + 2, 2 * n, 1, n - 1}
			want := make([]int64, n)
			total := 0
			for _, h := range batches {
				b := measure.NewB(context.Background(), h, nil, nil)
				b.StartTimer()
				if err := r.Run(b); err != nil {
					r.Close()
					t.Fatalf("Run(%d hops): %v", h, err)
				}
				b.StopTimer()
				total += h
				for j := range want {
					want[j] += expectedHops(n, h, j)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			got := r.Hops()
			if k.sub == "process" {
				// Children count their own; the driver's count and the
				// token's value (checked each lap) cover the ring.
				if got[0] != want[0] {
					t.Errorf("driver received %d tokens, want %d", got[0], want[0])
				}
				return
			}
			var sum int64
			for j, g := range got {
				sum += g
				if g != want[j] {
					t.Errorf("worker %d received %d tokens, want %d", j, g, want[j])
				}
				if g == 0 {
					t.Errorf("worker %d took no part", j)
				}
			}
			if sum != int64(total) {
				t.Errorf("hops counted %d, want %d (N × laps + partial laps)", sum, total)
			}
		})
	}
}

func TestRingLimits(t *testing.T) {
	h := &sysinfo.Host{}
	h.ThreadsMax, h.NprocLimit, h.MemAvailableB = 5000, 300, 8<<30
	cases := []struct {
		sub, mech string
		n         int
		want      []string // all in the message; none = no error
	}{
		{"goroutine", "chan", 1, []string{"--workers 1", "at least 2"}},
		{"goroutine", "chan", 100000, nil},
		{"goroutine", "chan", 100001, []string{"100001", "100000"}},
		{"thread", "futex", 100, nil},
		{"thread", "futex", 1000, []string{"--workers 1000", "RLIMIT_NPROC (300)", "at most 118"}},
		{"process", "pipe", 100, []string{"--workers 100", "RLIMIT_NPROC (300)"}},
		{"process", "pipe", 20, nil},
	}
	for _, c := range cases {
		err := RingLimit(c.sub, c.mech, c.n, h)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s %d: unexpected error %v", c.sub, c.n, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s %d: no error, want one naming %v", c.sub, c.n, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %d: %q does not name %q", c.sub, c.n, err, w)
			}
		}
	}
	// threads-max binds when it is the smaller; memory binds processes.
	h2 := &sysinfo.Host{}
	h2.ThreadsMax, h2.NprocLimit, h2.MemAvailableB = 500, -1, 64<<20
	if err := RingLimit("thread", "futex", 1000, h2); err == nil || !strings.Contains(err.Error(), "threads-max (500)") {
		t.Errorf("threads-max not named: %v", err)
	}
	if err := RingLimit("process", "pipe", 10, h2); err == nil || !strings.Contains(err.Error(), "MemAvailable") {
		t.Errorf("memory not named: %v", err)
	}
	// Through Arms (what the CLI turns into exit 2): refused before anything starts.
	p := exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0}, Host: h, Workers: []int{2, 1000}}
	if _, err := ringArms(p); err == nil || !strings.Contains(err.Error(), "1000") {
		t.Errorf("ringArms with 1000 threads over RLIMIT_NPROC 300: %v", err)
	}
	p.Options = settings(map[string]string{"ring.substrates": "goroutine"})
	arms, err := ringArms(p)
	if err != nil {
		t.Fatalf("goroutines only: %v", err)
	}
	for _, a := range arms {
		if a.Substrate != "goroutine" {
			t.Errorf("ring.substrates=goroutine gave %s", a.Name)
		}
	}
	if _, err := armsWith(ringArms, p, map[string]string{"ring.substrates": "fibre"}); err == nil || !strings.Contains(err.Error(), "fibre") {
		t.Errorf("bad substrate not named: %v", err)
	}
}

func TestRingArmsDefault(t *testing.T) {
	h := sysinfo.Detect()
	p := exp.Params{Suite: exp.SuiteQuick, CPUs: h.OnlineCPUs, Host: h}
	arms, err := ringArms(p)
	if err != nil {
		t.Fatal(err)
	}
	quick, names := 0, map[string]bool{}
	for _, a := range arms {
		if names[a.Name] {
			t.Errorf("duplicate arm %s", a.Name)
		}
		names[a.Name] = true
		if a.Quick {
			quick++
		}
	}
	// Every quick ring, and the reference ping-pong of its 2-thread ring.
	if quick != len(quickRing)+1 {
		t.Errorf("%d quick arms, want %d", quick, len(quickRing)+1)
	}
	for _, want := range []string{"ring/goroutine/chan/n=10000/unpinned", "ring/thread/futex/n=1000/same-cpu", "ring/process/pipe/n=100/unpinned", "ring/thread/pipe/n=2/unpinned", "ring/thread/futex/pingpong/same-cpu"} {
		if !names[want] {
			t.Errorf("missing arm %s", want)
		}
	}
}

// taskCount is the number of threads of this process.
func taskCount(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// threadSlack: idle runtime threads (Ms) that may be created while the test
// runs and are kept parked by the Go runtime; far below any ring's size.
// The exact proof is waitTIDsGone; this bounds the total as well.
const threadSlack = 8

// waitThreads waits until the thread count is back within slack of before.
func waitThreads(t *testing.T, before, slack int) {
	t.Helper()
	deadline, last := time.Now().Add(10*time.Second), -1
	for {
		n := taskCount(t)
		if n <= before+slack {
			return
		}
		if n < last || last < 0 { // threads still ending: a loaded machine is slow to run their exits
			deadline, last = time.Now().Add(10*time.Second), n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d threads left after Close, %d before, none ended in 10 s: ring threads survived", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitTIDsGone waits until none of tids is a thread of this process (every
// test that proves workers' threads are gone uses it): the
// workers' own OS threads, so the proof does not depend on how many idle
// threads the Go runtime keeps.
func waitTIDsGone(t *testing.T, tids []int) {
	t.Helper()
	if len(tids) == 0 {
		t.Fatal("no worker threads recorded")
	}
	deadline, last := time.Now().Add(10*time.Second), -1
	for {
		left := 0
		for _, tid := range tids {
			if tid == os.Getpid() {
				continue // a locked goroutine that ends on the main thread parks it instead
			}
			if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid)); err == nil {
				left++
			}
		}
		if left == 0 {
			return
		}
		if left < last || last < 0 { // still ending
			deadline, last = time.Now().Add(10*time.Second), left
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d worker threads still exist after Close, none ended in 10 s", left, len(tids))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ourChildren lists live processes whose parent is this process.
func ourChildren(t *testing.T) []int {
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so split after ')'.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me {
			out = append(out, pid)
		}
	}
	return out
}

// runUntilClosed starts a practically endless Run, lets it go for a while,
// then calls Close from another goroutine as the runner does on timeout or
// Ctrl-C, and checks Run returns promptly.
func runUntilClosed(t *testing.T, r *Ring, after time.Duration) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		b := measure.NewB(context.Background(), 1<<50, nil, nil)
		b.StartTimer()
		errc <- r.Run(b)
	}()
	time.Sleep(after)
	start := time.Now()
	r.Close()
	select {
	case err := <-errc:
		if err == nil || !errors.Is(err, mech.ErrStopped) {
			t.Errorf("Run after Close returned %v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of Close")
	}
	t.Logf("teardown of %d %s workers took %v", r.N, r.sub, time.Since(start))
}

func TestRingCloseMidRunThreads(t *testing.T) {
	big := 1000
	if testing.Short() {
		big = 200
	}
	for _, c := range []struct {
		mech string
		n    int
	}{{"futex", big}, {"chan", 100}, {"pipe", 100}} {
		t.Run(c.mech, func(t *testing.T) {
			before := taskCount(t)
			r, err := OpenRing(context.Background(), "thread", c.mech, c.n)
			if err != nil {
				t.Fatal(err)
			}
			// Locked workers may reuse idle runtime threads, so at least n, not before+n.
			if during := taskCount(t); during < c.n {
				t.Fatalf("%d threads during a %d-thread ring (%d before)", during, c.n, before)
			}
			tids := r.TIDs()
			if len(tids) != c.n {
				t.Fatalf("%d thread ids for a ring of %d", len(tids), c.n)
			}
			runUntilClosed(t, r, 200*time.Millisecond)
			waitTIDsGone(t, tids)
			// A channel ring wakes the runtime's spare threads, which stay parked.
			waitThreads(t, before, max(threadSlack, c.n/4))
		})
	}
}

func TestRingCloseMidRunGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	r, err := OpenRing(context.Background(), "goroutine", "chan", 10000)
	if err != nil {
		t.Fatal(err)
	}
	runUntilClosed(t, r, 100*time.Millisecond)
	// Close waited for every worker goroutine (r.wg), so none is left.
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Errorf("%d goroutines after Close, %d before", after, before)
	}
}

func TestRingCloseMidRunProcesses(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	r, err := OpenRing(context.Background(), "process", "pipe", n)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.Children()); got != n-1 {
		t.Fatalf("%d children for a ring of %d", got, n)
	}
	runUntilClosed(t, r, 500*time.Millisecond)
	if a := child.Alive(); a != 0 {
		t.Errorf("child.Alive() = %d after Close", a)
	}
	if kids := ourChildren(t); len(kids) != 0 {
		t.Errorf("processes still parented by us after Close: %v", kids)
	}
}

// TestRingTimeoutViaRunner drives a thread ring through the runner with a
// timeout far below the repetition time: the arm must end "timed out" with
// every thread gone.
func TestRingTimeoutViaRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the runner for a few seconds")
	}
	spec, _ := exp.Lookup("ring")
	before := taskCount(t)
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.BenchTime, cfg.Timeout, cfg.Reps = time.Minute, 1500*time.Millisecond, 1
	// On a loaded machine the 500 threads may not all start within the
	// limit: the runner then gives up on the setup while OpenRing still
	// runs, and closes the ring when it returns. Wait for it either way.
	opened := make(chan *Ring, 1)
	a := exp.Arm{Name: "ring/thread/futex/n=500/unpinned", Substrate: "thread", Mechanism: "futex", GOMAXPROCS: 2,
		Open: func(ctx context.Context) (exp.Bench, error) {
			r, err := OpenRing(ctx, "thread", "futex", 500)
			opened <- r
			return r, err
		}}
	res := runner.Arm(context.Background(), cfg, spec, a)
	if res.Status != result.StatusTimedOut {
		t.Fatalf("status %q (%s), want timed out", res.Status, res.Reason)
	}
	if ring := <-opened; ring != nil {
		waitTIDsGone(t, ring.TIDs())
	}
	waitThreads(t, before, 500/4)
}
