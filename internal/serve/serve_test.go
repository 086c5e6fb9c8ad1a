package serve_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/cli"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/serve"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/testhome"
	"github.com/ctxlab/ctxlab/internal/testload"
)

// envServeMain makes this test binary act as ctxlab itself, so a test can
// run `ctxlab serve` as a real process and send it SIGTERM.
const envServeMain = "CTXLAB_TEST_SERVE_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(envServeMain); args != "" {
		os.Exit(cli.Main(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	os.Exit(testhome.Main(m))
}

// stuckBench blocks in Run until Close, like an arm whose partner starved.
type stuckBench struct {
	okOps  int // ops that succeed before it sticks
	done   int
	closed chan struct{}
	once   sync.Once
}

func (b *stuckBench) Run(mb *measure.B) error {
	for i := 0; i < mb.N; i++ {
		if b.done >= b.okOps {
			<-b.closed
			return errors.New("closed while stuck")
		}
		b.done++
	}
	return nil
}

func (b *stuckBench) Close() error                   { b.once.Do(func() { close(b.closed) }); return nil }
func (b *stuckBench) Participants() exp.Participants { return exp.WholeProcess() }

type failBench struct{ calls int }

func (b *failBench) Run(mb *measure.B) error {
	b.calls++
	if b.calls > 2 {
		return errors.New("partner died")
	}
	return nil
}
func (b *failBench) Close() error                   { return nil }
func (b *failBench) Participants() exp.Participants { return exp.WholeProcess() }

func probe(name string, open func(context.Context) (exp.Bench, error)) serve.Probe {
	spec := &exp.Spec{Name: "fake", Op: "round trip"}
	return serve.Probe{Spec: spec, Arm: exp.Arm{Name: name, Op: "round trip", Placement: "unpinned", Open: open}}
}

func newServer(t *testing.T, probes []serve.Probe) *serve.Server {
	t.Helper()
	host := sysinfo.Detect()
	return serve.New(serve.Options{Probes: probes, Interval: time.Minute, BudgetPct: 1, ProbeTimeout: time.Second,
		Host: host, Version: "test", NoRuntimeMetrics: true})
}

// scrape reads /metrics and returns each probe's success value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	out := map[string]float64{}
	for _, m := range fams["ctxlab_probe_success"].GetMetric() {
		out[fullName(m)] = m.GetGauge().GetValue()
	}
	return out
}

// fullName is a series' arm as `ctxlab list` names it: experiment/arm.
func fullName(m *dto.Metric) string {
	var e, a string
	for _, l := range m.GetLabel() {
		switch l.GetName() {
		case "experiment":
			e = l.GetValue()
		case "arm":
			a = l.GetValue()
		}
	}
	if e == "" {
		return a
	}
	return e + "/" + a
}

// TestProbeFailureAndTimeout: a failing probe and two kinds of stuck probe
// set success to 0; the good probe between them still reports 1; the
// server answers throughout.
func TestProbeFailureAndTimeout(t *testing.T) {
	good := probe("fake/good", func(context.Context) (exp.Bench, error) {
		return &stuckBench{okOps: 1 << 30, closed: make(chan struct{})}, nil
	})
	fails := probe("fake/fails", func(context.Context) (exp.Bench, error) { return &failBench{}, nil })
	setupFails := probe("fake/setup-fails", func(context.Context) (exp.Bench, error) { return nil, errors.New("no partner") })
	stuckFirst := probe("fake/stuck-first-op", func(context.Context) (exp.Bench, error) { return &stuckBench{closed: make(chan struct{})}, nil })
	stuckLater := probe("fake/stuck-later", func(context.Context) (exp.Bench, error) {
		return &stuckBench{okOps: 50, closed: make(chan struct{})}, nil
	})
	s := newServer(t, []serve.Probe{fails, setupFails, stuckFirst, good, stuckLater})

	srv := &http.Server{Handler: s.Handler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String()

	cycleDone := make(chan struct{})
	go func() { s.Cycle(context.Background()); close(cycleDone) }()
	// Scrapes answer while the stuck probes hold the cycle.
	for polling := true; polling; {
		select {
		case <-cycleDone:
			polling = false
		case <-time.After(100 * time.Millisecond):
			scrape(t, url)
		}
	}
	got := scrape(t, url)
	want := map[string]float64{"fake/good": 1, "fake/fails": 0, "fake/setup-fails": 0, "fake/stuck-first-op": 0, "fake/stuck-later": 0}
	for arm, v := range want {
		if g, ok := got[arm]; !ok || g != v {
			t.Errorf("ctxlab_probe_success{arm=%q} = %v (present %v), want %v", arm, g, ok, v)
		}
	}
	statuses := map[string]string{}
	for _, sn := range s.Metrics().Snapshots() {
		statuses[sn.Name] = sn.Last.Status
	}
	if statuses["fake/stuck-first-op"] != result.StatusTimedOut || statuses["fake/stuck-later"] != result.StatusTimedOut {
		t.Errorf("stuck probes: statuses %v, want both %q", statuses, result.StatusTimedOut)
	}
	if statuses["fake/fails"] != result.StatusFailed {
		t.Errorf("failing probe: status %q, want %q", statuses["fake/fails"], result.StatusFailed)
	}
	resp, err := http.Get(url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz after failing probes: %v %v", resp, err)
	}
	resp, err = http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "fake/stuck-later") || !strings.Contains(string(body), "timed out") {
		t.Errorf("index page does not list the probes and their status:\n%s", body)
	}
}

// TestCancelDuringProbeLeavesNoChild runs the real process×pipe probe and
// cancels (what SIGTERM does through the cli's context) while its child is
// alive: Serve returns nil, every child is reaped, the listener is closed.
func TestCancelDuringProbeLeavesNoChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	host := sysinfo.Detect()
	p := exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs}
	probes, _, err := serve.Resolve([]string{"pingpong/process/pipe/unpinned"}, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 8)
	slow := func(ctx context.Context, cfg runner.Config, spec *exp.Spec, a exp.Arm) result.Arm {
		cfg.BenchTime, cfg.Reps = time.Second, 20 // long enough to be caught mid-run
		started <- struct{}{}
		return runner.Arm(ctx, cfg, spec, a)
	}
	s := serve.New(serve.Options{Probes: probes, Interval: time.Minute, BudgetPct: 1, ProbeTimeout: time.Minute,
		Host: host, Version: "test", NoRuntimeMetrics: true, RunArm: slow})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	<-started
	deadline := time.Now().Add(20 * time.Second)
	for child.Alive() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the probe's child never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if n := child.Alive(); n != 0 {
		t.Errorf("%d children still alive after shutdown", n)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("listener %s still accepts after shutdown", addr)
	}
}

// TestSIGTERMBinary runs `ctxlab serve` as a real process (this test
// binary acting as ctxlab), waits until a probe's child process exists,
// sends SIGTERM, and checks: exit status 0, and no process carrying this
// test's marker is left.
func TestSIGTERMBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ctxlab serve as a process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	marker := "ctxlab-serve-test-" + strconv.Itoa(os.Getpid())
	args := []string{"serve", "--listen", addr, "--interval", "5s", "--cpu-budget", "50", "--probes", "pingpong/process/pipe/unpinned"}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeMain+"="+strings.Join(args, "\x1f"), "CTXLAB_TEST_MARKER="+marker)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Wait for a child of the server: the probe is running.
	deadline := time.Now().Add(30 * time.Second)
	for len(childrenOf(cmd.Process.Pid)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no probe child appeared; stderr:\n%s", stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ctxlab serve after SIGTERM: %v, want exit 0; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ctxlab serve did not stop after SIGTERM; stderr:\n%s", stderr.String())
	}
	if left := withMarker(marker); len(left) > 0 {
		t.Errorf("processes left behind after SIGTERM: %v", left)
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("no shutdown line in the log:\n%s", stderr.String())
	}
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// The fields after the command name (which may hold spaces) in parentheses.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			out = append(out, n)
		}
	}
	return out
}

// withMarker lists live processes whose environment holds marker.
func withMarker(marker string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		st, err := os.ReadFile(filepath.Join(filepath.Dir(d), "stat"))
		if err == nil && bytes.Contains(st[bytes.LastIndexByte(st, ')'):], []byte(") Z")) {
			continue // a zombie is dead already
		}
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if n != os.Getpid() {
			out = append(out, n)
		}
	}
	return out
}

// TestServeRealProbes serves the default probes of this build for one
// cycle and reads /metrics back with the Prometheus text parser: every
// probe reports success, latency, switches and CPU, and the host signals
// are there.
func TestServeRealProbes(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real arms")
	}
	host := sysinfo.Detect()
	p := exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs}
	if allowed, err := measure.Affinity(); err == nil && len(allowed) > 0 {
		p.CPUs = allowed
	}
	probes, notes, err := serve.Resolve(nil, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d probes; notes: %q", len(probes), notes)
	w := testload.Start()
	s := serve.New(serve.Options{Probes: probes, Interval: time.Minute, BudgetPct: 1, ProbeTimeout: 30 * time.Second,
		Host: host, Version: "test"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if n := child.Alive(); n != 0 {
			t.Errorf("%d children alive after shutdown", n)
		}
	}()
	// Wait for the first cycle: every probe has a success metric.
	deadline := time.Now().Add(2 * time.Minute)
	var got map[string]float64
	for {
		got = scrape(t, url)
		if len(got) == len(probes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes only %d of %d probes reported", len(got), len(probes))
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("live page does not parse: %v", err)
	}
	perArm := func(family string) map[string]bool {
		out := map[string]bool{}
		for _, m := range fams[family].GetMetric() {
			out[fullName(m)] = true
		}
		return out
	}
	switches := map[string]float64{} // per op, both kinds
	for _, m := range fams["ctxlab_switches_per_op"].GetMetric() {
		switches[fullName(m)] += m.GetGauge().GetValue()
	}
	for _, pr := range probes {
		if got[pr.Name()] != 1 {
			// A probe fails when its arm does (too few ops, its time
			// limit): on a machine that kept the probes from the CPU,
			// that is the machine's doing.
			if starved, why := w.Starved(); starved {
				t.Logf("%s: success %v on a busy machine, not counted: %s", pr.Name(), got[pr.Name()], why)
				continue
			}
			t.Errorf("%s: success %v; see the log", pr.Name(), got[pr.Name()])
			continue
		}
		for _, fam := range []string{"ctxlab_op_seconds", "ctxlab_op_mean_seconds", "ctxlab_op_max_seconds",
			"ctxlab_switches_per_op", "ctxlab_probe_cpu_seconds_total", "ctxlab_probe_duration_seconds", "ctxlab_probe_noisy"} {
			if !perArm(fam)[pr.Name()] {
				t.Errorf("%s: no %s", pr.Name(), fam)
			}
		}
		// A wait per switch exists only where the run switched: a goroutine
		// handoff at GOMAXPROCS=1 may make none in a run.
		if switches[pr.Name()] > 0 && !perArm("ctxlab_runqueue_wait_per_switch_seconds")[pr.Name()] {
			t.Errorf("%s: %v switches per op and no ctxlab_runqueue_wait_per_switch_seconds", pr.Name(), switches[pr.Name()])
		}
	}
	// A per-switch cost is exported exactly for the hog-free probes that
	// switched at least once per op. Threads on one CPU always do; across two CPUs
	// a quiet machine may answer before the waker sleeps (< 1 switch).
	costs := perArm("ctxlab_switch_cost_seconds")
	if !costs["pingpong/thread/futex/same-cpu"] && got["pingpong/thread/futex/same-cpu"] == 1 {
		t.Errorf("pingpong/thread/futex/same-cpu: no ctxlab_switch_cost_seconds (%.2f switches per op)", switches["pingpong/thread/futex/same-cpu"])
	}
	for name, sw := range switches {
		hogged := regexp.MustCompile(`/hogs=[1-9]`).MatchString(name) // the op holds a hog's slices
		if costs[name] != (sw >= 1 && !hogged) {
			t.Errorf("%s: %.2f switches per op, ctxlab_switch_cost_seconds exported: %v", name, sw, costs[name])
		}
	}
	for _, fam := range []string{"ctxlab_exporter_cpu_seconds_total", "process_cpu_seconds_total", "ctxlab_build_info"} {
		if _, ok := fams[fam]; !ok {
			t.Errorf("no %s on the live page", fam)
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if len(l.GetValue()) > serve.MaxLabelLen {
					t.Errorf("%s{%s=%q}: label value over %d characters", name, l.GetName(), l.GetValue(), serve.MaxLabelLen)
				}
			}
		}
	}
	for _, m := range fams["ctxlab_op_seconds"].GetMetric() {
		s := m.GetSummary()
		mean := s.GetSampleSum() / float64(s.GetSampleCount())
		var p50 float64
		for _, q := range s.GetQuantile() {
			if q.GetQuantile() == 0.5 {
				p50 = q.GetValue()
			}
		}
		// The mean of the very samples the quantiles come from cannot pass
		// their max; below the median is possible (a two-peaked round trip),
		// so it is logged, not failed.
		var mx float64
		for _, x := range fams["ctxlab_op_max_seconds"].GetMetric() {
			if fullName(x) == fullName(m) {
				mx = x.GetGauge().GetValue()
			}
		}
		if mean > mx*(1+1e-9) {
			t.Errorf("%s: _sum/_count %g s above the max %g s", fullName(m), mean, mx)
		}
		t.Logf("%s: p50 %.3g s, mean %.3g s, max %.3g s over %d samples", fullName(m), p50, mean, mx, s.GetSampleCount())
	}
}

// A stored serve cycle carries the calibrations a `ctxlab run` stores: the
// clock, one system call and Go's runtime-aware path, and the build.
func TestCycleSavesCalibrations(t *testing.T) {
	good := probe("fake/good", func(context.Context) (exp.Bench, error) {
		return &stuckBench{okOps: 1 << 30, closed: make(chan struct{})}, nil
	})
	var saved []*result.Run
	s := serve.New(serve.Options{Probes: []serve.Probe{good}, Interval: time.Minute, BudgetPct: 1, ProbeTimeout: time.Second,
		Host: sysinfo.Detect(), Version: "test", NoRuntimeMetrics: true,
		Save: func(r *result.Run) (serve.Saved, error) {
			saved = append(saved, r)
			return serve.Saved{DBBytes: 4096}, nil
		}})
	s.Cycle(context.Background())
	if len(saved) != 1 {
		t.Fatalf("%d runs saved, want 1", len(saved))
	}
	r := saved[0]
	if r.ClockCostNs <= 0 || r.SyscallNs <= 0 || r.SyscallPathNs < 0 {
		t.Fatalf("clock %v ns, syscall %v ns, path %v ns: want the calibrations", r.ClockCostNs, r.SyscallNs, r.SyscallPathNs)
	}
	if r.Env.CgoEnabled == "" {
		t.Fatalf("env does not say the build: %+v", r.Env)
	}
	if len(r.Arms) != 1 || r.Arms[0].Name != "fake/good" {
		t.Fatalf("arms %+v", r.Arms)
	}
	// What the save did reaches the metrics page.
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if page := rec.Body.String(); !strings.Contains(page, "ctxlab_history_db_bytes 4096") {
		t.Error("the metrics page lacks the saved database's size (ctxlab_history_db_bytes 4096)")
	}
}

// A cycle whose save fails is counted and flagged on the metrics page.
func TestCycleCountsFailedSave(t *testing.T) {
	good := probe("fake/good", func(context.Context) (exp.Bench, error) {
		return &stuckBench{okOps: 1 << 30, closed: make(chan struct{})}, nil
	})
	s := serve.New(serve.Options{Probes: []serve.Probe{good}, Interval: time.Minute, BudgetPct: 1, ProbeTimeout: time.Second,
		Host: sysinfo.Detect(), Version: "test", NoRuntimeMetrics: true,
		Save: func(r *result.Run) (serve.Saved, error) {
			return serve.Saved{Pruned: 1, DBBytes: 4096}, errors.New("disk full")
		}})
	s.Cycle(context.Background())
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	page := rec.Body.String()
	for _, want := range []string{
		`ctxlab_history_saves_total{status="failed"} 1`,
		`ctxlab_history_saves_total{status="ok"} 0`,
		"ctxlab_history_last_save_success 0",
		"ctxlab_history_pruned_total 1", // the prune before the failure
	} {
		if !strings.Contains(page, want) {
			t.Errorf("metrics page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"ctxlab_history_last_save_timestamp_seconds ", "ctxlab_history_db_bytes "} {
		if strings.Contains(page, unwanted) {
			t.Errorf("metrics page has %q though no save succeeded", unwanted)
		}
	}
}

// A problem after the cycle was committed (closing the file) is logged,
// and the save still counts as a success.
func TestCycleLogsLateSaveProblem(t *testing.T) {
	good := probe("fake/good", func(context.Context) (exp.Bench, error) {
		return &stuckBench{okOps: 1 << 30, closed: make(chan struct{})}, nil
	})
	var logged bytes.Buffer
	s := serve.New(serve.Options{Probes: []serve.Probe{good}, Interval: time.Minute, BudgetPct: 1, ProbeTimeout: time.Second,
		Host: sysinfo.Detect(), Version: "test", NoRuntimeMetrics: true, Log: slog.New(slog.NewTextHandler(&logged, nil)),
		Save: func(r *result.Run) (serve.Saved, error) {
			return serve.Saved{DBBytes: 4096, Late: errors.New("close: database is locked")}, nil
		}})
	s.Cycle(context.Background())
	if !strings.Contains(logged.String(), "close: database is locked") {
		t.Errorf("the late problem is not logged:\n%s", logged.String())
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`ctxlab_history_saves_total{status="ok"} 1`, "ctxlab_history_last_save_success 1", "ctxlab_history_db_bytes 4096"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics page lacks %q", want)
		}
	}
}
