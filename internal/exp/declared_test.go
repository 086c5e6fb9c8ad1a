package exp_test

import (
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// What the readers of arms take from declarations, not from names: every
// substrate a planned arm names is declared with its kind of worker (the
// report's colours), every experiment's op labels are words (serve's op
// label), and its size parameters are parameters its arms record.
func TestReadersFindDeclarations(t *testing.T) {
	p := exp.Params{Suite: exp.SuiteFull, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}
	for _, s := range exp.All() {
		if s.Name == "toy" || s.Name == "toy2" { // exp's own tests' experiments
			continue
		}
		if err := s.CheckOpLabels(); err != nil {
			t.Error(err)
		}
		arms, err := s.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		recorded := map[string]bool{}
		for _, a := range arms {
			if _, ok := exp.Substrates[a.Substrate]; !ok {
				t.Errorf("%s: substrate %q is not declared in exp.Substrates", a.Name, a.Substrate)
			}
			for k := range a.Params {
				recorded[k] = true
			}
		}
		var sizes []string
		if z, ok := exp.Hook[exp.Sizer](s); ok {
			sizes = z.SizeParams()
		}
		for _, k := range sizes {
			if !recorded[k] {
				t.Errorf("%s declares size parameter %q, which none of its arms records", s.Name, k)
			}
			if !exp.SizeParam(s.Name, k) {
				t.Errorf("SizeParam(%s, %s) is false", s.Name, k)
			}
		}
	}
	if exp.SizeParam("pingpong", "size") || !exp.SizeParam("diagnose", "size") {
		t.Error("the conventional size names are for runs of no registered experiment only")
	}
}
