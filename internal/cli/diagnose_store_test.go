package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// A plain diagnose is stored as a diagnose run: one arm "diagnose" with
// the run's figures, the readings as findings, and every JSON record
// --format json writes, the CPython probe's included; show, report and
// compare read it back.
func TestDiagnoseStoresTheRun(t *testing.T) {
	py := needPython(t)
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, errs := ctxlab(t, "diagnose", "--db", db, "--price=false", "--format", "table", "--",
		py, filepath.Join(pyTestdata, "tothread.py"), "--calls", "400")
	if code != 0 {
		t.Fatalf("diagnose: exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, "stored as run") {
		t.Fatalf("no stored-run line:\n%s", errs)
	}
	code, out, errs := ctxlab(t, "show", "last", "--db", db, "--format", "json")
	if code != 0 {
		t.Fatalf("show: exit %d\n%s", code, errs)
	}
	var run result.Run
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	if run.Suite != result.SuiteDiagnose || len(run.Arms) != 1 || run.Arms[0].Name != "diagnose" || run.Arms[0].Status != result.StatusOK {
		t.Fatalf("suite %q, arms %+v", run.Suite, run.Arms)
	}
	if a := run.Arms[0]; len(a.RepMeans) != 1 || a.Median <= 0 || a.Switches == nil || a.CPUNsPerOp == nil {
		t.Errorf("the arm lacks the run's figures: %+v", a)
	}
	kinds := map[string]int{}
	for _, r := range run.Records {
		var k struct{ Kind string }
		if err := json.Unmarshal(r, &k); err != nil {
			t.Fatalf("record %s: %v", r, err)
		}
		kinds[k.Kind]++
	}
	for _, k := range []string{"process", "counter", "rusage", "py-interpreter", "py-loop", "py-hops", "py-probe-cost", "py-reading"} {
		if kinds[k] == 0 {
			t.Errorf("no %s record stored (have %v)", k, kinds)
		}
	}
	if len(run.Experiments) != 1 || !strings.Contains(strings.Join(run.Experiments[0].Findings, "\n"), "the hops cost") ||
		!strings.Contains(strings.Join(run.Experiments[0].Findings, "\n"), "the probe's own cost") {
		t.Errorf("findings lack the hop reading or the probe's cost: %+v", run.Experiments)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	// By its id: report's and compare's "last" count the experiments' runs.
	if code, _, errs := ctxlab(t, "report", run.ID, "--db", db, "-o", html); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	if code, out, errs := ctxlab(t, "compare", run.ID, run.ID, "--db", db); code != 0 || !strings.Contains(out, "diagnose") {
		t.Errorf("compare of the run with itself: exit %d\n%s%s", code, out, errs)
	}
	// --no-store leaves the history alone.
	if code, _, errs := ctxlab(t, "diagnose", "--db", db, "--no-store", "--price=false", "--", "true"); code != 0 || strings.Contains(errs, "stored as run") {
		t.Errorf("--no-store: exit %d\n%s", code, errs)
	}
}
