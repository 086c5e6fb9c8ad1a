package pydriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
)

// fake starts a fake driver script from testdata under /bin/sh.
func fake(t *testing.T, ctx context.Context, script string, args ...string) (*Session, error) {
	t.Helper()
	return StartSession(ctx, "/bin/sh", append([]string{filepath.Join("testdata", script)}, args...))
}

// gone reports whether no live (non-zombie) process is left in the
// process group pgid; killed grandchildren may stay zombies until init
// reaps them. It waits up to two seconds for the kernel to finish.
func gone(pgid int) bool {
	for i := 0; i < 40; i++ {
		if len(liveInGroup(pgid)) == 0 {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// liveInGroup lists the pids in process group pgid that are not zombies.
func liveInGroup(pgid int) []int {
	if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

func TestProtocolGood(t *testing.T) {
	ctx := context.Background()
	s, err := fake(t, ctx, "good.sh")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Hello.Protocol != 1 || s.Hello.Version != "0.0.0" {
		t.Fatalf("hello = %+v", s.Hello)
	}
	for want := 1; want <= 2; want++ { // one driver serves several arms
		r, err := s.Do(ctx, Request{Bench: "x", Reps: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK || r.ID != want || len(r.RepNs) != 2 || r.Ops[1] != 10 || len(r.SamplesNs) != 3 {
			t.Fatalf("response %d = %+v", want, r)
		}
		if r.Switches.Voluntary != 40 || r.Switches.ChildVoluntary != 4 || r.Migrations == nil || *r.Migrations != 3 {
			t.Fatalf("counts = %+v, migrations %v", r.Switches, r.Migrations)
		}
		if r.Metrics["x"] != 1 || len(r.Notes) != 1 {
			t.Fatalf("metrics %v notes %v", r.Metrics, r.Notes)
		}
	}
	pid := s.PID()
	s.Close()
	if !gone(pid) {
		t.Fatalf("driver group %d still exists after Close", pid)
	}
}

func TestProtocolGarbage(t *testing.T) {
	s, err := fake(t, context.Background(), "garbage.sh")
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	_, err = s.Do(context.Background(), Request{Bench: "x"})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol", err)
	}
	for _, want := range []string{"not a JSON result line", "just garbage", "stderr: about to misbehave"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !gone(pid) {
		t.Fatalf("driver group %d not killed after garbage", pid)
	}
	if _, err := s.Do(context.Background(), Request{}); err == nil {
		t.Fatal("a dead session accepted a request")
	}
}

func TestProtocolCrash(t *testing.T) {
	s, err := fake(t, context.Background(), "crash.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Do(context.Background(), Request{Bench: "x"})
	if err == nil {
		t.Fatal("no error from a crashed driver")
	}
	for _, want := range []string{"exited", "exit status 3", "boom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestProtocolHangKilledAtLimit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	s, err := fake(t, context.Background(), "hang.sh", pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := s.PID()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Do(ctx, Request{Bench: "x"})
	if err == nil {
		t.Fatal("no error from a hung driver")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Do returned after %v: not at the limit", took)
	}
	if !strings.Contains(err.Error(), "killed") || !strings.Contains(err.Error(), "stuck") {
		t.Errorf("error %q should say the driver was killed and carry its stderr", err)
	}
	if !gone(pid) {
		t.Fatalf("driver group %d survived the limit", pid)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if gc <= 0 || alive(gc) {
		t.Fatalf("grandchild %d (sleep) survived the driver's kill", gc)
	}
	if n := child.Alive(); n != 0 {
		t.Fatalf("%d children not reaped", n)
	}
}

func TestProtocolHangBeforeHello(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := StartSession(ctx, "/bin/sh", []string{"-c", "sleep 300"})
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("err = %v, want a kill at the limit", err)
	}
}

func TestProtocolNoHello(t *testing.T) {
	_, err := fake(t, context.Background(), "nohello.sh")
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "Python 2.7.18") {
		t.Fatalf("err = %v, want ErrProtocol quoting the line", err)
	}
}

func TestProtocolBadShape(t *testing.T) {
	s, err := fake(t, context.Background(), "noreps.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Do(context.Background(), Request{})
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol", err)
	}
}

func TestProtocolFailedAndUnsupported(t *testing.T) {
	s, err := fake(t, context.Background(), "failing.sh")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Do(context.Background(), Request{})
	if err != nil || r.OK || !strings.Contains(r.Error, "unknown bench") || !strings.Contains(r.Stderr, "ValueError") {
		t.Fatalf("failed bench: r=%+v err=%v", r, err)
	}
	r, err = s.Do(context.Background(), Request{})
	if err != nil || r.OK || r.Unsupported == "" {
		t.Fatalf("unsupported bench: r=%+v err=%v", r, err)
	}
	r, err = s.Do(context.Background(), Request{}) // the session goes on
	if err != nil || !r.OK {
		t.Fatalf("third request: r=%+v err=%v", r, err)
	}
}

func TestResolveWithoutPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Resolve("python3"); !errors.Is(err, ErrNoPython) {
		t.Fatalf("err = %v, want ErrNoPython", err)
	}
	if ins := FindAll(); len(ins) != 0 {
		t.Fatalf("FindAll found %d interpreters on an empty PATH", len(ins))
	}
}

func TestResolveNotPython(t *testing.T) {
	dir := t.TempDir()
	fakePy := filepath.Join(dir, "python3")
	if err := os.WriteFile(fakePy, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	_, err := Resolve("python3")
	if err == nil || errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "not a Python 3") {
		t.Fatalf("err = %v", err)
	}
}

// realPython returns the python3 on PATH, or skips.
func realPython(t *testing.T) *Interpreter {
	t.Helper()
	in, err := Resolve("python3")
	if err != nil {
		t.Skipf("no usable python3: %v", err)
	}
	return in
}

func TestRealDriver(t *testing.T) {
	in := realPython(t)
	if in.Version == "" || !filepath.IsAbs(in.Path) {
		t.Fatalf("interpreter = %+v", in)
	}
	defer CloseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := Request{Bench: "pingpong.asyncio-queue", Reps: 2, BenchNs: int64(5 * time.Millisecond),
		WarmUpNs: int64(2 * time.Millisecond), WarmUpOps: 1000, MaxSamples: 100}
	r, h, err := in.Do(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || len(r.RepNs) != 2 || r.Ops[0] < 1 || len(r.SamplesNs) == 0 || len(r.SamplesNs) > 100+2 {
		t.Fatalf("response = %+v", r)
	}
	if h.Version != in.Version || h.Implementation != "cpython" || h.ClockNs <= 0 {
		t.Fatalf("hello = %+v, interpreter %+v", h, in)
	}
	pid := poolPID(in)
	// A failing bench is an answer, not a dead driver: the same process goes on.
	r, _, err = in.Do(ctx, Request{Bench: "no.such.bench", Reps: 1})
	if err != nil || r.OK || !strings.Contains(r.Error, "unknown bench") || !strings.Contains(r.Stderr, "Traceback") {
		t.Fatalf("unknown bench: r=%+v err=%v", r, err)
	}
	if poolPID(in) != pid {
		t.Fatal("the driver was restarted after a failed bench")
	}
	// A crash inside the real driver is reported with its exit status.
	_, _, err = in.Do(ctx, Request{Bench: "test.crash", Reps: 1})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("crash: err = %v", err)
	}
}

func poolPID(in *Interpreter) int {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if p := pool.sessions[in.Path]; p != nil && p.s != nil {
		return p.s.PID()
	}
	return 0
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestRealDriverEveryBench runs every bench of the real driver with tiny
// sizes: a smoke test that each one runs, answers and cleans up.
func TestRealDriverEveryBench(t *testing.T) {
	in := realPython(t)
	defer CloseAll()
	cases := []struct {
		bench  string
		params map[string]string
	}{
		{"pingpong.simplequeue", nil},
		{"pingpong.simplequeue", map[string]string{"busy": "1", "switch_interval_s": "0.0005"}},
		{"pingpong.event", nil},
		{"pingpong.pipe-thread", nil},
		{"pingpong.pipe-fork", nil},
		{"pingpong.asyncio-queue", map[string]string{"busy": "1"}},
		{"pingpong.future", nil},
		{"ring.thread", map[string]string{"n": "100"}},
		{"ring.task", map[string]string{"n": "100"}},
		{"yield.task", map[string]string{"k": "100"}},
		{"hop", map[string]string{"how": "direct"}},
		{"hop", map[string]string{"how": "direct", "db": "memory"}},
		{"hop", map[string]string{"how": "executor", "db": "file"}},
		{"hop", map[string]string{"how": "two-hop", "db": "memory"}},
		{"hop", map[string]string{"how": "aiosqlite"}},
		{"hop", map[string]string{"how": "aiosqlite", "db": "memory"}},
		{"callchain.plain", nil},
		{"callchain.coroutine", nil},
		{"callchain.task", nil},
	}
	for _, c := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		req := Request{Bench: c.bench, Params: c.params, Reps: 2, BenchNs: int64(2 * time.Millisecond),
			WarmUpNs: int64(time.Millisecond), WarmUpOps: 100, MaxSamples: 1000, MinOps: 1, CPUs: nil}
		r, h, err := in.Do(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s %v: %v", c.bench, c.params, err)
		}
		if c.params["switch_interval_s"] == "" && r.OK && r.SwitchInterval != h.SwitchInterval {
			t.Errorf("%s: switch interval %v, want the default %v restored", c.bench, r.SwitchInterval, h.SwitchInterval)
		}
		if c.params["how"] == "aiosqlite" && r.Unsupported != "" {
			continue // aiosqlite not installed: reported, not failed
		}
		if !r.OK {
			t.Fatalf("%s %v: %s; stderr %s", c.bench, c.params, r.Error, r.Stderr)
		}
		if len(r.RepNs) != 2 {
			t.Fatalf("%s: %d repetitions", c.bench, len(r.RepNs))
		}
		if c.bench == "yield.task" && !strings.Contains(strings.Join(r.Notes, "|"), "not comparable") {
			t.Errorf("yield.task with a few yields per task carries no comparability note: %q", r.Notes)
		}
		if c.bench == "pingpong.pipe-fork" && r.Switches.ChildVoluntary == 0 {
			t.Errorf("pipe-fork: the forked partner's switches were not counted: %+v", r.Switches)
		}
		if c.params["switch_interval_s"] != "" && r.SwitchInterval != 0.0005 {
			t.Errorf("switch interval during the arm = %v", r.SwitchInterval)
		}
	}
	if left := hopTempDirs(poolPID(in)); len(left) > 0 {
		t.Errorf("the hop arms left their database dirs behind: %v", left)
	}
}

// hopTempDirs lists the database temp dirs the driver with this pid has
// (its hop arms name them ctxlab-sqlop-<pid>-…, as sqlop does).
func hopTempDirs(pid int) []string {
	if pid == 0 {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("ctxlab-sqlop-%d-*", pid)))
	return m
}

// The hop bench refuses a db or way it does not know, by name, and leaves
// no temp dir behind.
func TestRealDriverHopBadParams(t *testing.T) {
	in := realPython(t)
	defer CloseAll()
	for _, c := range []struct {
		params map[string]string
		want   string
	}{
		{map[string]string{"how": "direct", "db": "disk"}, "db='disk'; want one of: file, memory"},
		{map[string]string{"how": "sideways"}, "how='sideways'; want one of: direct, executor, two-hop, aiosqlite"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		r, _, err := in.Do(ctx, Request{Bench: "hop", Params: c.params, Reps: 1})
		cancel()
		if err != nil || r.OK || !strings.Contains(r.Error, c.want) {
			t.Errorf("%v: r=%+v err=%v; want an error naming %q", c.params, r, err, c.want)
		}
	}
	if left := hopTempDirs(poolPID(in)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// ciRequires says whether a missing tool fails a test instead of skipping
// it: in CI (CI or CTXLAB_CI set, as .ci/run does), which installs it.
func ciRequires() bool { return os.Getenv("CI") != "" || os.Getenv("CTXLAB_CI") != "" }

// systemPython is Debian's /usr/bin/python3, the interpreter the
// python3-aiosqlite package installs for, or skips (fails in CI).
func systemPython(t *testing.T) *Interpreter {
	t.Helper()
	in, err := Resolve("/usr/bin/python3")
	if err != nil {
		if ciRequires() {
			t.Fatalf("no /usr/bin/python3 in CI: %v", err)
		}
		t.Skipf("no usable /usr/bin/python3: %v", err)
	}
	return in
}

// The real aiosqlite, against /usr/bin/python3, on the default file
// database and in :memory:. Skips only outside CI when the module is
// missing (.ci/run installs python3-aiosqlite).
func TestRealDriverAiosqlite(t *testing.T) {
	in := systemPython(t)
	defer CloseAll()
	for _, db := range []string{"file", "memory"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		req := Request{Bench: "hop", Params: map[string]string{"how": "aiosqlite", "db": db}, Reps: 2,
			BenchNs: int64(5 * time.Millisecond), WarmUpNs: int64(2 * time.Millisecond), WarmUpOps: 100, MaxSamples: 100, MinOps: 1}
		r, _, err := in.Do(ctx, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if r.Unsupported != "" {
			if ciRequires() {
				t.Fatalf("aiosqlite in CI: %s (.ci/run installs python3-aiosqlite)", r.Unsupported)
			}
			t.Skipf("%s: %s", in.Path, r.Unsupported)
		}
		if !r.OK || len(r.RepNs) != 2 || r.Ops[0] < 1 {
			t.Fatalf("aiosqlite db=%s: %+v", db, r)
		}
		// Each query hops to aiosqlite's own thread and back, at least
		// once: its switches show it.
		if r.Switches.Voluntary == 0 {
			t.Errorf("aiosqlite db=%s: no voluntary switches over %v ops", db, r.Ops)
		}
	}
	if left := hopTempDirs(poolPID(in)); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// The driver travels as one argument (-c SOURCE): Linux caps one argument
// at 128 KiB (MAX_ARG_STRLEN).
func TestSourceFitsOneArgument(t *testing.T) {
	if len(Source) == 0 || len(Source) >= 128<<10 {
		t.Fatalf("driver source is %d bytes; it must be non-empty and under 128 KiB", len(Source))
	}
}

// gapRun is one run of testdata/gap.py for one call-chain arm: the
// medians of each round's repetition means, in ns per op.
type gapRun struct {
	Bench   string    `json:"bench"`
	Driver  []float64 `json:"driver"`
	Plain   []float64 `json:"plain"`
	Control []float64 `json:"control"`
}

// ratio is the driver's best round over the hand-written loop's best
// round; noise is how far the two identical hand-written loops' best
// rounds disagree (the margin this run can resolve).
func (g gapRun) ratio() (ratio, noise float64) {
	p, c := slices.Min(g.Plain), slices.Min(g.Control)
	ref := min(p, c)
	return slices.Min(g.Driver) / ref, max(p, c)/ref - 1
}

// gapBudget is the bound: the driver's call-chain figures within
// 10% of a plain perf_counter loop calling the same functions.
const gapBudget = 1.10

// TestDriverLoopGap measures the driver's timed loop against a
// hand-written perf_counter loop around the same call, interleaved in one
// Python process (testdata/gap.py), for the plain and the coroutine call
// chain. It passes when the driver's best round is within 10% of the plain
// loop's best, plus the noise of this run (how far two identical plain
// loops disagree), in any of three attempts: on a shared, busy machine a
// single attempt can be swamped. CTXLAB_PYGAP=1 runs longer rounds and
// logs the figures. What it proves: the driver's warm-up, sizing and
// repetition loop add no per-op cost beyond what this run can resolve; it
// says nothing about benches other than the call chains.
func TestDriverLoopGap(t *testing.T) {
	in := realPython(t)
	rounds, benchMs := "7", "5"
	if os.Getenv("CTXLAB_PYGAP") != "" {
		rounds, benchMs = "21", "20"
	}
	var last []string
	for attempt := 1; attempt <= 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, in.Path, filepath.Join("testdata", "gap.py"), "driver.py", rounds, benchMs).Output()
		cancel()
		if err != nil {
			t.Fatalf("gap.py: %v", err)
		}
		ok := true
		last = last[:0]
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var g gapRun
			if err := json.Unmarshal([]byte(line), &g); err != nil || len(g.Driver) == 0 || len(g.Plain) == 0 || len(g.Control) == 0 {
				t.Fatalf("gap.py printed %q (%v)", line, err)
			}
			r, noise := g.ratio()
			pass := r <= gapBudget+noise
			ok = ok && pass
			last = append(last, fmt.Sprintf("%s: driver %.1f ns/op, plain loop %.1f ns/op: %.3f× (budget %.2f + noise %.3f) pass=%v",
				g.Bench, slices.Min(g.Driver), min(slices.Min(g.Plain), slices.Min(g.Control)), r, gapBudget, noise, pass))
		}
		if len(last) != 2 {
			t.Fatalf("gap.py measured %d arms, want 2:\n%s", len(last), out)
		}
		t.Logf("attempt %d:\n%s", attempt, strings.Join(last, "\n"))
		if ok {
			return
		}
	}
	t.Fatalf("the driver's call-chain loop stayed above a plain loop in three attempts:\n%s", strings.Join(last, "\n"))
}

// TestDriverAppliesPolicy gives the driver a policy and checks its
// warm-up, sizing and sampling against it, with a bench whose first op is
// slow (lazy set-up the clock sees): the repetitions must not be sized
// from that one op.
func TestDriverAppliesPolicy(t *testing.T) {
	in := realPython(t)
	defer CloseAll()
	pol := &Policy{Share: 0.2, GrowMax: 50, Overshoot: 1.3, MaxOpsPerRep: 1e9, SampleClockFactor: 500}
	req := Request{Bench: "test.spin", Params: map[string]string{"op_ns": "20000", "first_ns": "60000000"},
		Reps: 2, BenchNs: int64(8 * time.Millisecond), WarmUpNs: int64(2 * time.Millisecond), WarmUpOps: 1 << 20, MaxSamples: 1000, Policy: pol}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, h, err := in.Do(ctx, req)
	if err != nil || !r.OK {
		t.Fatalf("r=%+v err=%v", r, err)
	}
	if r.Policy == nil || *r.Policy != *pol {
		t.Fatalf("driver applied policy %+v, sent %+v", r.Policy, pol)
	}
	checkSizing(t, r, req)
	if r.Sizing[0][0] != 1 || r.Sizing[0][1] < 60e6 {
		t.Fatalf("sizing %v: want the one slow op first", r.Sizing)
	}
	// Half the slow op: far above a 20 µs op even when a batch of a few ops
	// is preempted on a busy machine, far below the 60 ms op it must not use.
	if r.PerOpNs > 30e6 {
		t.Fatalf("sized from the slow first op: %.0f ns per op, %d ops per repetition (sizing %v)", r.PerOpNs, r.Ops[0], r.Sizing)
	}
	// The sampling rule: keep at most max_samples, and sample no more often
	// than every ⌈factor × clock ÷ op⌉-th op.
	want := max(1, ceilDiv(int64(req.Reps)*r.Ops[0], int64(req.MaxSamples)), int64(math.Ceil(pol.SampleClockFactor*h.ClockNs/r.PerOpNs)))
	if int64(r.SampleEvery) != want {
		t.Fatalf("sample every %d, want %d (clock %.1f ns, op %.0f ns)", r.SampleEvery, want, h.ClockNs, r.PerOpNs)
	}

	// A cheap op: many batches, each growing by at most GrowMax.
	req = Request{Bench: "callchain.plain", Reps: 2, BenchNs: int64(5 * time.Millisecond), WarmUpNs: int64(5 * time.Millisecond),
		WarmUpOps: 1 << 30, MaxSamples: 1000, Policy: pol}
	if r, _, err = in.Do(ctx, req); err != nil || !r.OK {
		t.Fatalf("r=%+v err=%v", r, err)
	}
	checkSizing(t, r, req)
	if len(r.Sizing) < 3 {
		t.Fatalf("sizing %v: want several batches from one op up", r.Sizing)
	}

	// MaxOpsPerRep caps a repetition however cheap the op.
	capped := *pol
	capped.MaxOpsPerRep = 100
	req.Policy = &capped
	if r, _, err = in.Do(ctx, req); err != nil || !r.OK {
		t.Fatalf("r=%+v err=%v", r, err)
	}
	checkSizing(t, r, req) // ops = min(cap, bench ÷ op): the cap unless a preempted batch made the op look slow
	if last := r.Sizing[len(r.Sizing)-1]; r.Ops[0] > 100 || r.Ops[1] > 100 || last[0] > 100 {
		t.Fatalf("ops per repetition %v, last sizing batch %v: want at most the cap 100", r.Ops, last)
	}
}

// checkSizing asserts the sizing rule on a driver's answer: batches start
// at one op and grow by at most GrowMax (and at most to the cap); the last
// one, never the arm's first, filled its share of bench_ns (a one-op batch
// the whole of it); the repetitions run bench_ns at that batch's rate.
func checkSizing(t *testing.T, r *Response, req Request) {
	t.Helper()
	p := req.Policy
	b := r.Sizing
	if len(b) < 2 || b[0][0] != 1 {
		t.Fatalf("sizing %v: want at least two batches, the first of one op", b)
	}
	share := int64(float64(req.BenchNs) * p.Share)
	for i := 1; i < len(b); i++ {
		// Each batch is testing.B's prediction from the one before (the
		// runner's predictN), give or take float rounding.
		want := predictN(p, share, b[i-1][0], b[i-1][1])
		if d := b[i][0] - want; d < -2 || d > 2 {
			t.Fatalf("sizing batch %v after %v: want %d ops (share %d ns, policy %+v): %v", b[i], b[i-1], want, share, *p, b)
		}
	}
	last := b[len(b)-1]
	if !((last[0] > 1 && last[1] >= share) || last[1] >= req.BenchNs || last[0] >= p.MaxOpsPerRep) {
		t.Fatalf("the sizing batch %v did not fill its share %d ns of %d: %v", last, share, req.BenchNs, b)
	}
	perOp := float64(last[1]) / float64(last[0])
	if math.Abs(r.PerOpNs-perOp) > 1e-6*perOp {
		t.Fatalf("per-op %v ns, the sizing batch says %v", r.PerOpNs, perOp)
	}
	want := int64(max(1, min(float64(p.MaxOpsPerRep), float64(req.BenchNs)/perOp)))
	for _, ops := range r.Ops {
		if ops < want || ops > want+1 {
			t.Fatalf("repetitions ran %v ops, want %d (%d ns at %.1f ns per op)", r.Ops, want, req.BenchNs, perOp)
		}
	}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// predictN is testing.B's rule with the policy's parameters, as the
// runner's predictN: the ops that should take goal ns if n took el ns,
// padded by Overshoot, growing at most GrowMax times and at least by one,
// and at most MaxOpsPerRep.
func predictN(p *Policy, goal, n, el int64) int64 {
	next := int64(float64(goal) * float64(n) / float64(max(el, 1)))
	next += int64(float64(next) * (p.Overshoot - 1))
	next = min(next, int64(p.GrowMax*float64(n)))
	next = max(next, n+1)
	return min(next, p.MaxOpsPerRep)
}
