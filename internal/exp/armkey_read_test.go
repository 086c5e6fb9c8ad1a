package exp_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	_ "github.com/ctxlab/ctxlab/internal/experiments"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// everyName is every arm name the registered experiments plan (full
// suite, each also run on an interpreter as --python all names it), the
// names of the stored fixture runs, and odd names a hand-edited file may
// hold.
func everyName(t *testing.T) []string {
	t.Helper()
	var names []string
	p := exp.Params{Suite: exp.SuiteFull, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}
	for _, s := range exp.All() {
		arms, err := s.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			names = append(names, a.Name, exp.MustParseArmKey(a.Name).WithInterpreter("3.13t").String())
		}
	}
	for _, f := range []string{"quick.json", "quick2.json", "run.json", "browser-run.json"} {
		b, err := os.ReadFile(filepath.Join("..", "report", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Arms []struct{ Name string } }
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, a := range r.Arms {
			names = append(names, a.Name)
		}
	}
	if len(names) < 600 {
		t.Fatalf("only %d names", len(names))
	}
	return append(names, "pingpong", "pingpong/", "pingpong//x", "a/=x/n=2", "x/py=1/y", "e/a=b=c", "")
}

// The readers answer, for every name, what the string cuts they replace
// answered.
func TestReadersAgreeWithTheCutsTheyReplace(t *testing.T) {
	for _, name := range everyName(t) {
		e, _, _ := strings.Cut(name, "/")
		if got := exp.ExperimentOf(name); got != e {
			t.Errorf("ExperimentOf(%q) = %q, want %q", name, got, e)
		}
		if got, want := exp.ShortNameIn(e, name), strings.TrimPrefix(name, e+"/"); got != want {
			t.Errorf("ShortNameIn(%q, %q) = %q, want %q", e, name, got, want)
		}
		if got := exp.JoinSegments(exp.ShortSegmentsIn(e, name)); got != strings.TrimPrefix(name, e+"/") {
			t.Errorf("ShortSegmentsIn(%q, %q) joins to %q", e, name, got)
		}
		if got := exp.JoinSegments(exp.ShortSegmentsIn("other", name)); got != name {
			t.Errorf("ShortSegmentsIn(other, %q) joins to %q", name, got)
		}
		if got := exp.ShortNameIn("other", name); got != name {
			t.Errorf("ShortNameIn(other, %q) = %q", name, got)
		}
		parts := strings.Split(name, "/")
		if got := exp.LastSegment(name); got != parts[len(parts)-1] {
			t.Errorf("LastSegment(%q) = %q, want %q", name, got, parts[len(parts)-1])
		}
		want := map[string]string{}
		for _, part := range parts[1:] {
			if k, v, ok := strings.Cut(part, "="); ok && k != "" {
				want[k] = v
			}
		}
		if got := exp.ArmParams(result.Arm{Name: name}); !maps.Equal(got, want) {
			t.Errorf("ArmParams(%q) = %v, want %v", name, got, want)
		}
		if k, err := exp.ParseArmKey(name); err == nil && k.String() == name {
			if got := exp.JoinSegments(k.Written()); got != k.Short() {
				t.Errorf("%q: Written joins to %q, Short is %q", name, got, k.Short())
			}
			if back, ok := k.Under("selfcheck").Lift(); !ok || !back.Equal(k) {
				t.Errorf("%q: Under then Lift gives %q", name, back)
			}
			if got := k.Under("selfcheck").String(); got != "selfcheck/"+name {
				t.Errorf("%q under selfcheck: %q", name, got)
			}
		}
	}
}

// Pick finds an arm run on one of several interpreters by its plan name,
// the first interpreter's in run order; its own name finds it too.
func TestPickFallsBackToThePlanName(t *testing.T) {
	arm := func(name string, median float64) result.Arm {
		return result.Arm{Name: name, Status: result.StatusOK, Median: median}
	}
	v := exp.NewVerdictRun(&result.Run{Arms: []result.Arm{
		arm("hop/pytask/direct/py=3.12", 1), arm("hop/pytask/direct/py=3.13t", 2), arm("hop/thread/direct", 3),
	}})
	for name, want := range map[string]float64{"hop/pytask/direct": 1, "hop/pytask/direct/py=3.13t": 2, "hop/thread/direct": 3} {
		if a, ok := v.Pick(name); !ok || a.Median != want {
			t.Errorf("Pick(%s) = %v %v, want the arm of median %v", name, a.Name, ok, want)
		}
	}
	if _, ok := v.Pick("hop/pytask"); ok {
		t.Error("Pick found an arm by a prefix of its name")
	}
}
