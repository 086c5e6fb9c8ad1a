package cli

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// completions runs cobra's hidden completion command through Main, as the
// shell's script does, and returns the words it offers (descriptions cut).
func completions(t *testing.T, args ...string) []string {
	t.Helper()
	code, out, errs := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d: %s", args, code, errs)
	}
	var words []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue // the directive
		}
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words
}

func offers(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// The gaps the completion had: watch --sort, list --suite, report
// --chart (a run's chart names), run python/ (a selector, then the
// experiments and arms under it) and watch's PID.
func TestCompletionGaps(t *testing.T) {
	db := isolate(t)
	fixture, err := filepath.Abs(filepath.Join("..", "report", "testdata", "browser-run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "import", "--db", db, fixture); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := strconv.Itoa(sleeper.Process.Pid)

	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"watch", "--sort", ""}, []string{"switches", "runq"}, nil},
		{[]string{"diagnose", "--sort", ""}, []string{"runq", "switches"}, nil},
		{[]string{"list", "--suite", ""}, []string{"quick", "default", "full"}, nil},
		{[]string{"run", "python/"}, []string{"python/pingpong", "python/ring", "python/eventloop"}, []string{"python/cachecost", "python/spawn"}},
		{[]string{"run", "python/ping"}, []string{"python/pingpong"}, []string{"python/ring"}},
		{[]string{"list", "python/pingpong/"}, []string{"python/pingpong/pythread/simplequeue/unpinned", "python/pingpong/pytask/future/unpinned"},
			[]string{"python/pingpong/thread/futex/unpinned"}},
		// The stored run's charts, --db given first: completion parses the
		// line's flags twice, which must not read as a flag given twice.
		{[]string{"report", "--db", db, "--chart", "ring:"}, []string{"ring:param", "ring:cdf"}, []string{"ring", "pingpong:cdf-1"}},
		{[]string{"report", "--db", db, "--chart", "pingpong:cdf"}, []string{"pingpong:cdf-1", "pingpong:cdf-2", "pingpong:cdf-3"}, nil},
		{[]string{"report", fixture, "--chart", "inter"}, []string{"interference", "interference:cdf"}, nil},
		{[]string{"report", "--db", db, "--chart", "pingpong/thr"}, []string{"pingpong/thread/futex/same-cpu"}, nil},
		{[]string{"show", "--db", db, ""}, []string{"last", "20261201T060640-c60193"}, nil},
		{[]string{"watch", pid}, []string{pid}, nil},
		{[]string{"watch", pid, ""}, nil, []string{pid}},
	} {
		got := completions(t, tc.args...)
		for _, w := range tc.want {
			if !offers(got, w) {
				t.Errorf("__complete %s: %v lacks %s", strings.Join(tc.args, " "), got, w)
			}
		}
		for _, w := range tc.not {
			if offers(got, w) {
				t.Errorf("__complete %s: offers %s", strings.Join(tc.args, " "), w)
			}
		}
	}
	// A PID comes with its command name.
	code, out, _ := run(t, "__complete", "watch", pid)
	if code != 0 || !strings.Contains(out, pid+"\tsleep") {
		t.Errorf("__complete watch %s: %q does not name the process", pid, out)
	}
}

// --set completes the options' keys (those of the experiments the line
// names, else all), each as key=, and a list option's words after it.
func TestCompletionSet(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"run", "--set", ""}, []string{"hop.pool=", "cachecost.w=", "python=", "db="}, nil},
		{[]string{"run", "--set", "hop."}, []string{"hop.pool=", "hop.callers="}, []string{"cachecost.w="}},
		{[]string{"run", "hop", "--set", ""}, []string{"hop.pool=", "db=", "python="}, []string{"cachecost.w=", "ring.substrates="}},
		{[]string{"run", "cachecost", "--set", ""}, []string{"cachecost.t="}, []string{"hop.pool=", "python="}},
		{[]string{"run", "--set", "ring.substrates="}, []string{"ring.substrates=goroutine", "ring.substrates=pytask"}, nil},
		{[]string{"run", "--set", "cachecost.pattern=r"}, []string{"cachecost.pattern=random"}, []string{"cachecost.pattern=seq"}},
		{[]string{"--set", "hop.p"}, []string{"hop.pool="}, nil}, // bare ctxlab has run's flags
	} {
		got := completions(t, tc.args...)
		for _, w := range tc.want {
			if !offers(got, w) {
				t.Errorf("__complete %s: %v lacks %s", strings.Join(tc.args, " "), got, w)
			}
		}
		for _, w := range tc.not {
			if offers(got, w) {
				t.Errorf("__complete %s: offers %s", strings.Join(tc.args, " "), w)
			}
		}
	}
	// A key comes with what it does, and the shell adds no space after it.
	code, out, _ := run(t, "__complete", "run", "--set", "hop.po")
	if code != 0 || !strings.Contains(out, "hop.pool=\thop: worker goroutines") || !strings.Contains(out, ":6\n") {
		t.Errorf("__complete run --set hop.po: %q", out)
	}
}
