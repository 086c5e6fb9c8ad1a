package experiments

import (
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// Every arm's name reads back through exp.ArmKey to itself, so any
// name the plans write can be built and found as a key.
func TestArmKeyRoundTripsEveryName(t *testing.T) {
	n := 0
	for _, spec := range exp.All() {
		arms, err := spec.Arms(testParams(exp.SuiteFull))
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		for _, a := range arms {
			k, err := exp.ParseArmKey(a.Name)
			if err != nil {
				t.Fatalf("%s: %v", a.Name, err)
			}
			if k.Experiment != spec.Name {
				t.Errorf("%s: experiment %q, want %q", a.Name, k.Experiment, spec.Name)
			}
			if got := k.String(); got != a.Name {
				t.Errorf("ParseArmKey(%q).String() = %q", a.Name, got)
			}
			n++
		}
	}
	if n < 300 {
		t.Errorf("only %d arms in the full suite", n)
	}
}
