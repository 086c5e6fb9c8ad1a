package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func loadRun(t *testing.T) *result.Run { t.Helper(); return loadRunFile(t, "run.json") }

// loadQuick is a real quick-suite run (2-vCPU VM, busy), histograms removed.
func loadQuick(t *testing.T) *result.Run { t.Helper(); return loadRunFile(t, "quick.json") }

func loadRunFile(t *testing.T, name string) *result.Run {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := store.ReadRun(f) // quick.json and quick2.json are runs older ctxlab stored
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGoldenFormats(t *testing.T) {
	goarch = "amd64"
	run := loadRun(t)
	for _, f := range []string{"table", "csv", "markdown", "bench"} {
		var b bytes.Buffer
		if err := Write(&b, run, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		golden(t, "run."+f+".golden", b.Bytes())
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Write(&bytes.Buffer{}, loadRun(t), "yaml")
	if err == nil || !strings.Contains(err.Error(), "markdown") {
		t.Fatalf("unknown format: %v", err)
	}
}

// The bench output must read back through benchfmt's own reader: one
// result per repetition, each with only the per-repetition figure, and the
// same -N on every arm.
func TestBenchReadsWithBenchfmt(t *testing.T) {
	run := loadRun(t)
	var b bytes.Buffer
	if err := Bench(&b, run); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	rd := benchfmt.NewReader(&b, "run.bench")
	perName := map[string]int{}
	units := map[string]bool{}
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.SyntaxError:
			t.Fatalf("syntax error: %v", rec)
		case *benchfmt.Result:
			perName[rec.Name.String()]++
			for _, v := range rec.Values {
				units[v.OrigUnit] = true
			}
			if len(rec.Values) != 1 {
				t.Errorf("%s: %d values, want only the repetition's mean", rec.Name, len(rec.Values))
			}
			if _, procs := rec.Name.Base(), rec.Name.String(); !strings.HasSuffix(procs, "-2") {
				t.Errorf("%s: -N is not the run's GOMAXPROCS (2)", rec.Name)
			}
			if rec.GetConfig("goos") != "linux" {
				t.Errorf("config missing on %s: %v", rec.Name, rec.Config)
			}
			if rec.Iters <= 0 {
				t.Errorf("%s: iterations %d", rec.Name, rec.Iters)
			}
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, a := range run.Arms {
		if len(a.RepMeans) > 0 {
			want[benchName(a, run.Env.GOMAXPROCS)] = len(a.RepMeans)
		}
	}
	if len(perName) != len(want) {
		t.Fatalf("got benchmarks %v, want %v", perName, want)
	}
	for n, c := range want {
		if perName[n] != c {
			t.Errorf("%s: %d lines, want one per repetition (%d)", n, perName[n], c)
		}
	}
	if len(units) != 1 || !units["ns/op"] {
		t.Errorf("units %v, want only ns/op", units)
	}
	if !strings.HasPrefix(text, "# ctxlab run "+run.ID) {
		t.Errorf("run id missing from the first line:\n%s", text)
	}
	if !strings.Contains(text, "# pingpong/process/pipe: unsupported: no fork here") {
		t.Errorf("unsupported arm not noted:\n%s", text)
	}
}

// The header names a cgo build and the calibrated system call with what
// Go's runtime-aware path adds to it; a run from before those were
// recorded prints neither.
func TestHeaderNamesBuildAndSyscallPath(t *testing.T) {
	run := loadRun(t)
	for _, f := range []string{"table", "markdown", "html"} {
		var b bytes.Buffer
		if err := Write(&b, run, f); err != nil {
			t.Fatal(err)
		}
		if s := b.String(); strings.Contains(s, "syscall") || strings.Contains(s, "cgo") || strings.Contains(s, "system call") {
			t.Errorf("%s of a run without the fields mentions them", f)
		}
	}
	run.Env.CgoEnabled, run.SyscallNs, run.SyscallPathNs = "1", 1100, 62
	want := map[string][]string{
		"table":    {"(cgo)", "syscall 1.1 µs, +62 ns through Go's runtime"},
		"markdown": {"(cgo)", "syscall 1.1 µs, +62 ns through Go's runtime"},
		"html":     {"cgo build", "one system call 1.1 µs; Go's runtime-aware path adds 62 ns"},
	}
	for f, ws := range want {
		var b bytes.Buffer
		if err := Write(&b, run, f); err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q", f, w)
			}
		}
	}
	run.Env.CgoEnabled = "0"
	var b bytes.Buffer
	if err := Write(&b, run, "html"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "CGO_ENABLED=0 build") {
		t.Error("html of a CGO_ENABLED=0 build does not say so")
	}
}
