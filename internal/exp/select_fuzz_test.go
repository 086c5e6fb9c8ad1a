package exp

import (
	"strings"
	"testing"
)

// FuzzSelect: an arm glob from the command line is refused with an error
// or selects only arms it matches (or every arm of the experiment it
// names), never panics on malformed patterns and never selects nothing
// without saying so.
func FuzzSelect(f *testing.F) {
	for _, s := range []string{"toy", "toy/a/*", "toy/*/x", "toy/[", "toy/a", "nosuch/x", "toy/**/", "toy/\x00", "/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pat string) {
		sel, err := Select([]string{pat}, params(SuiteDefault))
		if err != nil {
			return
		}
		n := 0
		for _, s := range sel {
			for _, a := range s.Arms {
				n++
				if !strings.HasPrefix(a.Name, s.Spec.Name+"/") || pat != s.Spec.Name && !Match(pat, a.Name) {
					t.Fatalf("%q selected %s of %s", pat, a.Name, s.Spec.Name)
				}
			}
		}
		if n == 0 && strings.Contains(pat, "/") {
			t.Fatalf("%q selected nothing and said nothing", pat)
		}
	})
}
