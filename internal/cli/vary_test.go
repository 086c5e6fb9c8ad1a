package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/vary"
)

// seedCost stores a run of this host with thread round trips, so the
// direct part is priced from the history (no calibration).
func seedCost(t *testing.T, db string) string {
	t.Helper()
	f, err := os.Open("../report/testdata/browser-run.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := result.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	run.Env.Hostname, _ = os.Hostname()
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Save(context.Background(), run, store.SourceRun); err != nil {
		t.Fatal(err)
	}
	return run.ID
}

// asCtxlab makes this test binary ctxlab for the commands it runs.
func asCtxlab(t *testing.T) string {
	t.Helper()
	t.Setenv("CTXLAB_TEST_AS_MAIN", "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

// A real multi-threaded workload (cachecost's sweep, small) at two thread
// counts: every figure per value, the split priced with this host's stored
// cost per switch and saying where it came from, the decision, and a
// diagnose run in the history that show, compare (two values) and report
// read.
func TestVaryWorkload(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "h.db")
	costRun := seedCost(t, db)
	self := asCtxlab(t)
	code, out, errs := ctxlab(t, "diagnose", "--vary", "T=1,4", "--reps", "2", "--settle", "0s", "--interval", "20ms", "--db", db, "--format", "json",
		"--work-from", `elements: (\d+)`, "--", self, "workload", "--threads", "{T}", "--ws", "256KiB", "--elements", "2000000", "--pattern", "seq")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	run, err := result.Read(strings.NewReader(out))
	if err != nil {
		t.Fatalf("stdout is no run: %v\n%s", err, out)
	}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	if run.Suite != result.SuiteDiagnose || len(run.Arms) != 2 || run.Arms[0].Name != "diagnose/T=1" || run.Arms[1].Name != "diagnose/T=4" {
		t.Fatalf("run: suite %q, arms %d", run.Suite, len(run.Arms))
	}
	for _, a := range run.Arms {
		if a.Status != result.StatusOK || len(a.RepMeans) != 2 || len(a.RepMetrics["cpu-ns/op"]) != 2 || a.Ops != 2000000 || a.Unit != "ns/unit" {
			t.Errorf("%s: status %s, %d reps, rep_metrics %v, ops %d, unit %s", a.Name, a.Status, len(a.RepMeans), a.RepMetrics, a.Ops, a.Unit)
		}
		if a.CPUNsPerOp == nil || *a.CPUNsPerOp <= 0 || a.Switches == nil || a.Params["T"] == "" {
			t.Errorf("%s: cpu %v switches %v params %v", a.Name, a.CPUNsPerOp, a.Switches, a.Params)
		}
		for _, c := range a.Counters {
			if (c.PerOp == nil) == (c.Unsupported == "") {
				t.Errorf("%s: counter %s: a value and no reason, or neither: %+v", a.Name, c.Name, c)
			}
		}
	}
	if _, ok := run.Arms[1].Metrics["extra-cpu-ns/op"]; !ok {
		t.Errorf("T=4 has no split: %v", run.Arms[1].Metrics)
	}
	for _, want := range []string{"split T=1 → T=4, per unit:", "switch cost: ", "in run " + costRun + ": median round", "decision: ", "throughput"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// --format json: stderr holds JSON lines, as watch's and diagnose's do.
	if !strings.Contains(errs, "stored as run "+run.ID) {
		t.Errorf("no stored-run line:\n%s", errs)
	}
	var head vary.HeadRecord
	var values []vary.ValueRecord
	for _, line := range strings.Split(errs, "\n") {
		var k struct{ Kind string }
		if json.Unmarshal([]byte(line), &k) != nil {
			continue
		}
		switch k.Kind {
		case "vary":
			_ = json.Unmarshal([]byte(line), &head)
		case "value":
			var v vary.ValueRecord
			_ = json.Unmarshal([]byte(line), &v)
			values = append(values, v)
		}
	}
	if head.Per != "unit" || strings.Join(head.Values, ",") != "T=1,T=4" || len(values) != 2 {
		t.Fatalf("JSON lines: head %+v, %d values\n%s", head, len(values), errs)
	}
	for _, v := range values {
		for _, key := range []string{vary.KeyWall, vary.KeyCPU, vary.KeyRunq, vary.KeyInvoluntary} {
			if f, ok := v.Figures[key]; !ok || (f.Median == nil) == (f.Unsupported == "") {
				t.Errorf("%s: figure %s: %+v", v.Value, key, f)
			}
		}
		if v.Status != result.StatusOK || v.Runs != 2 {
			t.Errorf("%s: status %s, %d runs", v.Value, v.Status, v.Runs)
		}
	}
	// The history holds it, as a diagnose run.
	if code, out, errs := ctxlab(t, "show", run.ID, "--db", db); code != 0 || !strings.Contains(out, "diagnose") || !strings.Contains(out, "T=4") {
		t.Errorf("show: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := ctxlab(t, "show", run.ID, "--db", db, "--format", "bench"); code != 0 || !strings.Contains(out, "BenchmarkDiagnose/T=4-") || !strings.Contains(out, "cpu-ns/op") {
		t.Errorf("show --format bench: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := ctxlab(t, "compare", run.ID+":T=1", "last:T=4", "--db", db); code != 0 || !strings.Contains(out, "diagnose ") {
		t.Errorf("compare two values: %d\n%s%s", code, out, errs)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	if code, _, errs := ctxlab(t, "report", run.ID, "--db", db, "-o", html); code != 0 {
		t.Errorf("report: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(html); !bytes.Contains(b, []byte("wall and CPU time per unit of work")) {
		t.Errorf("the report draws no wall and CPU time per value")
	}
}

// A command that fails at one value: that value is reported with its exit
// status and not run again; the others go on; ctxlab exits 1.
func TestVaryFailingValue(t *testing.T) {
	isolate(t)
	code, _, errs := ctxlab(t, "diagnose", "--vary", "V=ok,bad,fine", "--reps", "2", "--settle", "0s", "--no-store", "--price=false",
		"--format", "table", "--", "sh", "-c", "test {V} != bad || { echo broken >&2; exit 3; }")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errs)
	}
	for _, want := range []string{
		"V=bad: failed: exit status 3: broken (1 of 1 runs); its figures are not used",
		"the command failed at V=bad exit status 3: broken (1 of 1 runs); the other values are above",
		"split V=ok → V=fine",
		"direct (in the switch path):",
		"not priced: --price=false",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(errs, "2 of 2") {
		t.Errorf("the other values did not finish both runs:\n%s", errs)
	}
}

// Ctrl-C mid-grid: the run in flight is stopped with everything it
// started (a daemon in its own session included), the runs that finished
// are printed, nothing is stored, ctxlab exits 130, and /proc holds no
// process of the command's.
func TestVaryInterrupt(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	self := asCtxlab(t)
	// The second run of V=b blocks; every other run ends at once.
	script := `n=$(cat ` + dir + `/n_{V} 2>/dev/null || echo 0); echo $((n+1)) > ` + dir + `/n_{V}
if [ {V} = b ] && [ $n -ge 1 ]; then setsid sleep 37.41 & sleep 37.41 & echo $$ > ` + dir + `/blocked; wait; fi`
	cmd := exec.Command(self, "diagnose", "--vary", "V=a,b", "--reps", "3", "--settle", "0s", "--db", db, "--price=false", "--", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "HOME="+dir)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "blocked")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the blocking run never started\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt) // ctxlab alone, as kill -INT would
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("ctxlab did not stop after SIGINT\n%s", errb.String())
	}
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, errb.String())
	}
	errs := errb.String()
	// stderr is a pipe, so --format auto writes JSON lines (as watch and
	// diagnose do), the head saying the run was interrupted.
	for _, want := range []string{`{"kind":"vary",`, `"interrupted":true`, `"value":"V=a"`, `"value":"V=b"`, "the run was interrupted and is not stored", "interrupted; results so far are above"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if left := processesWith(t, "37.41"); len(left) > 0 {
		t.Errorf("left running after Ctrl-C: %v\n%s", left, errs)
	}
	if _, err := os.Stat(db); err == nil {
		s, _ := store.Open(db)
		if es, _ := s.List(context.Background(), 0); len(es) > 0 {
			t.Errorf("an interrupted grid was stored: %v", es)
		}
		s.Close()
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// processesWith lists the live processes whose command line holds s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !bytes.Contains(st, []byte(") Z ")) {
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
