package experiments

import (
	"runtime"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop/sqloptest"
)

// Every concurrency arm runs and checks each row, leaving no goroutine,
// thread worker or temp dir behind.
func TestConcurrencyEveryArmRuns(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	arms, err := concurrencyArms(hopParams(exp.SuiteFull, map[string]string{"concurrency.levels": "1,3", "concurrency.pool": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arms {
		if a.Unsupported != "" {
			continue
		}
		before := runtime.NumGoroutine()
		if err := runArm(t, a, 101); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
		waitGoroutines(t, before)
	}
	if left := tempDirs(t, tmp); len(left) > 0 {
		t.Errorf("temp dirs left behind: %v", left)
	}
}

func TestConcurrencyDeriveAndChecks(t *testing.T) {
	arm := func(way string, c string, median float64) result.Arm {
		return result.Arm{Name: "concurrency/" + way + "/" + c, Status: result.StatusOK, GOMAXPROCS: 2,
			Params: map[string]string{"op": "modernc-file", "way": way, "c": c, "pool": "6"}, Median: median}
	}
	arms := []result.Arm{arm("sem", "1", 5000), arm("sem", "10", 3000), arm("sem", "50", 3100), arm("threadpool", "1", 60000), arm("threadpool", "10", 6000)}
	concurrencyDerive(arms)
	if got := arms[0].Metrics["elapsed-ms/10000-lookups"]; got != 50 {
		t.Errorf("ms/10000-lookups = %v, want 50", got)
	}
	checks := concurrencyChecks(arms)
	if len(checks) != 2 {
		t.Fatalf("%d checks, want 2: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if !c.Holds {
			t.Errorf("does not hold: %s — %s", c.Name, c.Detail)
		}
	}
	f := strings.Join(concurrencyFindings(arms), "\n")
	if !strings.Contains(f, "C=1 50.0 ms · C=10 30.0 ms (speed-up 1.67× over C=1)") || !strings.Contains(f, "6 locked threads") {
		t.Errorf("findings:\n%s", f)
	}
}

// Go and CPython arms share one index: under --python all each
// interpreter's arms pair among themselves, whatever GOMAXPROCS the
// runner recorded for them.
func TestConcurrencyIndexPythonAll(t *testing.T) {
	arm := func(sub, way, c, py string, gmp int, median float64) result.Arm {
		return result.Arm{Name: "concurrency/" + sub + "/dict/" + way + "/c=" + c + "/py=" + py, Substrate: sub, Status: result.StatusOK,
			Median: median, GOMAXPROCS: gmp, Params: map[string]string{"op": "dict", "way": way, "c": c}}
	}
	arms := []result.Arm{
		arm("pytask", "to_thread", "10", "3.11.7", 2, 50e3), arm("pythread", "pool-map", "10", "3.11.7", 1, 20e3),
		arm("pytask", "to_thread", "10", "3.13.1t", 2, 40e3), arm("pythread", "pool-map", "10", "3.13.1t", 2, 60e3),
		{Name: "concurrency/goroutine/dict/sem/c=10", Status: result.StatusOK, Median: 1e3, GOMAXPROCS: 2,
			Params: map[string]string{"op": "dict", "way": "sem", "c": "10"}},
	}
	idx := concIndex(arms)
	if _, ok := idx[concKey{op: "dict", way: "pool-map", py: "3.11.7", c: 10}]; !ok {
		t.Errorf("index %v lacks 3.11.7's pool-map at C=10 under GOMAXPROCS 0", idx)
	}
	if _, ok := idx[concKey{op: "dict", way: "sem", c: 10, gmp: 2}]; !ok {
		t.Errorf("index %v lacks the Go arm", idx)
	}
	cs := concurrencyPyChecks(arms[:4])
	if len(cs) != 2 || cs[0].Holds == cs[1].Holds {
		t.Fatalf("checks %+v: want one per interpreter, 3.11.7's holding and 3.13.1t's not", cs)
	}
	f := strings.Join(concurrencyPyFindings(arms[:4]), "\n")
	for _, w := range []string{"CPython (py=3.11.7): 10 000 dict lookups through ThreadPoolExecutor(C).map: C=10 200.0 ms", "CPython (py=3.13.1t): 10 000 dict lookups through ThreadPoolExecutor(C).map: C=10 600.0 ms"} {
		if !strings.Contains(f, w) {
			t.Errorf("findings lack %q:\n%s", w, f)
		}
	}
}

// --workers sets C for every concurrency arm, the user's too, in Go and
// CPython alike; one over the bound, or a concurrency.levels that
// disagrees, is refused with the values named.
func TestConcurrencyWorkersSetLevels(t *testing.T) {
	path := sqloptest.ShopDB(t, 2000)
	p := hopParams(exp.SuiteQuick, userExtra(path))
	p.Workers = []int{2, 7}
	arms, err := concurrencyArms(p)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]bool{}
	users := 0
	for _, a := range arms {
		levels[a.Params["c"]] = true
		if strings.Contains(a.Name, "/user/") {
			users++
		}
	}
	if len(levels) != 2 || !levels["2"] || !levels["7"] || users != 4 {
		t.Errorf("levels %v, %d user arms; want c=2 and c=7 only, 4 user arms (sem and threadpool at each)", levels, users)
	}
	py := concurrencyPyPlan(p)
	pyUsers := 0
	for _, a := range py {
		if !strings.HasSuffix(a.key.String(), "/c=2") && !strings.HasSuffix(a.key.String(), "/c=7") {
			t.Errorf("CPython arm %s: want c=2 or c=7", a.key)
		}
		if strings.Contains(a.key.String(), "/user/") {
			pyUsers++
		}
	}
	if pyUsers == 0 {
		t.Errorf("no CPython user arms at --workers 2,7: %v", py)
	}
	for _, tc := range []struct {
		workers []int
		levels  string
		want    string
	}{
		{[]int{2000}, "", "--workers 2000: lookups in flight must be in 1..1000"},
		{[]int{2, 7}, "1,10", "--workers 2,7 and --set concurrency.levels=1,10 disagree"},
	} {
		given := map[string]string{}
		if tc.levels != "" {
			given["concurrency.levels"] = tc.levels
		}
		q := hopParams(exp.SuiteQuick, given)
		q.Workers = tc.workers
		if _, err := concurrencyArms(q); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--workers %v levels %q: %v; want %q", tc.workers, tc.levels, err, tc.want)
		}
	}
	q := hopParams(exp.SuiteQuick, map[string]string{"concurrency.levels": "2,7"})
	q.Workers = []int{2, 7}
	if _, err := concurrencyArms(q); err != nil {
		t.Errorf("agreeing --workers and concurrency.levels: %v", err)
	}
}
