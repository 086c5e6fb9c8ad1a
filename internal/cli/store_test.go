package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ctxlab runs the command line with fresh writers and returns the exit
// status and both outputs.
func ctxlab(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// isolate points the default store into a temporary directory, so tests
// never touch the real home.
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	t.Setenv("HOME", dir)
	return filepath.Join(dir, "ctxlab", "history.db")
}

const testRunFile = "../report/testdata/run.json"

func TestStoreCommands(t *testing.T) {
	db := isolate(t)
	dir := t.TempDir()

	if code, _, errs := ctxlab(t, "history"); code != 2 || !strings.Contains(errs, "no runs stored yet") {
		t.Fatalf("history on no store: %d %q", code, errs)
	}
	code, out, errs := ctxlab(t, "import", testRunFile)
	if code != 0 || !strings.Contains(out, "imported run 20261130T120000-abc123") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("default store not at $XDG_DATA_HOME/ctxlab/history.db: %v", err)
	}
	if code, out, _ := ctxlab(t, "import", testRunFile); code != 0 || !strings.Contains(out, "already stored") {
		t.Fatalf("import twice: %d %q", code, out)
	}
	code, out, _ = ctxlab(t, "history")
	if code != 0 || !strings.Contains(out, "20261130T120000-abc123") || !strings.Contains(out, "import") {
		t.Fatalf("history: %d %q", code, out)
	}
	for _, f := range []string{"table", "json", "csv", "markdown", "bench", "html"} {
		if code, out, errs := ctxlab(t, "show", "20261130T12", "--format", f); code != 0 || !strings.Contains(out, "thread/futex") {
			t.Errorf("show --format %s: %d %q %q", f, code, out, errs)
		}
	}
	exported := filepath.Join(dir, "exported.json")
	if code, _, errs := ctxlab(t, "export", "last", "-o", exported); code != 0 {
		t.Fatalf("export: %d %q", code, errs)
	}
	// compare a stored run with a file; identical runs show "~".
	code, out, errs = ctxlab(t, "compare", "last", exported)
	if code != 0 || !strings.Contains(out, "~") || !strings.Contains(out, "geomean") {
		t.Fatalf("compare: %d %q %q", code, out, errs)
	}
	html := filepath.Join(dir, "r.html")
	if code, _, errs := ctxlab(t, "report", "-o", html); code != 0 {
		t.Fatalf("report: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(html); !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte(`data-experiment="ring"`)) {
		t.Fatalf("report html lacks charts")
	}
	svg := filepath.Join(dir, "p.svg")
	if code, _, errs := ctxlab(t, "report", "--chart", "pingpong", "-o", svg); code != 0 {
		t.Fatalf("report --chart: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(svg); !bytes.Contains(b, []byte("<svg")) {
		t.Fatal("chart is not svg")
	}
	png := filepath.Join(dir, "ring.png")
	if code, _, errs := ctxlab(t, "report", testRunFile, "--chart", "ring:param", "--format", "png", "-o", png); code != 0 {
		t.Fatalf("report --chart png: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(png); !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatal("chart is not png")
	}
	code, out, _ = ctxlab(t, "budget", "--rate", "10000/s")
	if code != 0 || !strings.Contains(out, "pingpong, per round trip: goroutine 0.31% (chan), thread 7.4% (futex) of a core") || !strings.Contains(out, "priced by WALL time") {
		t.Fatalf("budget: %d %q", code, out)
	}

	// Bad input: exit 2, naming the bad value.
	for _, bad := range [][]string{
		{"show", "nosuchrun"},
		{"show", "--format", "yaml"},
		{"compare", "--format", "bench"},
		{"report", "--chart", "nosuch"},
		{"report", "--format", "png"},
		{"budget", "--rate", "0/s"},
		{"budget", "--rate", "10000"},
		{"budget", "--rate", "fast/s"},
		{"budget"},
		{"budget", "--rate", "1/s", "--arm", "nosuch"},
		{"budget", "--rate", "1/s", "--arm", "[x"},
		{"history", "--limit", "-1"},
		{"import", filepath.Join(dir, "missing.json")},
	} {
		code, _, errs := ctxlab(t, bad...)
		if code != 2 || errs == "" {
			t.Errorf("%v: exit %d (%q), want 2 with a message", bad, code, errs)
		}
	}
}

func TestForeignStoreRefused(t *testing.T) {
	isolate(t)
	path := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(path, []byte("not a database"), 0o644)
	code, _, errs := ctxlab(t, "import", testRunFile, "--db", path)
	if code != 2 || !strings.Contains(errs, "not a ctxlab history database") {
		t.Fatalf("import into a foreign file: %d %q", code, errs)
	}
	// run refuses before measuring anything.
	code, out, errs := ctxlab(t, "run", "pingpong/goroutine/*/*", "--quick", "--db", path)
	if code != 2 || out != "" || !strings.Contains(errs, "--no-store") {
		t.Fatalf("run with a foreign --db: %d %q %q", code, out, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != "not a database" {
		t.Fatal("the foreign file was modified")
	}
}

// Two quick runs of the same arms, then compare with no arguments: the
// last two runs, and "~" where the setup did not change.
func TestRunStoresThenCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("measures")
	}
	db := filepath.Join(t.TempDir(), "h.db")
	isolate(t)
	for i := 0; i < 2; i++ {
		code, _, errs := ctxlab(t, "run", "pingpong/goroutine/*/*", "--quick", "--db", db)
		if code != 0 || !strings.Contains(errs, "stored as run") {
			t.Fatalf("run %d: %d %q", i, code, errs)
		}
	}
	if code, _, errs := ctxlab(t, "run", "pingpong/goroutine/*/*", "--quick", "--db", db, "--no-store"); code != 0 || strings.Contains(errs, "stored") {
		t.Fatalf("--no-store: %d %q", code, errs)
	}
	code, out, _ := ctxlab(t, "history", "--db", db, "--format", "csv")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Fatalf("history after two stored runs: %q", out)
	}
	code, out, errs := ctxlab(t, "compare", "--db", db)
	if code != 0 || !strings.Contains(out, "~") {
		t.Fatalf("compare: %d %q %q", code, out, errs)
	}
	// The report of a real run has the experiment's charts and readings.
	code, out, errs = ctxlab(t, "report", "--db", db)
	if code != 0 || !strings.Contains(out, `data-experiment="pingpong"`) || !strings.Contains(out, `data-chart="bars"`) ||
		!strings.Contains(out, `<figcaption class="reading">a `) {
		t.Fatalf("report of a real run: %d %q", code, errs)
	}
}
