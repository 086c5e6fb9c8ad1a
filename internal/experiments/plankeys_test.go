package experiments

import (
	"slices"
	"sort"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// everyPyRefs are the experiments' published CPython figures.
var everyPyRefs = map[string]pyRefs{
	"pingpong": pingpongPyRefs, "ring": ringPyRefs, "yield": yieldPyRefs,
	"interference": interferencePyRefs, "hop": hopPyRefs, "callchain": callchainPyRefs,
}

// TestEveryNamedArmIsPlanned: every arm an experiment names — in its
// declarations (Headline, SwitchCost, Probes, Harness), its published
// figures, and every key its derived figures, checks, findings and
// verdict look an arm up by, with one interpreter and under --python all —
// is an arm of its full-suite plan (the user's query and function
// included), so a rename can no longer silently empty a finding.
func TestEveryNamedArmIsPlanned(t *testing.T) {
	p := goldenParams(exp.SuiteFull)
	p.Options = goldenPlans(t)[len(goldenPlans(t))-1].p.Options
	planned := map[string]bool{}
	var all []result.Arm
	for _, spec := range exp.All() {
		arms, err := spec.Arms(p)
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		for _, a := range arms {
			planned[a.Name] = true
			all = append(all, synthArm(spec, a))
		}
	}
	inPlan := func(what, name string) {
		t.Helper()
		k, err := exp.ParseArmKey(name)
		if err != nil || !planned[k.Plan().String()] {
			t.Errorf("%s names %s, which no plan has", what, name)
		}
	}
	for _, spec := range exp.All() {
		for _, h := range headlineOf(spec) {
			for _, n := range append(append([]string(nil), h.One...), h.Across...) {
				inPlan(spec.Name+" headline "+h.Label, n)
			}
		}
		for _, n := range switchCostOf(spec) {
			inPlan(spec.Name+" switch cost", n)
			if k, err := exp.ParseArmKey(n); err != nil || !slices.Contains(k.Segments, exp.Seg("same-cpu")) {
				t.Errorf("%s switch cost %s: not two threads on one CPU, where wall time is CPU time", spec.Name, n)
			}
		}
		for _, n := range probesOf(spec) {
			inPlan(spec.Name+" probes", n)
		}
		for _, h := range harnessOf(spec) {
			inPlan(spec.Name+" harness", h.Arm)
		}
		for _, k := range everyPyRefs[spec.Name].keys() {
			inPlan(spec.Name+" published figures", k.String())
		}
	}
	heardKeys := map[string]string{}
	lookupHook = func(k exp.ArmKey) { heardKeys[k.String()] = k.Plan().String() }
	defer func() { lookupHook = nil }()
	runs := [][]result.Arm{all, withInterpreters(all, []string{"3.11.7", "3.12.1"}, nil),
		withInterpreters(all, []string{"3.13.1", "3.13.1t"}, map[string]bool{"3.13.1t": true})}
	for _, spec := range exp.All() {
		runs[1] = append(runs[1], freeThreadedPlaceholders(spec, all)...)
	}
	for _, arms := range runs {
		for _, spec := range exp.All() {
			var own []result.Arm
			for _, a := range arms {
				if a.Experiment == spec.Name {
					own = append(own, a)
				}
			}
			if derive := deriveOf(spec); derive != nil {
				derive(own)
			}
			if spec.Checks != nil {
				spec.Checks(own)
			}
			if spec.Findings != nil {
				spec.Findings(own)
			}
			if verdict := verdictOf(spec); verdict != nil {
				verdict(exp.NewVerdictRun(&result.Run{Arms: arms}))
			}
		}
	}
	var names []string
	for n := range heardKeys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !planned[heardKeys[n]] {
			t.Errorf("an analysis looks up %s, which no plan has", n)
		}
	}
	if len(names) < 100 {
		t.Errorf("only %d keys looked up: is the hook still in the lookups?", len(names))
	}
}
