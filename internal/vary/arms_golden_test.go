package vary

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

var updateArms = flag.Bool("update-arms", false, "rewrite testdata/arms.golden.json")

// TestArmsGolden pins the arms a --vary analysis stores (every figure,
// metric, counter, note and status) on fixed runs: per run without a PMU,
// per unit of work with one, and a value whose runs failed
// (testdata/arms.golden.json; -update-arms rewrites it).
func TestArmsGolden(t *testing.T) {
	a := []run{
		{wall: 1.0e9, cpu: 2.0e9, sw: 1000, vol: 600, invol: 400, migr: 10, faults: 4000, runq: 1e6},
		{wall: 1.1e9, cpu: 2.1e9, sw: 1100, vol: 600, invol: 500, migr: 12, faults: 4000, runq: 2e6},
		{wall: 1.2e9, cpu: 2.2e9, sw: 1200, vol: 700, invol: 500, migr: 14, faults: 4000, runq: 3e6},
	}
	hw := &[4]float64{4e9, 2e9, 1e6, 3e5}
	b := []run{
		{wall: 1.5e9, cpu: 2.9e9, sw: 51000, vol: 1000, invol: 50000, migr: 300, faults: 65000, runq: 9e9, hw: hw},
		{wall: 1.6e9, cpu: 3.0e9, sw: 51100, vol: 1100, invol: 50000, migr: 310, faults: 65000, runq: 9e9, hw: hw},
		{wall: 1.7e9, cpu: 3.1e9, sw: 51200, vol: 1200, invol: 50000, migr: 320, faults: 65000, runq: 9e9, hw: hw},
	}
	var all [][]result.Arm
	all = append(all, grid(t, futexCost, a, b).Arms())
	perUnit := grid(t, futexCost, a, b)
	for i := range perUnit.Samples {
		perUnit.Samples[i].Work = 1000
	}
	Analyze(perUnit, futexCost, nil, 0)
	all = append(all, perUnit.Arms())
	failed := grid(t, Cost{}, a, b)
	for i := range failed.Samples {
		if failed.Samples[i].Point == 1 {
			failed.Samples[i].Status, failed.Samples[i].Reason = result.StatusFailed, "exit status 1"
		}
	}
	Analyze(failed, Cost{}, nil, 0)
	all = append(all, failed.Arms())
	got, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "arms.golden.json")
	if *updateArms {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got)+"\n" {
		t.Errorf("the stored arms changed (-update-arms rewrites %s):\n%s", golden, got)
	}
}
