package store

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readBack reads a run document as ctxlab reads a stored or exported run.
func readBack(t *testing.T, path string) *result.Run {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := result.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// summary is what reading an old run may rename, one line per fact: each
// arm's name, experiment, substrate, params and metric names, its checks'
// arms and details, and each experiment's checks and findings.
func summary(r *result.Run) string {
	var b strings.Builder
	for _, a := range r.Arms {
		fmt.Fprintf(&b, "arm %s experiment=%s substrate=%s mechanism=%s\n", a.Name, a.Experiment, a.Substrate, a.Mechanism)
		var keys []string
		for k, v := range a.Params {
			keys = append(keys, k+"="+v)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "  params %s\n", strings.Join(keys, " "))
		keys = keys[:0]
		for k, v := range a.Metrics {
			keys = append(keys, fmt.Sprintf("%s=%g", k, v))
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "  metrics %s\n", strings.Join(keys, " "))
		for _, c := range a.Checks {
			fmt.Fprintf(&b, "  check %q holds=%v arms=%v: %s\n", c.Name, c.Holds, c.Arms, c.Detail)
		}
	}
	for _, e := range r.Experiments {
		fmt.Fprintf(&b, "experiment %s op=%q\n", e.Name, e.Op)
		for _, c := range e.Checks {
			fmt.Fprintf(&b, "  check %q holds=%v skipped=%v arms=%v: %s\n", c.Name, c.Holds, c.Skipped, c.Arms, c.Detail)
		}
		for _, f := range e.Findings {
			fmt.Fprintf(&b, "  finding %s\n", f)
		}
	}
	return b.String()
}

// TestOldRunsReadBackAsBefore pins what reading runs stored by older
// ctxlab gives (testdata/*.read.golden): a run of the former python
// experiment, and two quick runs from before the metric naming
// convention. go test -update rewrites the golden files.
func TestOldRunsReadBackAsBefore(t *testing.T) {
	for _, tc := range []struct{ file, golden string }{
		{filepath.Join("..", "result", "testdata", "python-legacy.json"), "python-legacy.read.golden"},
		{filepath.Join("..", "report", "testdata", "quick.json"), "quick.read.golden"},
		{filepath.Join("..", "report", "testdata", "quick2.json"), "quick2.read.golden"},
	} {
		got := []byte(summary(readBack(t, tc.file)))
		path := filepath.Join("testdata", tc.golden)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update creates it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s reads back otherwise than %s (go test -update rewrites it):\n--- got\n%s", tc.file, path, got)
		}
	}
}
