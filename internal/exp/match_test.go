package exp

import (
	"strings"
	"testing"
)

func TestPatternMatch(t *testing.T) {
	for _, tc := range []struct {
		pat string
		yes []string
		no  []string
	}{
		{"pingpong", []string{"pingpong/thread/futex/same-cpu"}, []string{"pingpongx/a", "ring/thread/futex"}},
		{"pingpong/thread/*", []string{"pingpong/thread/futex/same-cpu", "pingpong/thread/pipe/cross-cpu"}, []string{"pingpong/goroutine/chan/gomaxprocs=1", "pingpong/threadx"}},
		{"pingpong/thread", []string{"pingpong/thread/futex/same-cpu"}, []string{"pingpong/threads/x", "pingpong/goroutine/chan"}},
		{"pingpong/thread/", []string{"pingpong/thread/futex/same-cpu"}, []string{"pingpong/goroutine/chan"}},
		{"*/futex/*", []string{"pingpong/thread/futex/same-cpu", "ring/thread/futex/n=2/unpinned"}, []string{"pingpong/thread/pipe/same-cpu"}},
		{"hop/modernc-memory/*", []string{"hop/modernc-memory/direct/1"}, []string{"hop/modernc-file/direct/1"}},
		{"pingpong/*/same-cpu", []string{"pingpong/thread/futex/same-cpu"}, []string{"pingpong/thread/futex/cross-cpu"}},
		{"ring/*/n=?/*", []string{"ring/thread/futex/n=2/unpinned"}, []string{"ring/thread/futex/n=10/unpinned"}},
		{"ring/[gt]*/n=2/*", []string{"ring/thread/futex/n=2/unpinned", "ring/goroutine/chan/n=2/x"}, []string{"ring/process/pipe/n=2/x"}},
		{"ring/[!gt]*", []string{"ring/process/pipe/n=2"}, []string{"ring/thread/futex"}},
		{"a.b+c", []string{"a.b+c/x"}, []string{"aXb+c", "a.bbc"}},
		{`x/\*`, []string{"x/*"}, []string{"x/a"}},
		{"*", []string{"pingpong/a", "x"}, nil},
	} {
		p, err := ParsePattern(tc.pat)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tc.pat, err)
		}
		for _, n := range tc.yes {
			if !p.Match(n) {
				t.Errorf("%q does not match %q", tc.pat, n)
			}
		}
		for _, n := range tc.no {
			if p.Match(n) {
				t.Errorf("%q matches %q", tc.pat, n)
			}
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, s := range []string{"", "  ", "ring/[gt"} {
		_, err := ParsePattern(s)
		if err == nil {
			t.Errorf("ParsePattern(%q): no error", s)
			continue
		}
		if strings.TrimSpace(s) != "" && !strings.Contains(err.Error(), s) {
			t.Errorf("ParsePattern(%q): error %q does not name the pattern", s, err)
		}
	}
	if Match("ring/[gt", "ring/[gt") {
		t.Error("a malformed pattern matched")
	}
}

func TestPatternExperiment(t *testing.T) {
	for pat, want := range map[string]string{"pingpong": "pingpong", "pingpong/thread/*": "pingpong", "*/futex": "", "ping*/x": "", "ring/": "ring"} {
		if got := MustPattern(pat).Experiment(); got != want {
			t.Errorf("Experiment(%q) = %q, want %q", pat, got, want)
		}
	}
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"pingpong/thread/*", "[!a]", "[]]", `\`, "a[b", "*?*"} {
		f.Add(s, "pingpong/thread/futex")
	}
	f.Fuzz(func(t *testing.T, pat, name string) {
		p, err := ParsePattern(pat)
		if err != nil {
			return
		}
		p.Match(name)
		// A pattern without glob characters matches itself.
		if !strings.ContainsAny(pat, `*?[\`) && strings.TrimSpace(pat) != "" && strings.TrimRight(pat, "/") == pat && !p.Match(pat) {
			t.Errorf("%q does not match itself", pat)
		}
	})
}

// A selector is a pattern wherever one goes (budget --arm, report --chart,
// serve --probes match arm names with it): alone, and leading a pattern.
func TestSelectorPattern(t *testing.T) {
	for _, tc := range []struct {
		pat     string
		yes, no []string
	}{
		{"toysel", []string{"toy/pyt/x", "toy2/pyt/z/py=3.11"}, []string{"toy/a/x", "toy/pytx/a"}},
		{"toysel/toy2", []string{"toy2/pyt/z"}, []string{"toy/pyt/x", "toy2/a/x"}},
		{"toysel/*/x", []string{"toy/pyt/x"}, []string{"toy/a/x", "toy/pyt/y"}},
	} {
		p, err := ParsePattern(tc.pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tc.yes {
			if !p.Match(n) || !Match(tc.pat, n) {
				t.Errorf("%q does not match %q", tc.pat, n)
			}
		}
		for _, n := range tc.no {
			if p.Match(n) {
				t.Errorf("%q matches %q", tc.pat, n)
			}
		}
	}
	if p, _ := ParsePattern("toysel"); p.Selector() != "toysel" || p.Experiment() != "" {
		t.Errorf("toysel: selector %q, experiment %q", p.Selector(), p.Experiment())
	}
	if p, _ := ParsePattern("toysel/toy2/*"); p.Selector() != "" || p.Experiment() != "toy2" {
		t.Errorf("toysel/toy2/*: selector %q, experiment %q", p.Selector(), p.Experiment())
	}
}
