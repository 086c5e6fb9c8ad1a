package exp

import (
	"context"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func init() {
	Register(&Spec{Name: "toy", Op: "op", Arms: func(p Params) ([]Arm, error) {
		return []Arm{
			{Name: "toy/a/x", Quick: true, Open: func(context.Context) (Bench, error) { return nil, nil }},
			{Name: "toy/a/y"},
			{Name: "toy/b/x"},
			{Name: "toy/pyt/x", Quick: true},
			{Name: "toy/pyt/y"},
		}, nil
	}})
	Register(&Spec{Name: "toy2", Op: "op", Arms: func(p Params) ([]Arm, error) {
		return []Arm{{Name: "toy2/a/x", Quick: true}, {Name: "toy2/pyt/z"}}, nil
	}})
	RegisterSelector("toysel", "the pyt arms of every toy", "*/pyt")
}

func params(suite string) Params {
	return Params{Suite: suite, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}
}

func armNames(sel []Selection) []string {
	var out []string
	for _, s := range sel {
		for _, a := range s.Arms {
			out = append(out, a.Name)
		}
	}
	return out
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		pats  []string
		suite string
		want  string
	}{
		{[]string{"toy"}, SuiteDefault, "toy/a/x toy/a/y toy/b/x toy/pyt/x toy/pyt/y"},
		{[]string{"toy"}, SuiteQuick, "toy/a/x toy/pyt/x"},
		// A selector selects across experiments as a name selects an experiment's arms.
		{[]string{"toysel"}, SuiteDefault, "toy/pyt/x toy/pyt/y toy2/pyt/z"},
		{[]string{"toysel"}, SuiteQuick, "toy/pyt/x"},
		{[]string{"toysel/"}, SuiteQuick, "toy/pyt/x"},
		{[]string{"toysel/toy"}, SuiteQuick, "toy/pyt/x"}, // selector/EXPERIMENT: as the experiment's name, quick arms only
		{[]string{"toysel/toy/"}, SuiteQuick, "toy/pyt/x"},
		{[]string{"toysel/toy"}, SuiteDefault, "toy/pyt/x toy/pyt/y"},
		{[]string{"toysel/toy2"}, SuiteDefault, "toy2/pyt/z"},
		{[]string{"toysel/toy/pyt/*"}, SuiteQuick, "toy/pyt/x toy/pyt/y"}, // selector/PATTERN: named arms
		{[]string{"toysel/*/y"}, SuiteDefault, "toy/pyt/y"},
		{[]string{"toy", "toysel"}, SuiteDefault, "toy/a/x toy/a/y toy/b/x toy/pyt/x toy/pyt/y toy2/pyt/z"},
		{[]string{"toy/a/*"}, SuiteQuick, "toy/a/x toy/a/y"}, // named arms run even if not quick
		{[]string{"toy/*/x"}, SuiteDefault, "toy/a/x toy/b/x toy/pyt/x"},
		{[]string{"toy/a"}, SuiteDefault, "toy/a/x toy/a/y"},                             // a prefix selects the arms under it
		{[]string{"toy/*"}, SuiteDefault, "toy/a/x toy/a/y toy/b/x toy/pyt/x toy/pyt/y"}, // * crosses '/'
		{[]string{"t?y/*/x"}, SuiteDefault, "toy/a/x toy/b/x toy/pyt/x"},                 // a glob in the first part
		{[]string{"toy/b/x", "toy/a"}, SuiteDefault, "toy/a/x toy/a/y toy/b/x"},
	} {
		sel, err := Select(tc.pats, params(tc.suite))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(armNames(sel), " "); got != tc.want {
			t.Errorf("Select(%v, %s) = %q, want %q", tc.pats, tc.suite, got, tc.want)
		}
	}
}

func TestSelectErrorsNameTheChoices(t *testing.T) {
	_, err := Select([]string{"nosuch"}, params(SuiteDefault))
	if err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "toy") {
		t.Fatalf("unknown experiment: %v", err)
	}
	if !strings.Contains(err.Error(), "toysel") {
		t.Fatalf("the selectors are not named among the choices: %v", err)
	}
	_, err = Select([]string{"toy/zzz/*"}, params(SuiteDefault))
	if err == nil || !strings.Contains(err.Error(), "toy/zzz/*") {
		t.Fatalf("glob matching nothing: %v", err)
	}
	_, err = Select([]string{"*/nothing/here"}, params(SuiteDefault))
	if err == nil || !strings.Contains(err.Error(), "*/nothing/here") {
		t.Fatalf("cross-experiment glob matching nothing: %v", err)
	}
	_, err = Select([]string{"toysel/toy/b"}, params(SuiteDefault))
	if err == nil || !strings.Contains(err.Error(), "toysel/toy/b") {
		t.Fatalf("selector pattern matching nothing: %v", err)
	}
	// A selector over an experiment with no quick arm among those it
	// selects says so in the quick suite, rather than running nothing.
	_, err = Select([]string{"toysel/toy2"}, params(SuiteQuick))
	if err == nil || !strings.Contains(err.Error(), "toysel/toy2 selects 1 arm(s), none of them in the quick suite") {
		t.Fatalf("selector over an experiment without quick arms: %v", err)
	}
	_, err = Select([]string{"toysel/nosuch"}, params(SuiteQuick))
	if err == nil || !strings.Contains(err.Error(), `unknown experiment or arm "toysel/nosuch"`) {
		t.Fatalf("selector over an unknown experiment: %v", err)
	}
	_, err = Select([]string{"toy/[x"}, params(SuiteDefault))
	if err == nil || !strings.Contains(err.Error(), "toy/[x") {
		t.Fatalf("malformed glob: %v", err)
	}
}

func TestPlacements(t *testing.T) {
	pl := Placements(Params{CPUs: []int{3, 5}})
	if pl[0].Name != "unpinned" || pl[0].Process != nil {
		t.Errorf("unpinned without --cpus must not confine: %+v", pl[0])
	}
	if pl[1].A[0] != 3 || pl[1].B[0] != 3 {
		t.Errorf("same-cpu: %+v", pl[1])
	}
	if pl[2].A[0] != 3 || pl[2].B[0] != 5 || pl[2].Unsupported != "" {
		t.Errorf("cross-cpu: %+v", pl[2])
	}
	one := Placements(Params{CPUs: []int{0}, CPUsGiven: true})
	if one[2].Unsupported == "" || one[0].Process[0] != 0 {
		t.Errorf("one CPU: %+v", one)
	}
}
