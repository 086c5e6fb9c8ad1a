package compare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func loadRun(t *testing.T) *result.Run {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "report", "testdata", "run.json"))
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

// runB is run A with the thread arm twice as slow (a clear change), the
// goroutine arm shuffled (no change), one arm dropped and one added.
func runB(t *testing.T) *result.Run {
	b := loadRun(t)
	b.ID = "20261130T130000-def456"
	var arms []result.Arm
	for _, a := range b.Arms {
		switch a.Name {
		case "pingpong/thread/futex":
			vs := make([]float64, len(a.RepMeans))
			for i, v := range a.RepMeans {
				vs[i] = 2 * v
			}
			a.RepMeans, a.Median = vs, 2*a.Median
		case "pingpong/goroutine/chan":
			a.RepMeans = []float64{308, 311, 303, 318, 306, 309}
		case "ring/goroutine/n=100":
			continue
		}
		arms = append(arms, a)
	}
	arms = append(arms, result.Arm{Name: "ring/goroutine/n=1000", Experiment: "ring", Status: "ok", Median: 200, Unit: "ns/op", RepMeans: []float64{200}})
	b.Arms = arms
	return b
}

func TestCompare(t *testing.T) {
	a, b := loadRun(t), runB(t)
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range c.Rows {
		rows[r.Arm] = r
	}
	if r := rows["pingpong/thread/futex"]; !r.Significant || r.Delta == "~" || r.Ratio < 1.99 || r.Ratio > 2.01 {
		t.Errorf("doubled arm: %+v", r)
	}
	if r := rows["pingpong/thread/futex"]; !(r.RatioLo > 0 && r.RatioLo <= r.Ratio && r.Ratio <= r.RatioHi) {
		t.Errorf("ratio interval does not hold the ratio: %+v", r)
	}
	if r := rows["pingpong/goroutine/chan"]; r.Significant || r.Delta != "~" {
		t.Errorf("unchanged arm: %+v", r)
	}
	if r := rows["ring/thread/n=2"]; r.Delta != "~" || r.A.Lo != 0 || r.RatioLo != 0 {
		t.Errorf("3 identical reps: want ~ and no finite interval: %+v", r)
	}
	if len(c.OnlyA) != 1 || c.OnlyA[0] != "ring/goroutine/n=100" || len(c.OnlyB) != 1 || c.OnlyB[0] != "ring/goroutine/n=1000" {
		t.Errorf("one-sided arms: A %v B %v", c.OnlyA, c.OnlyB)
	}
	if len(c.Skipped) != 1 || c.Skipped[0] != "pingpong/process/pipe" {
		t.Errorf("skipped: %v", c.Skipped)
	}
	if len(c.Geomeans) != 1 || c.Geomeans[0].Arms != 5 || c.Geomeans[0].Ratio <= 1 {
		t.Errorf("geomean: %+v", c.Geomeans)
	}
	if _, err := json.Marshal(c); err != nil {
		t.Errorf("json: %v", err)
	}
	// A run against itself: every arm "~".
	self, _ := Compare(a, a)
	for _, r := range self.Rows {
		if r.Delta != "~" {
			t.Errorf("self-comparison of %s: %s", r.Arm, r.Delta)
		}
	}
}

func TestGoldenFormats(t *testing.T) {
	c, err := Compare(loadRun(t), runB(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		var b bytes.Buffer
		if err := Write(&b, c, f); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "compare."+f+".golden")
		if *update {
			os.WriteFile(path, b.Bytes(), 0o644)
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -update creates it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, b.Bytes(), want)
		}
	}
	if err := Write(&bytes.Buffer{}, c, "bench"); err == nil || !strings.Contains(err.Error(), "markdown") {
		t.Errorf("bench for a comparison: %v", err)
	}
}

// A run stored under the former python experiment's arm names compares
// arm by arm with a run under today's: result.Read maps the old names.
func TestCompareAcrossThePythonRename(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "result", "testdata", "python-legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := result.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	// The new run: the same arms as a current ctxlab names and stores them.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	arms := doc["arms"].([]any)
	for _, x := range arms {
		a := x.(map[string]any)
		if a["experiment"] != "python" {
			continue
		}
		name := strings.TrimPrefix(a["name"].(string), "python/")
		if a["substrate"] == "process" {
			name = strings.Replace(name, "pingpong/process/", "pingpong/pyprocess/", 1)
			a["substrate"] = "pyprocess"
		}
		if strings.HasPrefix(name, "hop/pytask/") { // the old lookups ran in :memory:
			name += "/db=memory"
		}
		a["name"], a["experiment"] = name, strings.Split(name, "/")[0]
		delete(a, "checks")
	}
	doc["id"], doc["experiments"] = "20261201T090000-new", nil
	b, _ := json.Marshal(doc)
	if bytes.Contains(b, []byte(`"python/`)) {
		t.Fatal("the new run still has old names")
	}
	cur, err := result.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.OnlyA) > 0 || len(c.OnlyB) > 0 {
		t.Errorf("arms on one side only: old %v, new %v", c.OnlyA, c.OnlyB)
	}
	rows := map[string]bool{}
	for _, r := range c.Rows {
		rows[r.Arm] = true
	}
	for _, n := range []string{"pingpong/pythread/simplequeue/unpinned", "pingpong/pyprocess/pipe/unpinned", "pingpong/process/pipe/unpinned", "hop/pytask/two-hop/db=memory"} {
		if !rows[n] {
			t.Errorf("no comparison row for %s (rows %v)", n, rows)
		}
	}
	if len(c.Rows) != len(cur.Arms) {
		t.Errorf("%d rows for %d arms", len(c.Rows), len(cur.Arms))
	}
}

// Runs of a cgo and a CGO_ENABLED=0 build differ by the build: compare
// says so; runs that do not record it (older ones) get no such warning.
func TestCompareWarnsOfDifferentBuilds(t *testing.T) {
	a, b := loadRun(t), runB(t)
	warns := func() string {
		c, err := Compare(a, b)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(c.Warnings, "\n")
	}
	if w := warns(); strings.Contains(w, "cgo") {
		t.Errorf("warnings without the build recorded: %q", w)
	}
	a.Env.CgoEnabled, b.Env.CgoEnabled = "1", "0"
	if w := warns(); !strings.Contains(w, "built with cgo and the other's without") {
		t.Errorf("warnings %q: want one naming the different builds", w)
	}
	b.Env.CgoEnabled = "1"
	if w := warns(); strings.Contains(w, "cgo") {
		t.Errorf("warnings for the same build: %q", w)
	}
}
