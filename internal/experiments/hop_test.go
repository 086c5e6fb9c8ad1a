package experiments

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

func hopParams(suite string, extra map[string]string) exp.Params {
	return exp.Params{Suite: suite, CPUs: []int{0, 1}, Options: settings(extra)}
}

// settings are --set values parsed as a run parses them; it panics on a
// value the options refuse (tests of refused values use armsWith).
func settings(given map[string]string) exp.Settings {
	s, err := exp.ParseSettings(given)
	if err != nil {
		panic(err)
	}
	return s
}

// armsWith builds arms from p with the --set values given, as a run
// does: a value the options refuse is the error, before any arm is built.
func armsWith(arms func(exp.Params) ([]exp.Arm, error), p exp.Params, given map[string]string) ([]exp.Arm, error) {
	var err error
	if p.Options, err = exp.ParseSettings(given); err != nil {
		return nil, err
	}
	return arms(p)
}

// waitGoroutines waits until no more goroutines run than before (workers
// exit asynchronously after Close returns only where they are not waited
// for; ours are, so this should hold at once).
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("goroutine leak: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tempDirs lists what sqlop left in dir.
func tempDirs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "ctxlab-sqlop-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runArm opens an arm, runs n ops at its GOMAXPROCS, closes it.
func runArm(t *testing.T, a exp.Arm, n int) error {
	t.Helper()
	if a.GOMAXPROCS > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(a.GOMAXPROCS))
	}
	opened, err := a.Open(context.Background())
	if err != nil {
		return err
	}
	bench := opened.(exp.Loop)
	b := measure.NewB(context.Background(), n, measure.NewSampler(n, 100, 1), nil)
	b.StartTimer()
	runErr := bench.Run(b)
	b.StopTimer()
	// A second batch, as the runner does for repetitions.
	if runErr == nil {
		b = measure.NewB(context.Background(), n, nil, nil)
		b.StartTimer()
		runErr = bench.Run(b)
		b.StopTimer()
	}
	if err := bench.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if err := bench.Close(); err != nil && runErr == nil {
		runErr = errors.New("second Close: " + err.Error())
	}
	return runErr
}

// Every hop arm of the full suite runs, checks each row it got against the
// key it asked for (Run fails on a wrong value), leaves no goroutine and no
// temp dir behind; the cgo arms say why they cannot run in this build.
func TestHopEveryArmReturnsTheRightRow(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	arms, err := hopArms(hopParams(exp.SuiteFull, map[string]string{"hop.callers": "3", "hop.pool": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, a := range arms {
		if a.Unsupported != "" {
			if sqlop.CgoUnsupported == "" {
				t.Errorf("%s unsupported in a cgo build: %s", a.Name, a.Unsupported)
			} else if a.Unsupported != sqlop.CgoUnsupported {
				t.Errorf("%s: reason %q, want %q", a.Name, a.Unsupported, sqlop.CgoUnsupported)
			}
			continue
		}
		before := runtime.NumGoroutine()
		if err := runArm(t, a, 37); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		waitGoroutines(t, before)
		ran++
	}
	if ran == 0 {
		t.Fatal("no hop arm ran")
	}
	if left := tempDirs(t, tmp); len(left) > 0 {
		t.Errorf("temp dirs left behind: %v", left)
	}
}

func TestHopCgoArmsUnavailableWithoutCgo(t *testing.T) {
	arms, err := hopArms(hopParams(exp.SuiteFull, nil))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range arms {
		if strings.Contains(a.Name, "/mattn-") || strings.Contains(a.Name, "/cgo-call/") {
			n++
			if (a.Unsupported != "") != (sqlop.CgoUnsupported != "") {
				t.Errorf("%s: unsupported %q in a build where cgo unsupported is %q", a.Name, a.Unsupported, sqlop.CgoUnsupported)
			}
		}
	}
	if n == 0 {
		t.Error("no cgo arms listed: they must be listed, and marked unavailable without cgo")
	}
}

// A wrong answer from the operation fails the run: the check is real.
type wrongHandle struct{}

func (wrongHandle) Lookup(id int64) (int64, error)      { return sqlop.Want(id) + 1, nil }
func (wrongHandle) Exec(id int64) (sqlop.Cursor, error) { return nil, errors.New("no exec") }
func (wrongHandle) Close() error                        { return nil }

func TestHopWrongRowFailsTheRun(t *testing.T) {
	var closed atomic.Bool
	src := &sqlop.Source{Op: "map"}
	if err := directLoop(src, wrongHandle{}, 5, nil, &closed); err == nil || !strings.Contains(err.Error(), "want") {
		t.Errorf("direct loop over a wrong handle: %v, want an error naming the wanted value", err)
	}
	reqs := make(chan hopReq)
	done := make(chan struct{})
	go func() { serveHop(wrongHandle{}, reqs); close(done) }()
	c := newHopCaller(src, reqs, 0, &closed)
	if err := c.loop(5, 1, nil); err == nil {
		t.Error("one hop to a wrong worker: no error")
	}
	if err := c.loop(5, 2, nil); err == nil {
		t.Error("two hops to a failing worker: no error")
	}
	close(reqs)
	<-done
}

// Close from another goroutine while Run is going (the runner's timeout and
// Ctrl-C path) stops Run, the workers and removes the temp dir.
func TestHopCloseDuringRun(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, cfg := range []hopConfig{
		{op: "modernc-file", way: "thread"},
		{op: "modernc-file", way: "pool", callers: 4, pool: 2},
		{op: "modernc-file", way: "direct"},
	} {
		before := runtime.NumGoroutine()
		h, err := openHop(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(tempDirs(t, tmp)) != 1 {
			t.Fatalf("%s: want one temp dir while open, have %v", cfg.way, tempDirs(t, tmp))
		}
		errc := make(chan error, 1)
		go func() {
			b := measure.NewB(context.Background(), 1<<30, nil, nil)
			b.StartTimer()
			errc <- h.Run(b)
		}()
		time.Sleep(50 * time.Millisecond)
		if err := h.Close(); err != nil {
			t.Errorf("%s: Close: %v", cfg.way, err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, errHopClosed) {
				t.Errorf("%s: Run after Close returned %v, want %v", cfg.way, err, errHopClosed)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Run did not stop after Close", cfg.way)
		}
		waitGoroutines(t, before)
		if left := tempDirs(t, tmp); len(left) > 0 {
			t.Errorf("%s: temp dirs left after Close: %v", cfg.way, left)
		}
	}
}

// An error while opening (an unknown way, or a start-up cancelled by
// Ctrl-C, after the database file was made) still removes the temp dir and
// stops the workers started so far: Open cleans up after itself.
func TestHopOpenErrorRemovesTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	before := runtime.NumGoroutine()
	if _, err := openHop(context.Background(), hopConfig{op: "modernc-file", way: "sideways"}); err == nil {
		t.Fatal("unknown way: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := openHop(ctx, hopConfig{op: "modernc-file", way: "pool", callers: 2, pool: 3}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled open: %v, want context.Canceled", err)
	}
	if _, err := openConcSem(ctx, "modernc-file", nil, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled sem open: %v, want context.Canceled", err)
	}
	waitGoroutines(t, before)
	if left := tempDirs(t, tmp); len(left) > 0 {
		t.Errorf("temp dirs left after a failed open: %v", left)
	}
}

func TestHopBadParameters(t *testing.T) {
	cases := []struct {
		extra map[string]string
		arms  func(exp.Params) ([]exp.Arm, error)
		want  []string // in the message
	}{
		{map[string]string{"hop.pool": "0"}, hopArms, []string{"hop.pool=0", "in 1..1000"}},
		{map[string]string{"hop.pool": "1001"}, hopArms, []string{"hop.pool=1001", "in 1..1000"}},
		{map[string]string{"hop.callers": "-3"}, hopArms, []string{"hop.callers=-3", "in 1.."}},
		{map[string]string{"hop.pool": "two"}, hopArms, []string{"hop.pool=two", "not a whole number"}},
		{map[string]string{"concurrency.levels": "1,0,50"}, concurrencyArms, []string{"concurrency.levels=1,0,50", "0 must be in 1..1000"}},
		{map[string]string{"concurrency.levels": "0"}, concurrencyArms, []string{"concurrency.levels=0"}},
		{map[string]string{"concurrency.pool": "0"}, concurrencyArms, []string{"concurrency.pool=0", "in 1..256"}},
		{map[string]string{"callchain.items": "-5"}, callchainArms, []string{"callchain.items=-5", "in 1.."}},
		{map[string]string{"callchain.batch": "0"}, callchainArms, []string{"callchain.batch=0"}},
		{map[string]string{"callchain.items": "10", "callchain.batch": "11"}, callchainArms, []string{"callchain.batch=11", "in 1..10"}},
	}
	for _, c := range cases {
		_, err := armsWith(c.arms, hopParams(exp.SuiteDefault, nil), c.extra)
		if err == nil {
			t.Errorf("%v: no error", c.extra)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", c.extra, err, w)
			}
		}
	}
}

func TestHopArmNamesAndSuites(t *testing.T) {
	for _, suite := range []string{exp.SuiteQuick, exp.SuiteDefault, exp.SuiteFull} {
		for _, f := range []func(exp.Params) ([]exp.Arm, error){hopArms, callchainArms, concurrencyArms} {
			arms, err := f(hopParams(suite, nil))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			quick := 0
			for _, a := range arms {
				if seen[a.Name] {
					t.Errorf("duplicate arm %s", a.Name)
				}
				seen[a.Name] = true
				if a.Quick {
					quick++
				}
				if a.Open == nil {
					t.Errorf("%s: no Open", a.Name)
				}
			}
			if quick == 0 {
				t.Errorf("%s suite: no quick arm", suite)
			}
		}
	}
	full, _ := hopArms(hopParams(exp.SuiteFull, nil))
	def, _ := hopArms(hopParams(exp.SuiteDefault, nil))
	if len(def) >= len(full) {
		t.Errorf("default suite has %d hop arms, full %d: default should be smaller", len(def), len(full))
	}
	ways := map[string]bool{}
	for _, a := range def {
		ways[a.Params["way"]] = true
	}
	for _, w := range hopWays {
		if !ways[w] {
			t.Errorf("default suite lacks way %s", w)
		}
	}
}

// Derive, checks and findings on made-up figures: the published shape
// (8.4 µs direct, 30.4 µs one hop, 58.8 µs two hops).
func TestHopDeriveAndChecks(t *testing.T) {
	mk := func(way string, gmp int, median, sw float64) result.Arm {
		return result.Arm{
			Name: "hop/modernc-memory/" + way + "/x", Experiment: "hop", Status: result.StatusOK,
			Params: map[string]string{"op": "modernc-memory", "way": way}, GOMAXPROCS: gmp,
			Median: median, Switches: &result.Switches{Voluntary: sw},
		}
	}
	arms := []result.Arm{
		mk("direct", 1, 8400, 0), mk("goroutine", 1, 8950, 0), mk("thread", 1, 30400, 3), mk("thread-2hop", 1, 58800, 6),
		mk("direct", 2, 8400, 0), mk("goroutine", 2, 11000, 0.9), mk("thread", 2, 30400, 3),
	}
	hopDerive(arms)
	if got := arms[2].Metrics["direct-ratio"]; got < 3.61 || got > 3.63 {
		t.Errorf("thread x-direct = %v, want 30.4/8.4", got)
	}
	if got := arms[2].Metrics["added-ns/op"]; got != 22000 {
		t.Errorf("thread added = %v, want 22000", got)
	}
	checks := hopChecks(arms)
	holds := map[string]bool{}
	for _, c := range checks {
		holds[c.Name[:20]] = c.Holds
		if !c.Holds {
			t.Errorf("check does not hold on the published shape: %s — %s", c.Name, c.Detail)
		}
	}
	if len(checks) < 4 {
		t.Errorf("%d checks, want at least 4 (hop > op, two hops, thread switches, goroutine switches): %+v", len(checks), checks)
	}
	// Two hops far from twice one hop fail the check.
	arms[3].Median = 31000
	for _, c := range hopChecks(arms) {
		if strings.HasPrefix(c.Name, "two hops") && c.Holds {
			t.Errorf("two-hop check holds at 1.03× one hop: %s", c.Detail)
		}
	}
	f := strings.Join(hopFindings(arms), "\n")
	for _, w := range []string{"seen: idle P wake-up", "locked-thread hop", "direct 8.4 µs"} {
		if !strings.Contains(f, w) {
			t.Errorf("findings lack %q:\n%s", w, f)
		}
	}
}

// Locked-thread workers destroy their OS threads on Close: after five
// open/run/close cycles of a pool of 4 locked threads, none of the workers'
// thread ids is a thread of this process any more. (Counting all threads
// would be flaky: the runtime keeps idle threads of its own.)
func TestHopThreadWorkersLeaveNoThread(t *testing.T) {

	var tids []int
	for i := 0; i < 5; i++ {
		h, err := openConcPool(context.Background(), "map", nil, 2, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range h.workers.host.(*threadHost).threads {
			tids = append(tids, th.TID)
		}
		b := measure.NewB(context.Background(), 100, nil, nil)
		if err := h.Run(b); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	waitTIDsGone(t, tids)
}

// The SQLite lookups run on a file (the seed's) and in :memory:, each way;
// a statement prepared once is a direct arm of its own, beside the fresh
// query, and the quick suite has a file lookup beside the :memory: one.
func TestHopFileAndMemoryAndPreparedArms(t *testing.T) {
	for _, suite := range []string{exp.SuiteFull, exp.SuiteDefault, exp.SuiteQuick} {
		arms, err := hopArms(hopParams(suite, nil))
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]exp.Arm{}
		for _, a := range arms {
			byName[a.Name] = a
			if strings.HasSuffix(a.Params["op"], "-prepared") && a.Params["way"] != "direct" {
				t.Errorf("%s: a prepared statement is measured direct only", a.Name)
			}
		}
		for _, name := range []string{
			"hop/modernc-file/direct/gomaxprocs=all", "hop/modernc-memory/direct/gomaxprocs=all",
			"hop/modernc-file/thread-2hop/gomaxprocs=all", "hop/modernc-memory/thread-2hop/gomaxprocs=all",
			"hop/modernc-file-prepared/direct/gomaxprocs=all", "hop/modernc-memory-prepared/direct/gomaxprocs=all",
		} {
			if _, ok := byName[name]; !ok {
				t.Errorf("suite %q: no arm %s", suite, name)
			}
		}
		if suite == exp.SuiteQuick && !byName["hop/modernc-file/direct/gomaxprocs=all"].Quick {
			t.Error("the quick suite has no file lookup beside the :memory: one")
		}
	}
}

// A hop that measured faster than the direct call (noise) never reads as a
// negative cost (issue 50: "adds -1.86e+04 ns to a 78 µs call").
func TestAddsNeverNegative(t *testing.T) {
	if got := adds("adds", 18200); got != "adds 18.2 µs" {
		t.Errorf("got %q", got)
	}
	if got := adds("adds", -18600); got != "adds nothing measurable (18.6 µs below direct)" {
		t.Errorf("got %q", got)
	}
	if got := addsFigure(-5); got != "nothing measurable (5 ns below direct)" {
		t.Errorf("got %q", got)
	}
	d := result.Arm{Name: "hop/modernc-file/direct/gomaxprocs=all", Experiment: "hop", Status: result.StatusOK, Median: 78000,
		GOMAXPROCS: 2, Params: map[string]string{"op": "modernc-file", "way": "direct"}}
	th := d
	th.Name, th.Median, th.Params = "hop/modernc-file/thread/gomaxprocs=all", 59400, map[string]string{"op": "modernc-file", "way": "thread"}
	for _, c := range hopChecks([]result.Arm{d, th}) {
		if strings.Contains(c.Detail, "adds -") || strings.Contains(c.Detail, "e+") {
			t.Errorf("a negative figure: %s", c.Detail)
		}
	}
}
