package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// list, run, budget --arm and report --chart read arm patterns one way.
func TestListPattern(t *testing.T) {
	code, out, errs := run(t, "list", "pingpong/thread/*")
	if code != 0 {
		t.Fatalf("list pingpong/thread/*: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "pingpong/thread/futex/same-cpu") || strings.Contains(out, "pingpong/goroutine/") || strings.Contains(out, "pingpong/process/") {
		t.Errorf("list pingpong/thread/* selects the wrong arms:\n%s", out)
	}
	if !strings.Contains(out, "selects ") {
		t.Errorf("list PATTERN does not say how many arms it selects:\n%s", out)
	}
	code, out, _ = run(t, "list", "*/futex/*")
	if code != 0 || !strings.Contains(out, "pingpong/thread/futex/") || !strings.Contains(out, "ring/thread/futex/") {
		t.Errorf("a glob across experiments: exit %d\n%s", code, out)
	}
	code, _, errs = run(t, "list", "pingpong/nosuch*")
	if code != 2 || !strings.Contains(errs, "pingpong/nosuch*") {
		t.Errorf("a pattern matching nothing: exit %d, %q", code, errs)
	}
}

func TestReportChartPattern(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("..", "report", "testdata", "browser-run.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		chart string
		code  int
		want  string // in the SVG, or in the error
	}{
		{"pingpong", 0, "goroutine/chan/gomaxprocs=1"},
		{"pingpong/thread/*", 0, "thread/futex/same-cpu"},
		{"ring/*/n=*:param", 0, "ring: time per hop against n"},
		{"*/futex/*", 2, "one experiment"},
		{"pingpong/zzz", 2, "no arm matches"},
		{"pingpong:bogus", 2, "chart kind"},
		// pingpong's 12 latency distributions are drawn in three parts.
		{"pingpong:cdf-2", 0, "thread arms (2 of 3)"},
		{"pingpong:cdf", 2, "pingpong:cdf-1, pingpong:cdf-2, pingpong:cdf-3"},
		{"pingpong/thread/*:cdf", 0, "thread/futex/cross-cpu"},
	} {
		out := filepath.Join(dir, "c.svg")
		os.Remove(out)
		code, _, errs := run(t, "report", fixture, "--chart", tc.chart, "-o", out)
		if code != tc.code {
			t.Errorf("--chart %s: exit %d, want %d (%s)", tc.chart, code, tc.code, errs)
			continue
		}
		if code != 0 {
			if !strings.Contains(errs, tc.want) {
				t.Errorf("--chart %s: %q does not say %q", tc.chart, errs, tc.want)
			}
			continue
		}
		b, err := os.ReadFile(out)
		if err != nil || !strings.Contains(string(b), tc.want) {
			t.Errorf("--chart %s: svg lacks %q (%v)", tc.chart, tc.want, err)
		}
		if tc.chart == "pingpong/thread/*" && strings.Contains(string(b), "goroutine/chan") {
			t.Errorf("--chart %s drew arms it does not select", tc.chart)
		}
	}
}

func TestCompletion(t *testing.T) {
	isolate(t)
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"__complete", "run", "ping"}, []string{"pingpong"}, []string{"ring"}},
		{[]string{"__complete", "run", "pingpong/thread/fu"}, []string{"pingpong/thread/futex/same-cpu"}, []string{"pingpong/thread/pipe"}},
		{[]string{"__complete", "list", "ri"}, []string{"ring"}, nil},
		{[]string{"__complete", "run", "--format", ""}, []string{"bench", "markdown"}, nil},
		{[]string{"__complete", "report", "--format", ""}, []string{"svg", "png"}, []string{"bench"}},
		{[]string{"__complete", "budget", "--arm", "pingpong/pro"}, []string{"pingpong/process/pipe/unpinned"}, nil},
		{[]string{"__complete", "serve", "--probes", "pingpong/go"}, []string{"pingpong/goroutine/chan/gomaxprocs=1"}, nil},
		{[]string{"__complete", "completion", ""}, []string{"bash", "zsh", "fish"}, nil},
	} {
		code, out, errs := run(t, tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: %q lacks %q", tc.args, out, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("%v: %q offers %q", tc.args, out, w)
			}
		}
	}
	// Stored run ids complete show, report and compare.
	fixture := filepath.Join("..", "report", "testdata", "browser-run.json")
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := result.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "import", fixture)
	if code != 0 {
		t.Fatalf("import: %s", errs)
	}
	for _, cmd := range []string{"show", "report", "compare"} {
		code, out, _ := run(t, "__complete", cmd, stored.ID[:4])
		if code != 0 || !strings.Contains(out, stored.ID) {
			t.Errorf("__complete %s: no stored run id in %q", cmd, out)
		}
	}
}
