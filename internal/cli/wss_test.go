package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/testload"
	"github.com/ctxlab/ctxlab/internal/wss"
)

// --wss takes on or off; anything else is a usage error naming the value.
func TestWSSFlag(t *testing.T) {
	for _, args := range [][]string{{"diagnose", "--wss", "maybe", "--", "true"}, {"watch", "--wss", "maybe", "1"}} {
		code, _, errs := ctxlab(t, args...)
		if code != 2 || !strings.Contains(errs, `--wss "maybe": must be on or off`) {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

// diagnose stores the working set as a "wss" record and its reading in the
// findings: a working set above 0, or unsupported with a reason — never a
// 0 (a loaded machine may give the loop too little CPU for a reading, so
// either is right). --wss off stores none.
func TestDiagnoseStoresTheWorkingSet(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	loop := []string{"sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"}
	for _, mode := range []string{"on", "off"} {
		args := append([]string{"diagnose", "--db", db, "--price=false", "--format", "table", "--interval", "20ms", "--wss", mode, "--"}, loop...)
		w := testload.Start()
		if code, _, errs := ctxlab(t, args...); code != 0 {
			t.Fatalf("diagnose --wss %s: exit %d\n%s", mode, code, errs)
		}
		code, out, errs := ctxlab(t, "show", "last", "--db", db, "--format", "json")
		if code != 0 {
			t.Fatalf("show: exit %d\n%s", code, errs)
		}
		var run result.Run
		if err := json.Unmarshal([]byte(out), &run); err != nil {
			t.Fatal(err)
		}
		var got []wss.Reading
		for _, rec := range run.Records {
			var r wss.Reading
			if json.Unmarshal(rec, &r) == nil && r.Kind == "wss" {
				got = append(got, r)
			}
		}
		findings := strings.Join(run.Experiments[0].Findings, "\n")
		if mode == "off" {
			if len(got) != 0 || strings.Contains(findings, "working set:") {
				t.Errorf("--wss off stored %+v, findings %s", got, findings)
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("%d wss records: %s", len(got), run.Records)
		}
		r := got[0]
		switch {
		case r.Unsupported != "":
			if r.MedianBytes != 0 || !strings.Contains(findings, "working set: unsupported: "+r.Unsupported) {
				t.Errorf("unsupported %q with median %d; findings %s", r.Unsupported, r.MedianBytes, findings)
			}
			t.Logf("unsupported here: %s", r.Unsupported)
		case r.Intervals == 0 || r.MedianBytes <= 0 || r.MaxBytes < r.MedianBytes || len(r.PerInterval) != r.Intervals:
			t.Errorf("a working set without figures: %+v", r)
		case !strings.Contains(findings, "working set: ") || !strings.Contains(findings, "not priced: --price=false") && !strings.Contains(findings, "indirect cost: not priced — --price=false"):
			t.Errorf("findings lack the reading: %s", findings)
		}
		if r.CostShare > wss.Budget {
			// the sampling adapts to the program's CPU after the fact: a
			// machine that takes that CPU away pushes its share up first
			if starved, why := w.Starved(); starved {
				t.Logf("sampling cost %.2f%% of the program's CPU on a machine that kept it from the CPU: %s", 100*r.CostShare, why)
			} else {
				t.Errorf("sampling cost %.2f%% of the program's CPU", 100*r.CostShare)
			}
		}
	}
}
