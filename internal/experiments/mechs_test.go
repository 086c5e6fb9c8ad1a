package experiments

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
)

// uncarried says which of rows' mechanisms arms leave out: each on every
// substrate its row names, and in every placement of a placed substrate
// (thread, process). pingpong must carry them all.
func uncarried(rows []mech.Row, arms []exp.Arm, placements []string) []string {
	have := map[string]bool{}
	for _, a := range arms {
		have[a.Substrate+"/"+a.Mechanism] = true
		have[a.Substrate+"/"+a.Mechanism+"/"+a.Placement] = true
	}
	var out []string
	for _, r := range rows {
		for _, sub := range r.On {
			if !have[sub+"/"+r.Name] {
				out = append(out, fmt.Sprintf("%s on %s", r.Name, sub))
				continue
			}
			if sub == mech.SubGoroutine {
				continue
			}
			for _, pl := range placements {
				if !have[sub+"/"+r.Name+"/"+pl] {
					out = append(out, fmt.Sprintf("%s on %s %s", r.Name, sub, pl))
				}
			}
		}
	}
	return out
}

// TestEveryMechanismIsCarried: every mechanism mech registers is in
// pingpong's plan on every substrate its row names, in every placement
// (pingpong's arm lists come from mech.On; a list written out again
// would miss the next row). A planted row shows the test fails.
func TestEveryMechanismIsCarried(t *testing.T) {
	p := goldenParams(exp.SuiteFull)
	arms, err := pingpongArms(p)
	if err != nil {
		t.Fatal(err)
	}
	var placements []string
	for _, pl := range exp.Placements(p) {
		placements = append(placements, pl.Name)
	}
	if miss := uncarried(mech.Rows(), arms, placements); len(miss) > 0 {
		t.Errorf("registered mechanisms pingpong does not carry: %v", miss)
	}
	planted := mech.Row{Name: "planted", On: []string{mech.SubThread, mech.SubProcess}}
	if miss := uncarried([]mech.Row{planted}, arms, placements); len(miss) != 2 {
		t.Errorf("a planted row on two substrates: %v, want both missing", miss)
	}
}

// TestEveryMechanismIsRead: over a planned run's figures, every row that
// claims a switch cost (Trip) is checked on pingpong's arms, and every
// kernel or spinning row appears in a finding: a new row is read by its
// traits alone.
func TestEveryMechanismIsRead(t *testing.T) {
	spec, _ := exp.Lookup("pingpong")
	planned, err := spec.Arms(goldenParams(exp.SuiteDefault))
	if err != nil {
		t.Fatal(err)
	}
	var arms []result.Arm
	mechOf := map[string]string{}
	for _, a := range planned {
		arms = append(arms, synthArm(spec, a))
		mechOf[a.Name] = a.Mechanism
	}
	checked := map[string]bool{}
	for _, c := range pingpongChecks(arms) {
		for _, name := range c.Arms {
			checked[mechOf[name]] = true
		}
	}
	findings := strings.Join(pingpongFindings(arms), "\n")
	for _, r := range mech.Rows() {
		if r.Trip != mech.TripUnchecked && !checked[r.Name] {
			t.Errorf("%s claims a switch cost (Trip %d) that no pingpong check reads", r.Name, r.Trip)
		}
		if (r.Wait.Kernel() && r.Carries(mech.SubThread) || r.Wait == mech.WaitSpin) && !strings.Contains(findings, " "+r.Name+" ") && !strings.Contains(findings, "("+r.Name+")") {
			t.Errorf("%s is in no pingpong finding:\n%s", r.Name, findings)
		}
	}
}

// TestSpinningOnOneCPUIsRefused: a spinning row's pair with both workers
// on one CPU is planned unsupported, with the reason; across two CPUs and
// unpinned it runs.
func TestSpinningOnOneCPUIsRefused(t *testing.T) {
	for _, p := range []exp.Params{goldenParams(exp.SuiteDefault), goldenPlansCPU0()} {
		arms, err := pingpongArms(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			row, _ := mech.RowOf(a.Mechanism)
			if a.Substrate != mech.SubThread || !row.Locked {
				continue
			}
			oneCPU := a.Placement == "same-cpu" || p.CPUsGiven && len(p.CPUs) == 1
			switch {
			case oneCPU && !strings.Contains(a.Unsupported, "needs two CPUs"):
				t.Errorf("%s on one CPU: unsupported %q, want refused", a.Name, a.Unsupported)
			case !oneCPU && a.Unsupported != "":
				t.Errorf("%s: refused (%s)", a.Name, a.Unsupported)
			}
		}
	}
}

// goldenPlansCPU0 is the golden plan of --cpus 0: one CPU for everything.
func goldenPlansCPU0() exp.Params {
	p := goldenParams(exp.SuiteDefault)
	p.CPUs, p.CPUsGiven = []int{0}, true
	return p
}
