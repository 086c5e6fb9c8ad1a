package experiments

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/testload"
)

// Each CPython way runs on the seed's database file (the unnamed arm) and
// in :memory: (/db=memory), side by side, and each arm carries its seed
// row.
func TestHopPyPlanFileAndMemory(t *testing.T) {
	plan := hopPyPlan(pyParams(exp.SuiteFull))
	if len(plan) != len(hopPyWays)*len(hopPyDBs) {
		t.Fatalf("%d CPython hop arms, want %d", len(plan), len(hopPyWays)*len(hopPyDBs))
	}
	for i, pa := range plan {
		how, db := hopPyWays[i/2], hopPyDBs[i%2]
		if !pa.key.Equal(hopPyKey(how, db)) || pa.params["how"] != how || pa.params["db"] != db {
			t.Errorf("arm %d: %s %v, want %s with how=%s db=%s", i, pa.key, pa.params, hopPyKey(how, db), how, db)
		}
		if _, ok := refText(hopPyRefs.GIL, pa.key); !ok {
			t.Errorf("%s: no published row beside it", pa.key)
		}
		if pa.quick && db != "file" {
			t.Errorf("%s: the quick suite keeps the seed's file arms only", pa.key)
		}
	}
	if hopPyKey("direct", "file").String() != "hop/pytask/direct" || hopPyKey("direct", "memory").String() != "hop/pytask/direct/db=memory" {
		t.Errorf("names: %s, %s", hopPyKey("direct", "file"), hopPyKey("direct", "memory"))
	}
}

func TestHopAiosqliteCheck(t *testing.T) {
	arm := func(name string, med float64) result.Arm {
		return result.Arm{Name: name, Experiment: "hop", Substrate: "pytask", Status: result.StatusOK, Median: med,
			Params: map[string]string{"gil": "enabled"}}
	}
	const name = "aiosqlite costs more than direct sqlite3"
	for _, c := range []struct {
		aio  float64
		want bool
	}{{58800, true}, {30000, true}, {130000, false}, {20000, false}, {7000, false}} {
		arms := []result.Arm{
			arm("hop/pytask/direct", 8400), arm("hop/pytask/executor", 30400),
			arm("hop/pytask/two-hop", 60000), arm("hop/pytask/aiosqlite", c.aio),
		}
		var got *result.Check
		for _, ch := range hopPyChecks(arms) {
			if strings.HasPrefix(ch.Name, name) {
				ch := ch
				got = &ch
			}
		}
		if got == nil {
			t.Fatalf("aiosqlite %v: no aiosqlite check", c.aio)
		}
		if got.Holds != c.want {
			t.Errorf("aiosqlite %v against two-hop 60 µs and direct 8.4 µs: holds %v, want %v (%s)", c.aio, got.Holds, c.want, got.Detail)
		}
		for _, w := range []string{"aiosqlite " + result.FormatNs(c.aio), "two-hop wrapper 60 µs", "direct 8.4 µs", "executor hop 30.4 µs", "db=file"} {
			if !strings.Contains(got.Detail, w) {
				t.Errorf("detail %q lacks %q", got.Detail, w)
			}
		}
		if len(got.Arms) != 4 {
			t.Errorf("check names %v", got.Arms)
		}
	}
	// Without aiosqlite (not importable: unsupported) there is no check.
	arms := []result.Arm{arm("hop/pytask/direct", 8400), arm("hop/pytask/two-hop", 60000),
		{Name: "hop/pytask/aiosqlite", Status: result.StatusUnsupported, Reason: "aiosqlite is not importable"}}
	for _, ch := range hopPyChecks(arms) {
		if strings.HasPrefix(ch.Name, name) {
			t.Errorf("a check without a measured aiosqlite arm: %+v", ch)
		}
	}
}

// The Go and CPython direct lookups on a file stand beside the :memory:
// ones in one finding (the only one), and every CPython arm shows its
// published row.
func TestHopStoreFindings(t *testing.T) {
	goArm := func(op string, gmp int, med float64) result.Arm {
		return result.Arm{Name: "hop/" + op + "/direct/x", Experiment: "hop", Substrate: "caller", Status: result.StatusOK,
			Median: med, GOMAXPROCS: gmp, Params: map[string]string{"op": op, "way": "direct"}}
	}
	py := func(name string, med float64) result.Arm {
		return result.Arm{Name: name, Experiment: "hop", Substrate: "pytask", Status: result.StatusOK, Median: med,
			Params: map[string]string{"gil": "enabled"}}
	}
	arms := []result.Arm{
		goArm("modernc-file", 2, 20000), goArm("modernc-memory", 2, 5000), goArm("modernc-file", 1, 1),
		py("hop/pytask/direct", 7250), py("hop/pytask/direct/db=memory", 2150),
	}
	spec, _ := exp.Lookup("hop")
	all := strings.Join(spec.Findings(arms), "\n")
	for _, w := range []string{
		"the SQLite lookup on a file vs in :memory:, direct: Go modernc (GOMAXPROCS=2) 20 µs vs 5 µs (4.0×) · CPython sqlite3 7.25 µs vs 2.15 µs (3.4×)",
		"hop/pytask/direct: here 7.25 µs; published 8.4 µs",
		"hop/pytask/direct/db=memory: here 2.15 µs; published 8.4 µs (on a file)",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("findings lack %q:\n%s", w, all)
		}
	}
	// One file vs :memory: line, with Go's figures alone too.
	for _, arms := range [][]result.Arm{arms, arms[:3]} {
		n := 0
		for _, f := range spec.Findings(arms) {
			if strings.Contains(f, "file vs") {
				n++
				if !strings.Contains(f, "Go modernc (GOMAXPROCS=2) 20 µs vs 5 µs (4.0×)") || !strings.Contains(f, "POSIX locks") {
					t.Errorf("file vs :memory: line %q", f)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d arms: %d file vs :memory: lines, want 1:\n%s", len(arms), n, strings.Join(spec.Findings(arms), "\n"))
		}
	}
}

// One real aiosqlite arm, end to end through the runner, against Debian's
// /usr/bin/python3 (python3-aiosqlite). It skips only outside CI when the
// interpreter or the module is missing; .ci/run installs the package.
func TestHopAiosqliteEndToEnd(t *testing.T) {
	ci := os.Getenv("CI") != "" || os.Getenv("CTXLAB_CI") != ""
	const py = "/usr/bin/python3"
	if _, err := pydriver.Resolve(py); err != nil {
		if ci {
			t.Fatalf("%s in CI: %v", py, err)
		}
		t.Skipf("no usable %s: %v", py, err)
	}
	defer pydriver.CloseAll()
	p := pyParams(exp.SuiteDefault)
	p.Python = py
	arms, err := withCPython(hopArms, hopPyPlan)(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	cfg.Reps, cfg.BenchTime, cfg.WarmUp = 2, 20*time.Millisecond, 10*time.Millisecond
	spec, _ := exp.Lookup("hop")
	var r *result.Arm
	w := testload.Start()
	for _, a := range arms {
		if a.Name == "hop/pytask/aiosqlite" {
			got := runner.Arm(context.Background(), cfg, spec, a)
			r = &got
		}
	}
	if r == nil {
		t.Fatal("no arm hop/pytask/aiosqlite")
	}
	if r.Status == result.StatusUnsupported && !ci {
		t.Skipf("%s: %s", py, r.Reason)
	}
	if r.Status == result.StatusTooFewOps {
		w.SkipIfStarved(t, r.Name+" (an op of "+r.Reason+")")
	}
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s: %s (.ci/run installs python3-aiosqlite)", r.Name, r.Status, r.Reason)
	}
	if r.Params["db"] != "file" || r.Params["python_executable"] == "" || len(r.RepMeans) != 2 || r.Median <= 0 || r.Switches == nil {
		t.Fatalf("incomplete result: params %v, reps %v, median %v, switches %v", r.Params, r.RepMeans, r.Median, r.Switches)
	}
	// Structure, not speed: each query goes to aiosqlite's thread and back,
	// so the process sleeps and wakes (voluntary switches) along the way.
	if r.Switches.Voluntary <= 0 {
		t.Errorf("no voluntary switches per query: %+v", r.Switches)
	}
}

// A run of only CPython arms sweeps stale database directories too: every
// CPython arm whose driver makes a ctxlab-sqlop-<pid>- directory (hop on
// the database file, concurrency on sqlite-file) removes the ones that
// killed runs left, when it opens, before the driver starts; the others
// leave them alone.
func TestCPythonFileDBArmsSweepStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("ctxlab-sqlop-%d-left", dead.Process.Pid))
	p := pyParams(exp.SuiteFull)
	in := &pydriver.Interpreter{Name: "python3", Path: "/nonexistent/python3", Version: "3.13.0"}
	plan := append(hopPyPlan(p), concurrencyPyPlan(p)...)
	sweeping := 0
	for _, pa := range plan {
		if err := os.MkdirAll(stale, 0o700); err != nil {
			t.Fatal(err)
		}
		a := bindPyArm(p, in, pa, "")
		b, err := a.Open(context.Background())
		if err != nil {
			t.Fatalf("%s: open: %v", a.Name, err)
		}
		b.Close()
		makesDir := pa.bench == "hop" && pa.params["db"] == "file" || pa.params["op"] == "sqlite-file"
		_, err = os.Stat(stale)
		if gone := os.IsNotExist(err); gone != makesDir {
			t.Errorf("%s (params %v): stale dir removed %v, want %v", a.Name, pa.params, gone, makesDir)
		}
		if makesDir {
			sweeping++
		}
	}
	if sweeping == 0 || sweeping == len(plan) {
		t.Errorf("%d of %d arms sweep: want the file-database ones only", sweeping, len(plan))
	}
}

// The verdict's CPython line finds the arms by name without the "/py=…"
// suffix --python all gives them: a line per interpreter, the file arms
// first; a single interpreter's unsuffixed arms read as before.
func TestHopVerdictPythonAll(t *testing.T) {
	arm := func(name string, med float64) result.Arm {
		key := exp.PlanName(name)
		how := strings.Split(strings.TrimPrefix(key, "hop/pytask/"), "/")[0]
		db := "file"
		if strings.HasSuffix(key, "/db=memory") {
			db = "memory"
		}
		return result.Arm{Name: name, Experiment: "hop", Substrate: "pytask", Status: result.StatusOK,
			Median: med, Min: med, Max: med, Params: map[string]string{"how": how, "db": db}}
	}
	var notes []string
	lines := func(arms ...result.Arm) []string {
		var out []string
		sec := hopVerdict(exp.NewVerdictRun(&result.Run{Arms: arms}))[0]
		for _, l := range append(sec.Lines, sec.More...) { // a second interpreter's lines give way (More)
			if strings.Contains(l, "CPython") {
				out = append(out, l)
			}
		}
		notes = sec.Notes
		return out
	}
	all := lines(
		arm("hop/pytask/direct/py=3.11.7", 8000), arm("hop/pytask/executor/py=3.11.7", 30000),
		arm("hop/pytask/direct/db=memory/py=3.11.7", 4000),
		arm("hop/pytask/direct/db=memory/py=3.13.1t", 5000), arm("hop/pytask/executor/db=memory/py=3.13.1t", 40000),
		result.Arm{Name: "hop/pytask/direct/py=" + freeThreadedTag, Experiment: "hop", Substrate: "pytask", Status: result.StatusUnsupported},
	)
	if len(all) != 2 {
		t.Fatalf("--python all: CPython lines %q, want one per interpreter", all)
	}
	for i, want := range []string{"CPython sqlite3, database file, py=3.11.7: an executor hop adds 22 µs", "CPython sqlite3, in-memory database, py=3.13.1t: an executor hop adds 35 µs"} {
		if !strings.Contains(all[i], want) {
			t.Errorf("line %d %q lacks %q", i, all[i], want)
		}
	}
	if !strings.Contains(strings.Join(notes, "\n"), "direct in :memory: 4 µs (4–4)") {
		t.Errorf("notes %q lack the same interpreter's :memory: lookup", notes)
	}
	one := lines(arm("hop/pytask/direct", 8000), arm("hop/pytask/executor", 30000))
	if len(one) != 1 || !strings.Contains(one[0], "CPython sqlite3, database file: an executor hop adds 22 µs") {
		t.Errorf("one interpreter: CPython lines %q", one)
	}
}
