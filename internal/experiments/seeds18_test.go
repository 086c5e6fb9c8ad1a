package experiments

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// The seeds' remaining CPython findings (issue 18): the arms' plans,
// their checks on made-up figures, and one real arm of each kind.

func planKeys(plan []pyArm) map[string]pyArm {
	m := map[string]pyArm{}
	for _, a := range plan {
		m[a.key.String()] = a
	}
	return m
}

func TestSeedArmsPlanned(t *testing.T) {
	p := pyParams(exp.SuiteDefault)
	el := planKeys(eventloopPlan(p))
	if len(el) != 9 {
		t.Errorf("eventloop plans %d arms, want 3 ways × 3 works", len(el))
	}
	for _, k := range []string{"eventloop/pytask/inline/work=0.1ms", "eventloop/pytask/to_thread/work=1ms", "eventloop/pytask/process/work=5ms"} {
		if a, ok := el[k]; !ok || a.bench != "eventloop.lag" || a.params["how"] == "" || a.params["work_ms"] == "" {
			t.Errorf("eventloop arm %s: %+v", k, a)
		}
	}
	cc := planKeys(concurrencyPyPlan(p))
	for _, k := range []string{"concurrency/pytask/sqlite-file/to_thread/c=1", "concurrency/pytask/dict/run_in_executor/c=50",
		"concurrency/pythread/sqlite-file/pool-map/c=10", "concurrency/pythread/dict/pool-map/c=50"} {
		if _, ok := cc[k]; !ok {
			t.Errorf("concurrency arm %s missing", k)
		}
	}
	if a := cc["concurrency/pytask/dict/run_in_executor/c=50"]; !a.full || a.params["how"] != "executor" {
		t.Errorf("run_in_executor arm %+v: want the full suite only, how=executor", a)
	}
	q := pyParams(exp.SuiteDefault)
	q.Options = settings(map[string]string{"concurrency.levels": "2,7"})
	if _, ok := planKeys(concurrencyPyPlan(q))["concurrency/pythread/dict/pool-map/c=7"]; !ok {
		t.Error("concurrency.levels does not set the CPython arms' C")
	}
	in := planKeys(interferencePyPlan(p))
	for _, k := range []string{"interference/pythread/simplequeue/busy=1/si=default/in=process", "interference/pythread/simplequeue/busy=1/si=0.5ms/in=process",
		"interference/pytask/asyncio-queue/busy=1/si=default/in=process"} {
		if a, ok := in[k]; !ok || a.params["busy_in"] != "process" || a.place != "unpinned" || a.quick {
			t.Errorf("remedy arm %s: %+v", k, a)
		}
	}
	for k := range in {
		if strings.HasSuffix(k, "/in=process") && (strings.Contains(k, "busy=0") || strings.Contains(k, "cross-cpu")) {
			t.Errorf("remedy arm %s: only beside an unpinned busy arm", k)
		}
	}
	if in["interference/pythread/simplequeue/busy=1/si=default"].params["busy_in"] != "" {
		t.Error("the busy-thread arm's params were changed by its remedy twin")
	}
	if _, ok := planKeys(pingpongPyPlan(p))["pingpong/pytask/asyncio-event/unpinned"]; !ok {
		t.Error("no asyncio.Event pingpong arm")
	}
}

func elArmFor(how, x string, median, p50, p99 float64) result.Arm {
	return result.Arm{Name: "eventloop/pytask/" + how + "/work=" + x + "ms", Substrate: "pytask", Status: result.StatusOK, Median: median,
		Params:      map[string]string{"how": how, "work_ms": x, "gil": "enabled", "switch_interval": "5ms"},
		Metrics:     map[string]float64{"work-ms": 5.0, "cpu-request-ratio": 0.1, "timer-lag-p50-us": p50, "timer-lag-p99-us": p99, "timer-fires": 100, "loop-thread-cpu-ratio": 0.97},
		Percentiles: &result.Percentiles{P50: 40e3, P99: 900e3}}
}

func TestEventloopChecks(t *testing.T) {
	arms := []result.Arm{
		elArmFor("inline", "5", 0.55e6, 3000, 9800), // cap 1/(0.1 × 5 ms) = 2000/s; 1818/s
		elArmFor("to_thread", "5", 0.6e6, 2000, 5100),
		elArmFor("process", "5", 0.3e6, 80, 1200),
	}
	arms[1].Metrics["work-ms"] = 4.9 // calibrated a little short of the interval: still checked
	eventloopDerive(arms)
	if got := arms[0].Metrics["throughput-requests/s"]; int(got) != 1818 {
		t.Errorf("throughput %v, want 1818", got)
	}
	cs := eventloopChecks(arms)
	if len(cs) != 4 {
		t.Fatalf("%d checks, want inline lag, inline cap, to_thread, process: %+v", len(cs), cs)
	}
	for _, c := range cs {
		if !c.Holds || c.Detail == "" {
			t.Errorf("does not hold: %s — %s", c.Name, c.Detail)
		}
	}
	// The other way round: a pool that lets the timer slip, inline work
	// that does not show, a throughput over the cap.
	bad := []result.Arm{elArmFor("inline", "5", 0.2e6, 300, 900), elArmFor("process", "5", 0.3e6, 80, 2500)}
	badChecks := eventloopChecks(bad)
	if len(badChecks) != 3 {
		t.Fatalf("%d checks on the bad figures, want 3 (inline lag, inline cap, process pool)", len(badChecks))
	}
	for _, c := range badChecks {
		if c.Holds {
			t.Errorf("holds on bad figures: %s — %s", c.Name, c.Detail)
		}
		if strings.Contains(c.Name, "process pool") && !strings.Contains(c.Detail, "p99 2.5 ms") {
			t.Errorf("detail lacks the figure: %s", c.Detail)
		}
	}
	// Work shorter than the switch interval: no to_thread check; no GIL:
	// the free-threaded finding instead.
	short := elArmFor("to_thread", "1", 0.1e6, 100, 900)
	short.Metrics["work-ms"] = 1
	if cs := eventloopChecks([]result.Arm{short}); len(cs) != 0 {
		t.Errorf("checks for 1 ms of to_thread work: %+v", cs)
	}
	ft := elArmFor("to_thread", "5", 0.1e6, 100, 900)
	ft.Params["gil"] = "disabled"
	if cs := eventloopChecks([]result.Arm{ft}); len(cs) != 1 || cs[0].Name != eventloopFreeThreadedCheck || !cs[0].Holds {
		t.Errorf("free-threaded checks %+v", cs)
	}
	f := strings.Join(eventloopFindings(arms), "\n")
	for _, want := range []string{"5 ms of CPU work in 1 request of 10", "inline: 1818 requests/s, timer lag p50 3 ms p99 9.8 ms", "I/O requests p50 40 µs p99 900 µs"} {
		if !strings.Contains(f, want) {
			t.Errorf("findings lack %q:\n%s", want, f)
		}
	}
}

func TestConcurrencyPyChecks(t *testing.T) {
	arm := func(sub, way, c string, median float64) result.Arm {
		return result.Arm{Name: "concurrency/" + sub + "/sqlite-file/" + way + "/c=" + c, Substrate: sub, Status: result.StatusOK, Median: median,
			Params: map[string]string{"op": "sqlite-file", "way": way, "c": c}, Switches: &result.Switches{Voluntary: 0.5, Involuntary: 0.1}}
	}
	arms := []result.Arm{arm("pytask", "to_thread", "1", 60e3), arm("pythread", "pool-map", "1", 30e3),
		arm("pytask", "to_thread", "10", 50e3), arm("pythread", "pool-map", "10", 55e3), arm("pytask", "to_thread", "50", 50e3)}
	cs := concurrencyPyChecks(arms)
	if len(cs) != 2 {
		t.Fatalf("%d checks, want one per C with both ways: %+v", len(cs), cs)
	}
	holds := map[bool]int{}
	for _, c := range cs {
		holds[c.Holds]++
		if !strings.Contains(c.Detail, "switches per lookup") {
			t.Errorf("detail %q lacks the switches", c.Detail)
		}
	}
	if holds[true] != 1 || holds[false] != 1 {
		t.Errorf("checks %+v: want C=1 to hold and C=10 not", cs)
	}
	// The whole experiment: the Go checks never see CPython arms.
	spec, _ := exp.Lookup("concurrency")
	concurrencyDerive(arms)
	if got := arms[0].Metrics["elapsed-ms/10000-lookups"]; got != 600 {
		t.Errorf("elapsed for 10 000 = %v ms, want 600", got)
	}
	if n := len(spec.Checks(arms)); n != 2 {
		t.Errorf("the concurrency spec gives %d checks on CPython arms, want their 2", n)
	}
	f := strings.Join(spec.Findings(arms), "\n")
	if !strings.Contains(f, "10 000 sqlite-file lookups through asyncio.gather under Semaphore(C), each call via to_thread: C=1 600.0 ms (0.60 switches/lookup) · C=10 500.0 ms") {
		t.Errorf("findings:\n%s", f)
	}
}

func TestBusyProcessChecks(t *testing.T) {
	arm := func(key string, p50, p99 float64, params map[string]string) result.Arm {
		ps := map[string]string{"busy": "1", "gil": "enabled", "switch_interval": "5ms"}
		for k, v := range params {
			ps[k] = v
		}
		return result.Arm{Name: key, Substrate: "pythread", Status: result.StatusOK, Median: p50, Params: ps,
			Percentiles: &result.Percentiles{P50: p50, P99: p99}}
	}
	base := "interference/pythread/simplequeue/"
	arms := []result.Arm{
		arm(base+"busy=0/si=default", 20e3, 80e3, map[string]string{"busy": "0"}),
		arm(base+"busy=1/si=default", 5e6, 15e6, nil),
		arm(base+"busy=1/si=default/in=process", 25e3, 150e3, map[string]string{"busy_in": "process"}),
		arm(base+"busy=1/si=0.5ms/in=process", 25e3, 170e3, map[string]string{"busy_in": "process", "switch_interval": "0.5ms"}),
	}
	cs := interferencePyChecks(arms)
	remedy, gil := 0, 0
	for _, c := range cs {
		switch {
		case strings.Contains(c.Name, "remedy"):
			remedy++
			if strings.Contains(c.Detail, "si=0.5ms") == c.Holds {
				t.Errorf("%s — %s: 150 µs against 80 µs holds, 170 µs does not", c.Name, c.Detail)
			}
			if !strings.Contains(c.Detail, "no busy worker (interference/pythread/simplequeue/busy=0/si=default: p50 20 µs, p99 80 µs)") {
				t.Errorf("detail %q lacks the baseline", c.Detail)
			}
		case strings.Contains(c.Name, "switch interval"):
			gil++
			if strings.Contains(strings.Join(c.Arms, " "), "in=process") {
				t.Errorf("the GIL check took a remedy arm: %+v", c)
			}
		}
	}
	if remedy != 2 || gil != 1 {
		t.Errorf("%d remedy and %d GIL checks, want 2 and 1: %+v", remedy, gil, cs)
	}
	if f := strings.Join(busyProcessFindings(arms), "\n"); !strings.Contains(f, "p99 15 ms → 150 µs") {
		t.Errorf("findings:\n%s", f)
	}
}

func TestEventPairCheck(t *testing.T) {
	arms := []result.Arm{
		{Name: asyncioEventArm.String(), Substrate: "pytask", Status: result.StatusOK, Median: 6e3, Switches: &result.Switches{Voluntary: 0.001}},
		{Name: threadingEventArm.String(), Substrate: "pythread", Status: result.StatusOK, Median: 12e3, Switches: &result.Switches{Voluntary: 2, Involuntary: 0.1}},
	}
	cs := eventPairChecks(arms)
	if len(cs) != 1 || !cs[0].Holds || !strings.Contains(cs[0].Detail, "asyncio.Event 6 µs, 0.001 switches per round trip; threading.Event 12 µs, 2.10 switches") {
		t.Fatalf("checks %+v", cs)
	}
	arms[0].Switches.Voluntary = 1
	if cs := eventPairChecks(arms); cs[0].Holds {
		t.Fatalf("holds with an OS switch per asyncio.Event round trip: %+v", cs)
	}
	if f := strings.Join(pingpongPyFindings(arms), "\n"); !strings.Contains(f, "asyncio.Event 6 µs") || !strings.Contains(f, "5.3 µs") {
		t.Errorf("findings:\n%s", f)
	}
}

// One real arm of each kind against python3, with tiny repetitions:
// they run, and answer in the shape their checks read.
func TestSeedArmsEndToEnd(t *testing.T) {
	if _, err := pydriver.Resolve("python3"); err != nil {
		t.Skipf("no usable python3: %v", err)
	}
	defer pydriver.CloseAll()
	want := map[string]bool{
		"pingpong/pytask/asyncio-event/unpinned":                         true,
		"concurrency/pythread/sqlite-file/pool-map/c=10":                 true,
		"interference/pythread/simplequeue/busy=1/si=default/in=process": true,
		"eventloop/pytask/process/work=1ms":                              true,
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	cfg.Reps, cfg.BenchTime, cfg.WarmUp = 2, 30*time.Millisecond, 5*time.Millisecond
	p := pyParams(exp.SuiteDefault)
	got := map[string]result.Arm{}
	for _, name := range []string{"pingpong", "concurrency", "interference", "eventloop"} {
		spec, _ := exp.Lookup(name)
		arms, err := spec.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			if want[a.Name] {
				got[a.Name] = runner.Arm(context.Background(), cfg, spec, a)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("ran %d arms, want %d", len(got), len(want))
	}
	for n, r := range got {
		if r.Status != result.StatusOK {
			t.Fatalf("%s: %s: %s", n, r.Status, r.Reason)
		}
		if r.Median <= 0 || r.Switches == nil || r.Params["gil"] == "" {
			t.Fatalf("%s: incomplete result %+v", n, r)
		}
	}
	if r := got["interference/pythread/simplequeue/busy=1/si=default/in=process"]; r.Percentiles == nil || r.Params["busy_in"] != "process" {
		t.Errorf("remedy arm: %+v", r)
	}
	el := got["eventloop/pytask/process/work=1ms"]
	if el.Metrics["timer-fires"] < 1 || el.Metrics["work-ms"] <= 0 || el.Percentiles == nil {
		t.Errorf("eventloop arm metrics %v, percentiles %+v", el.Metrics, el.Percentiles)
	}
	if c := got["concurrency/pythread/sqlite-file/pool-map/c=10"]; c.Percentiles != nil {
		t.Errorf("concurrency arm has per-op latencies; C lookups are in flight at once: %+v", c.Percentiles)
	}
}

// The verdict's busy-thread line reads the busy thread, never its remedy
// twin, and adds the remedy's figures when the run has them.
func TestBusyProcessVerdictLine(t *testing.T) {
	arm := func(name, busy, in string, p50, p99 float64) result.Arm {
		return result.Arm{Name: name, Experiment: "interference", Substrate: "pythread", Status: result.StatusOK, Median: p50,
			Params:      map[string]string{"busy": busy, "busy_in": in, "switch_interval": "5ms"},
			Percentiles: &result.Percentiles{P50: p50, P99: p99}}
	}
	base := "interference/pythread/simplequeue/"
	run := &result.Run{Arms: []result.Arm{
		arm(base+"busy=1/si=default/in=process", "1", "process", 16e3, 70e3),
		arm(base+"busy=0/si=default", "0", "", 15e3, 60e3),
		arm(base+"busy=1/si=default", "1", "", 5e6, 15e6),
	}}
	line, notes := interferencePyVerdict(exp.NewVerdictRun(run))
	if !strings.Contains(line, "p50 15 µs → 5 ms, p99 60 µs → 15 ms") {
		t.Errorf("verdict line %q", line)
	}
	if text := strings.Join(notes, "\n"); !strings.Contains(text, "the busy loop in a process instead: p50 16 µs, p99 70 µs") {
		t.Errorf("verdict notes %q", text)
	}
}
