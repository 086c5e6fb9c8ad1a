package experiments

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func pyParams(suite string, cpus ...int) exp.Params {
	if len(cpus) == 0 {
		cpus = []int{0, 1}
	}
	return exp.Params{Suite: suite, CPUs: cpus, Host: sysinfo.Detect()}
}

// pythonArms are the CPython arms of every experiment, as `ctxlab run
// python` selects them.
func pythonArms(p exp.Params) ([]exp.Arm, error) {
	sel, err := exp.Select([]string{"python"}, p)
	if err != nil {
		return nil, err
	}
	var out []exp.Arm
	for _, s := range sel {
		out = append(out, s.Arms...)
	}
	return out, nil
}

// pythonPlan is every experiment's CPython plan.
func pythonPlan(p exp.Params) []pyArm {
	var out []pyArm
	for _, f := range []func(exp.Params) []pyArm{pingpongPyPlan, ringPyPlan, yieldPyPlan, interferencePyPlan, hopPyPlan, callchainPyPlan,
		concurrencyPyPlan, eventloopPlan} {
		out = append(out, f(p)...)
	}
	return out
}

// specOf is the experiment an arm belongs to.
func specOf(t *testing.T, name string) *exp.Spec {
	t.Helper()
	first, _, _ := strings.Cut(name, "/")
	s, ok := exp.Lookup(first)
	if !ok {
		t.Fatalf("%s: no experiment %q", name, first)
	}
	return s
}

func TestPythonSkippedWithoutPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	arms, err := pythonArms(pyParams(exp.SuiteQuick))
	if err != nil {
		t.Fatalf("no python3 must not be an error: %v", err)
	}
	if len(arms) == 0 {
		t.Fatal("no arms listed")
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	for _, a := range arms {
		spec := specOf(t, a.Name)
		r := runner.Arm(context.Background(), cfg, spec, a)
		if r.Status != result.StatusSkipped || !strings.Contains(r.Reason, "python3 not found") {
			t.Fatalf("%s: status %q reason %q, want skipped for want of python3", a.Name, r.Status, r.Reason)
		}
	}
}

// An explicit --python that does not work is listed like any other (its
// arms are named from the plan) and refused when the run resolves its arms,
// before any opens.
func TestPythonBadChoice(t *testing.T) {
	for _, choice := range []string{"/no/such/python3.99", "python3.13t-not-here"} {
		p := pyParams(exp.SuiteQuick)
		p.Python = choice
		sel, err := exp.Select([]string{"pingpong"}, p)
		if err != nil {
			t.Fatalf("%s: listing the arms: %v", choice, err)
		}
		err = exp.Resolve(context.Background(), sel)
		if err == nil || !strings.Contains(err.Error(), "--python "+choice) {
			t.Fatalf("%s: err = %v, want an error naming the value", choice, err)
		}
	}
}

func TestPythonPlan(t *testing.T) {
	for _, suite := range []string{exp.SuiteQuick, exp.SuiteDefault, exp.SuiteFull} {
		plan := pythonPlan(pyParams(suite))
		seen := map[string]bool{}
		quick := 0
		for _, a := range plan {
			if seen[a.key.String()] {
				t.Fatalf("duplicate arm %s", a.key)
			}
			seen[a.key.String()] = true
			if a.quick {
				quick++
			}
			if a.bench == "" || a.op == "" || a.sub == "" {
				t.Fatalf("incomplete arm %+v", a)
			}
		}
		if quick == 0 || quick > 12 {
			t.Fatalf("%s: %d quick arms; the quick suite budget allows a handful", suite, quick)
		}
		for _, k := range []string{"pingpong/pythread/simplequeue/unpinned", "pingpong/pythread/event/unpinned",
			"pingpong/pytask/asyncio-queue/unpinned", "pingpong/pytask/future/unpinned", "pingpong/pyprocess/pipe/unpinned",
			"pingpong/pythread/pipe/unpinned", "ring/pythread/simplequeue/n=1000", "ring/pytask/asyncio-queue/n=100",
			"yield/pytask/sleep0/k=10000", "interference/pytask/asyncio-queue/busy=1/si=0.5ms", "hop/pytask/two-hop",
			"hop/pytask/aiosqlite", "callchain/pytask/create-task"} {
			if !seen[k] {
				t.Errorf("%s: arm %s missing", suite, k)
			}
		}
	}
	p := pyParams(exp.SuiteDefault)
	p.Workers = []int{1, 200000}
	for _, a := range pythonPlan(p) {
		if strings.HasPrefix(a.key.String(), "ring/") && !strings.Contains(a.key.String(), "same-cpu") && a.unsup == "" {
			t.Errorf("%s should be unsupported", a.key)
		}
	}
}

func TestPythonCrossCPUNeedsTwo(t *testing.T) {
	in := &pydriver.Interpreter{Name: "python3", Path: "/x/python3", Version: "3.11.7"}
	for _, pa := range pythonPlan(pyParams(exp.SuiteFull, 0)) {
		a := bindPyArm(pyParams(exp.SuiteFull, 0), in, pa, "")
		if pa.place == "cross-cpu" && a.Unsupported == "" {
			t.Errorf("%s runs cross-cpu on one CPU", a.Name)
		}
		if pa.place == "same-cpu" && a.Params["cpus"] != "0" {
			t.Errorf("%s: cpus %q", a.Name, a.Params["cpus"])
		}
	}
}

func TestPythonChecks(t *testing.T) {
	ok := func(name, sub string, med float64, sw float64) result.Arm {
		return result.Arm{Name: name, Substrate: sub, Status: result.StatusOK, Median: med, Placement: "unpinned",
			Switches: &result.Switches{Voluntary: sw}, Params: map[string]string{"gil": "enabled", "switch_interval": "5ms"}}
	}
	busy := ok("interference/pythread/simplequeue/busy=1/si=default", "pythread", 6e6, 2)
	busy.Params["busy"] = "1"
	busy.Percentiles = &result.Percentiles{P50: 5.1e6, P99: 15e6}
	arms := []result.Arm{
		ok("pingpong/pythread/simplequeue/unpinned", "pythread", 12000, 2.1),
		ok("pingpong/pytask/asyncio-queue/unpinned", "pytask", 8000, 0.3),
		busy,
		ok("hop/pytask/direct", "pytask", 3000, 0),
		ok("hop/pytask/executor", "pytask", 40000, 3),
		ok("hop/pytask/two-hop", "pytask", 30000, 6),
	}
	holds := map[string]bool{}
	for _, c := range pythonChecks(arms) {
		holds[c.Name[:20]] = c.Holds
		if c.Name[:20] == "one busy pure-Python" && !strings.Contains(c.Detail, "1.02× the switch interval") {
			t.Errorf("busy detail %q does not relate p50 to the switch interval", c.Detail)
		}
	}
	want := map[string]bool{"a CPython thread (or": true, "an asyncio task roun": false, "one busy pure-Python": true, "sqlite3 lookup: two ": false}
	for k, v := range want {
		got, ok := holds[k]
		if !ok || got != v {
			t.Errorf("check %q: holds=%v present=%v, want %v", k, got, ok, v)
		}
	}
	if f := pythonFindings(arms); len(f) == 0 || !strings.Contains(strings.Join(f, "\n"), "published 7.2 µs") {
		t.Errorf("findings lack the published figures: %q", f)
	}
	y := ok("yield/pytask/sleep0/k=10000", "pytask", 900, 0)
	y.Notes = []string{"not comparable with a long loop's figure: each of the 10000 tasks yields only 9 times per repetition"}
	for _, line := range pythonFindings(append(arms, y)) {
		if strings.HasPrefix(line, "yield/") != strings.Contains(line, "not comparable") {
			t.Errorf("finding %q: only the yield arm, whose note says so, is not comparable", line)
		}
	}
}

// TestPythonEndToEnd runs two real arms through the runner with python3.
func TestPythonEndToEnd(t *testing.T) {
	if _, err := pydriver.Resolve("python3"); err != nil {
		t.Skipf("no usable python3: %v", err)
	}
	defer pydriver.CloseAll()
	arms, err := pythonArms(pyParams(exp.SuiteQuick))
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	cfg.Reps, cfg.BenchTime, cfg.WarmUp = 2, 20*time.Millisecond, 10*time.Millisecond
	spec, _ := exp.Lookup("pingpong")
	got := map[string]result.Arm{}
	for _, a := range arms {
		if a.Name == "pingpong/pythread/simplequeue/unpinned" || a.Name == "pingpong/pytask/asyncio-queue/unpinned" {
			got[a.Substrate] = runner.Arm(context.Background(), cfg, spec, a)
		}
	}
	for sub, r := range got {
		if r.Status != result.StatusOK {
			t.Fatalf("%s: %s: %s", r.Name, r.Status, r.Reason)
		}
		if len(r.RepMeans) != 2 || r.Median <= 0 || r.Switches == nil || r.Percentiles == nil || r.Percentiles.Samples == 0 {
			t.Fatalf("%s: incomplete result %+v", sub, r)
		}
		if r.Params["python"] == "" || r.Params["gil"] == "" || r.Params["python_executable"] == "" {
			t.Fatalf("%s: params %v lack the interpreter", sub, r.Params)
		}
	}
	th, tk := got["pythread"], got["pytask"]
	// Structure, not speed: the measuring thread blocks in get() every round
	// trip, so at least one voluntary switch; the loop never blocks.
	if th.Switches.Voluntary < 1 || tk.Switches.Voluntary >= th.Switches.Voluntary {
		t.Fatalf("voluntary switches per round trip: thread %.2f, task %.2f", th.Switches.Voluntary, tk.Switches.Voluntary)
	}
}

// TestPythonArmSizedByRunner: a CPython arm run by the runner is sized
// by the runner — the driver gets the open arm, batches from one op up,
// then the timed repetitions the runner's rule gives, and no policy of its
// own to apply. A fake driver (a shell script standing in for python3)
// whose ops take 1 µs records the messages it got. (runner's
// TestRunnerSizesTheDriver holds the real driver to the rule itself.)
func TestPythonArmSizedByRunner(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "messages")
	fake := filepath.Join(dir, "python3")
	script := `#!/bin/sh
echo '{"hello":{"protocol":1,"implementation":"cpython","version":"3.0.0","clock_ns":30}}'
while read -r line; do
  printf '%s\n' "$line" >> ` + log + `
  id=$(printf '%s' "$line" | sed 's/^{"id":\([0-9]*\).*/\1/')
  case "$line" in
  *'"do":"open"'*) printf '{"id":%s,"ok":true,"unit":1,"sampled":true}\n' "$id" ;;
  *'"do":"batch"'*) n=$(printf '%s' "$line" | sed 's/.*"n":\([0-9]*\).*/\1/')
    printf '{"id":%s,"ok":true,"batch":[%s,%s000]}\n' "$id" "$n" "$n" ;;
  *'"do":"timed"'*) printf '{"id":%s,"ok":true,"rep_ns":[1000,1000,1000],"ops":[10,10,10]}\n' "$id" ;;
  *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	defer pydriver.CloseAll()
	in := &pydriver.Interpreter{Name: "python3", Path: fake, Version: "3.0.0"}
	plan := pythonPlan(pyParams(exp.SuiteQuick))
	a := bindPyArm(pyParams(exp.SuiteQuick), in, plan[0], "")
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	spec, _ := exp.Lookup("pingpong")
	if r := runner.Arm(context.Background(), cfg, spec, a); r.Status != result.StatusOK {
		t.Fatalf("%s: %s: %s", r.Name, r.Status, r.Reason)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("message %q: %v", line, err)
		}
		if _, ok := m["policy"]; ok {
			t.Fatalf("message %q carries a policy: the runner decides", line)
		}
		msgs = append(msgs, m)
	}
	last := msgs[len(msgs)-1]
	if len(msgs) < 4 || msgs[0]["do"] != "open" || msgs[0]["bench"] != plan[0].bench || msgs[1]["do"] != "batch" || msgs[1]["n"] != 1.0 || last["do"] != "timed" {
		t.Fatalf("messages %v: want open, batches from one op, then timed", msgs)
	}
	for _, m := range msgs[1 : len(msgs)-1] {
		if m["do"] != "batch" {
			t.Fatalf("message %v between the open arm and its repetitions", m)
		}
	}
	if last["reps"] != float64(cfg.Reps) || last["ops"] != float64(cfg.BenchTime/time.Microsecond) || last["every"].(float64) < 1 {
		t.Fatalf("timed %v: want %d repetitions of the benchtime at 1 µs an op, sampled", last, cfg.Reps)
	}
}

// pythonChecks and pythonFindings are every experiment's, each over its
// own arms, as the runner evaluates them.
func pythonChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for name, as := range byExperiment(arms) {
		s, _ := exp.Lookup(name)
		out = append(out, s.Checks(as)...)
	}
	return out
}

func pythonFindings(arms []result.Arm) []string {
	var out []string
	for name, as := range byExperiment(arms) {
		s, _ := exp.Lookup(name)
		out = append(out, s.Findings(as)...)
	}
	return out
}

func byExperiment(arms []result.Arm) map[string][]result.Arm {
	m := map[string][]result.Arm{}
	for _, a := range arms {
		first, _, _ := strings.Cut(a.Name, "/")
		a.Experiment = first
		m[first] = append(m[first], a)
	}
	return m
}

// The CPython arms are substrates of their experiments: each of the six
// has them, named <experiment>/<substrate>/…, beside its Go arms, and the
// forked process pipe does not take Go's process pipe's name.
func TestCPythonArmsLiveInTheirExperiments(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // listed (skipped) without an interpreter
	p := pyParams(exp.SuiteDefault)
	for _, name := range []string{"pingpong", "ring", "yield", "interference", "hop", "callchain"} {
		s, ok := exp.Lookup(name)
		if !ok {
			t.Fatalf("no experiment %s", name)
		}
		arms, err := s.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		subs := map[string]int{}
		names := map[string]bool{}
		for _, a := range arms {
			if names[a.Name] {
				t.Errorf("%s: two arms named %s", name, a.Name)
			}
			names[a.Name] = true
			subs[a.Substrate]++
			if cpythonSubstrates[a.Substrate] && !strings.HasPrefix(a.Name, name+"/"+a.Substrate+"/") {
				t.Errorf("%s: CPython arm %s is not named %s/%s/…", name, a.Name, name, a.Substrate)
			}
		}
		if subs["pythread"]+subs["pytask"] == 0 || len(subs) < 3 {
			t.Errorf("%s: substrates %v, want Go and CPython ones together", name, subs)
		}
		if name == "pingpong" {
			for _, sub := range []string{"goroutine", "thread", "process", "pythread", "pytask", "pyprocess"} {
				if subs[sub] == 0 {
					t.Errorf("pingpong has no %s arm: %v", sub, subs)
				}
			}
			if !names["pingpong/process/pipe/unpinned"] || !names["pingpong/pyprocess/pipe/unpinned"] {
				t.Error("pingpong lacks Go's or CPython's process pipe")
			}
		}
	}
	if _, ok := exp.Lookup("python"); ok {
		t.Error("python is still an experiment; it is a selector")
	}
	quick, err := pythonArms(pyParams(exp.SuiteQuick))
	if err != nil {
		t.Fatal(err)
	}
	// The 7 it had before, one each for asyncio.Event and eventloop,
	// concurrency's pair (a semaphore + to_thread and the pool map at C=10,
	// so its check runs in the quick suite too), and asyncio.Queue on one
	// CPU (the verdict's tasks-vs-threads line, issue 50).
	if len(quick) != 12 {
		var ns []string
		for _, a := range quick {
			ns = append(ns, a.Name)
		}
		t.Errorf("the quick suite has %d CPython arms, want 12: %v", len(quick), ns)
	}
}

// --python all without a free-threaded build: the arms with a published
// free-threaded figure are listed once more as unsupported, the
// free-threaded check says why it was not evaluated, and the findings put
// the published figure beside the reason.
func TestPythonAllWithoutFreeThreaded(t *testing.T) {
	ins := pydriver.FindAll()
	if len(ins) == 0 {
		t.Skip("no python3 on PATH")
	}
	for _, in := range ins {
		if in.FreeThreaded {
			t.Skip("a free-threaded CPython is here")
		}
	}
	p := pyParams(exp.SuiteDefault)
	p.Python = "all"
	arms, err := pythonArms(p)
	if err != nil {
		t.Fatal(err)
	}
	ft := map[string]string{}
	for _, a := range arms {
		if strings.HasSuffix(a.Name, "/py="+freeThreadedTag) {
			ft[a.Name] = a.Unsupported
		}
	}
	for _, n := range []string{"ring/pythread/simplequeue/n=2", "ring/pythread/simplequeue/n=100",
		"interference/pythread/simplequeue/busy=1/si=default", "interference/pythread/simplequeue/busy=1/si=default/cross-cpu"} {
		if r, ok := ft[n+"/py="+freeThreadedTag]; !ok || !strings.Contains(r, "no free-threaded CPython found") {
			t.Errorf("%s%s: listed %v, reason %q", n, "/py="+freeThreadedTag, ok, r)
		}
	}
	if len(ft) != 4 {
		t.Errorf("free-threaded placeholders %v, want 4", ft)
	}
	// What the runner makes of them, through the experiments' checks and findings.
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	var got []result.Arm
	for _, a := range arms {
		if strings.HasSuffix(a.Name, "/py="+freeThreadedTag) {
			got = append(got, runner.Arm(context.Background(), cfg, specOf(t, a.Name), a))
		}
	}
	for _, r := range got {
		if r.Status != result.StatusUnsupported || !strings.Contains(r.Reason, "no free-threaded CPython found") {
			t.Errorf("%s: %s %q", r.Name, r.Status, r.Reason)
		}
	}
	skipped := 0
	for _, c := range pythonChecks(got) {
		if strings.Contains(c.Name, "free-threaded") && c.Skipped && strings.Contains(c.Detail, "unsupported: no free-threaded CPython found") {
			skipped++
		}
	}
	if skipped != 1 {
		t.Errorf("%d free-threaded checks say unsupported, want 1", skipped)
	}
	f := strings.Join(pythonFindings(got), "\n")
	if !strings.Contains(f, "unsupported: no free-threaded CPython found") || !strings.Contains(f, "4.64 µs per hop (free-threaded)") {
		t.Errorf("findings do not say the free-threaded arms are unsupported beside the figure:\n%s", f)
	}
}

// A free-threaded busy-thread arm is checked the other way round: with no
// GIL the busy thread should not hold the round trip for the interval.
func TestFreeThreadedBusyCheck(t *testing.T) {
	a := result.Arm{Name: "interference/pythread/simplequeue/busy=1/si=default/py=3.13.1t", Substrate: "pythread", Status: result.StatusOK,
		Params:      map[string]string{"busy": "1", "gil": "disabled", "switch_interval": "5ms"},
		Percentiles: &result.Percentiles{P50: 7000, P99: 16000}}
	cs := interferencePyChecks([]result.Arm{a})
	if len(cs) != 1 || cs[0].Name != freeThreadedBusyCheck || !cs[0].Holds {
		t.Fatalf("checks %+v", cs)
	}
}
