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
	r, err := ReadRun(f)
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
		{filepath.Join("testdata", "python-legacy.json"), "python-legacy.read.golden"},
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

// A run stored before the metric naming convention reads back with today's names.
func TestReadRenamesLegacyMetrics(t *testing.T) {
	doc := `{"schema":1,"id":"old","arms":[{"name":"hop/x","metrics":{"x-direct":3.5,"added-ns/op":20}}]}`
	r, err := ReadRun(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := r.Arms[0].Metrics
	if m["direct-ratio"] != 3.5 || m["added-ns/op"] != 20 || len(m) != 2 {
		t.Fatalf("metrics after read = %v", m)
	}
	for old, n := range LegacyMetricNames {
		if old == n {
			t.Errorf("%q maps to itself", old)
		}
		if _, chained := LegacyMetricNames[n]; chained {
			t.Errorf("%q → %q is itself a legacy name", old, n)
		}
	}
}

// A run stored before CPython became a substrate of each experiment (the
// "python" experiment, arms python/<experiment>/…) reads back under
// today's names: each arm in the experiment its name now leads with, the
// forked-process pipe as pyprocess (beside Go's process pipe, not on it),
// and the python experiment's checks and findings with their arms.
func TestReadMapsLegacyPythonArms(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "python-legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ReadRun(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // name → experiment/substrate
		"pingpong/pythread/simplequeue/unpinned":                        "pingpong/pythread",
		"pingpong/pythread/simplequeue/same-cpu":                        "pingpong/pythread",
		"pingpong/pyprocess/pipe/unpinned":                              "pingpong/pyprocess",
		"pingpong/process/pipe/unpinned":                                "pingpong/process",
		"pingpong/pytask/asyncio-queue/unpinned":                        "pingpong/pytask",
		"interference/pythread/simplequeue/busy=1/si=default/cross-cpu": "interference/pythread",
		"hop/pytask/direct/db=memory":                                   "hop/pytask",
		"hop/pytask/executor/db=memory":                                 "hop/pytask",
		"hop/pytask/two-hop/db=memory":                                  "hop/pytask",
	}
	for name, es := range want {
		a := r.Find(name)
		if a == nil {
			t.Errorf("no arm %s after reading", name)
			continue
		}
		if got := a.Experiment + "/" + a.Substrate; got != es {
			t.Errorf("%s: experiment/substrate %s, want %s", name, got, es)
		}
		for _, c := range a.Checks {
			if strings.Contains(c.Detail+strings.Join(c.Arms, " "), "python/") {
				t.Errorf("%s: its check keeps an old name: %+v", name, c)
			}
		}
	}
	exps := map[string]result.Experiment{}
	for _, e := range r.Experiments {
		exps[e.Name] = e
		for _, c := range e.Checks {
			for _, n := range c.Arms {
				if strings.HasPrefix(n, "python/") || !strings.HasPrefix(n, e.Name+"/") {
					t.Errorf("%s: check %q names arm %s", e.Name, c.Name, n)
				}
			}
			if strings.Contains(c.Detail, "python/") {
				t.Errorf("%s: check detail keeps the old name: %s", e.Name, c.Detail)
			}
		}
	}
	if _, ok := exps["python"]; ok {
		t.Error("the python experiment is still there")
	}
	// The former sqlite3 lookups ran in :memory: (the arms without /db= run
	// on a file now), and say so in their params.
	if a := r.Find("hop/pytask/direct/db=memory"); a != nil && a.Params["db"] != "memory" {
		t.Errorf("hop/pytask/direct/db=memory: params %v", a.Params)
	}
	checks := func(e string) int { return len(exps[e].Checks) }
	if checks("pingpong") != 3 || checks("interference") != 1 || checks("hop") != 1 {
		t.Errorf("checks per experiment: pingpong %d (want 1+2), interference %d, hop %d", checks("pingpong"), checks("interference"), checks("hop"))
	}
	n := 0
	for _, e := range r.Experiments {
		n += len(e.Findings)
	}
	if n != 1+9 {
		t.Errorf("%d findings after the move, want all 10 kept", n)
	}
	// A new run reads as it is.
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := ReadRun(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	if err := again.Write(&buf2); err != nil {
		t.Fatal(err)
	}
	if first := buf.String(); first != buf2.String() {
		t.Error("reading a renamed run again changes it")
	}
	for _, tc := range [][2]string{
		{"python/ring/pytask/asyncio-queue/n=2/py=3.13t", "ring/pytask/asyncio-queue/n=2/py=3.13t"},
		{"python/pingpong/process/pipe/unpinned/py=3.11", "pingpong/pyprocess/pipe/unpinned/py=3.11"},
		{"pingpong/process/pipe/unpinned", "pingpong/process/pipe/unpinned"},
		{"python/x", "python/x"},
		{"python/hop/pytask/direct", "hop/pytask/direct/db=memory"},
		// Run on one of several interpreters, the interpreter stays last
		// (a name the key reads back; ctxlab before the rename wrote
		// …/py=3.12/db=memory, which no arm of today's is called).
		{"python/hop/pytask/direct/py=3.12", "hop/pytask/direct/db=memory/py=3.12"},
		{"python/hop/thread/direct", "hop/thread/direct"},
		{"python", "python"},
		{"python/a//b", "python/a//b"},
	} {
		if got, _ := LegacyPythonName(tc[0]); got != tc[1] {
			t.Errorf("LegacyPythonName(%s) = %s, want %s", tc[0], got, tc[1])
		}
	}
}

// A schema-1 run recorded an arm with too few ops per repetition as "ok"
// and noisy; it reads back "too few ops", the noise reason its reason.
func TestReadMarksLegacyFewOps(t *testing.T) {
	doc := `{"schema":1,"id":"old","arms":[
	{"name":"cachecost/sweep/seq/W=8MiB/T=32","status":"ok","ops_per_rep":3,"median":243000,"min":200000,"max":300000,"rep_means":[200000,243000,300000],
	 "noise":{"noisy":true,"reasons":["only 3 ops per repetition (< 10): one slow op moves the mean","repetitions spread 1.50x (max/min > 1.25)"]}},
	{"name":"cachecost/sweep/seq/W=8MiB/T=2","status":"ok","ops_per_rep":40000000,"median":4.5,"min":4,"max":5,"rep_means":[4,4.5,5],"noise":{"noisy":false}}]}`
	r, err := ReadRun(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	few, fine := r.Arms[0], r.Arms[1]
	if few.Status != result.StatusTooFewOps || few.Reason != "only 3 ops per repetition (< 10): one slow op moves the mean" {
		t.Errorf("few: %q %q", few.Status, few.Reason)
	}
	if !few.Noise.Noisy || len(few.Noise.Reasons) != 1 || !strings.HasPrefix(few.Noise.Reasons[0], "repetitions spread") {
		t.Errorf("few: noise %+v", few.Noise)
	}
	if fine.Status != result.StatusOK || fine.Reason != "" {
		t.Errorf("fine: %q %q", fine.Status, fine.Reason)
	}
	if few.HasFigure() || !fine.HasFigure() || r.Schema != result.SchemaVersion {
		t.Errorf("figures: few %v, fine %v; schema %d", few.HasFigure(), fine.HasFigure(), r.Schema)
	}
}
