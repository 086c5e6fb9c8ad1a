package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// `ctxlab list` is one screen: its legend first, then a line per
// experiment with its arms counted, and no arm.
func TestListCompact(t *testing.T) {
	code, out, errs := run(t, "list")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 30 {
		t.Errorf("list prints %d lines, more than a screen:\n%s", len(lines), out)
	}
	if !strings.HasPrefix(lines[0], "arms: ") || !strings.HasPrefix(lines[1], "q: ") {
		t.Errorf("list does not begin with its legend:\n%s", out)
	}
	for _, s := range exp.All() {
		row := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(s.Name) + ` +\d+ +\d+  \S`)
		if !row.MatchString(out) {
			t.Errorf("no line with %s's arm counts and summary:\n%s", s.Name, out)
		}
	}
	// The quick suite runs cachecost at sizes of its own: q counts them,
	// not the default suite's arms it shares (which read 0).
	if !regexp.MustCompile(`(?m)^  cachecost +\d+ +[1-9]\d*  `).MatchString(out) {
		t.Errorf("cachecost's q is 0, though the quick suite runs its arms:\n%s", out)
	}
	if strings.Contains(out, "pingpong/goroutine/") || strings.Contains(out, "options (--set key=value):") {
		t.Errorf("list (no arguments) lists arms or options:\n%s", out)
	}
	if !strings.Contains(out, "ctxlab list EXPERIMENT") || !strings.Contains(out, "ctxlab list --arms") {
		t.Errorf("list does not say where the arms are:\n%s", out)
	}
}

// `ctxlab list EXPERIMENT` puts its legend first and shows that
// experiment's options alone, their descriptions in one column.
func TestListExperimentOptions(t *testing.T) {
	for _, tc := range []struct {
		exp       string
		want, not []string
	}{
		{"pingpong", []string{"python"}, []string{"hop.callers", "cachecost.w"}},
		{"hop", []string{"hop.callers", "hop.pool", "python"}, []string{"cachecost.w", "concurrency.pool"}},
		{"cachecost", []string{"cachecost.w", "cachecost.t", "cachecost.pattern"}, []string{"python", "hop.pool"}},
	} {
		code, out, errs := run(t, "list", tc.exp)
		if code != 0 {
			t.Fatalf("list %s: exit %d: %s", tc.exp, code, errs)
		}
		if !strings.HasPrefix(out, "q = in the quick suite") {
			t.Errorf("list %s does not begin with its legend:\n%.300s", tc.exp, out)
		}
		opts := optionLines(out)
		keys := map[string]bool{}
		col := -1
		for _, l := range opts {
			key := strings.Fields(l)[0]
			keys[key] = true
			doc := len(l) - len(strings.TrimLeft(l[4+len(key):], " "))
			if col >= 0 && doc != col {
				t.Errorf("list %s: option descriptions are not aligned:\n%s", tc.exp, strings.Join(opts, "\n"))
				break
			}
			col = doc
		}
		for _, k := range tc.want {
			if !keys[k] {
				t.Errorf("list %s: options %v lack %s", tc.exp, keys, k)
			}
		}
		for _, k := range tc.not {
			if keys[k] {
				t.Errorf("list %s: shows %s, another experiment's option", tc.exp, k)
			}
		}
	}
}

// optionLines are the lines of the options block that follows its header.
func optionLines(out string) []string {
	var opts []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(l) == "options (--set key=value):":
			in = true
		case in && strings.HasPrefix(l, "    ") && !strings.HasPrefix(l, "     "):
			opts = append(opts, l)
		default:
			in = false
		}
	}
	return opts
}

// `ctxlab list --arms` lists every arm, its legend first.
func TestListArms(t *testing.T) {
	code, out, errs := run(t, "list", "--arms", "--suite", "quick")
	if code != 0 {
		t.Fatalf("list --arms: exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "q = in the quick suite") || !strings.Contains(out, "q pingpong/thread/futex/same-cpu") {
		t.Errorf("list --arms:\n%.400s", out)
	}
}

// TestListOptionsGolden pins every experiment's options block in `ctxlab
// list EXPERIMENT` (testdata/list-options.golden; -update-list rewrites
// it): the keys each experiment shows and what each says.
func TestListOptionsGolden(t *testing.T) {
	var b strings.Builder
	for _, s := range exp.All() {
		code, out, errs := run(t, "list", s.Name)
		if code != 0 {
			t.Fatalf("list %s: exit %d: %s", s.Name, code, errs)
		}
		fmt.Fprintf(&b, "%s:\n%s\n", s.Name, strings.Join(optionLines(out), "\n"))
	}
	golden := filepath.Join("testdata", "list-options.golden")
	if *updateList {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the options blocks changed (-update-list rewrites %s):\n%s", golden, b.String())
	}
}

var updateList = flag.Bool("update-list", false, "rewrite testdata/list-options.golden")
