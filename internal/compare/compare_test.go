package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
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
	if r := rows["ring/thread/n=2"]; r.Delta != "~" || r.A.Lo != 0 || r.Method != MethodRanges || !(r.RatioLo < 1 && 1 < r.RatioHi) {
		t.Errorf("3 identical reps: want ~, no confidence interval and a range ratio around 1: %+v", r)
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
	// The table also as a terminal 100 columns wide shows it: arms under
	// their experiment's heading, columns dropped to fit.
	for _, f := range append(append([]string{}, Formats...), "table-100") {
		var b bytes.Buffer
		format, width := f, 0
		if f == "table-100" {
			format, width = "table", 100
		}
		if err := Write(&b, c, format, width); err != nil {
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
	if err := Write(&bytes.Buffer{}, c, "bench", 0); err == nil || !strings.Contains(err.Error(), "markdown") {
		t.Errorf("bench for a comparison: %v", err)
	}
}

// A run stored under the former python experiment's arm names compares
// arm by arm with a run under today's, read back from the history as from
// a file: the reader of stored runs (store.ReadRun) maps the old names.
func TestCompareAcrossThePythonRename(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "store", "testdata", "python-legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The old run as an older ctxlab stored it: its names as they were.
	var stored result.Run
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Save(ctx, &stored, store.SourceRun); err != nil {
		t.Fatal(err)
	}
	old, err := db.Get(ctx, stored.ID)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := store.ReadRun(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(old.Arms, fromFile.Arms) || !reflect.DeepEqual(old.Experiments, fromFile.Experiments) {
		t.Error("the old run reads back from the history otherwise than from its file")
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
	cur, err := store.ReadRun(bytes.NewReader(b))
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

// fewRun is a run of arms with the given per-repetition figures; an arm
// whose name ends in "!" is marked noisy (the "!" dropped).
func fewRun(id string, arms map[string][]float64) *result.Run {
	r := &result.Run{Schema: result.SchemaVersion, ID: id, Env: result.Env{Hostname: "h"}}
	var names []string
	for n := range arms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		vs := arms[n]
		name, noisy := strings.CutSuffix(n, "!")
		r.Arms = append(r.Arms, result.Arm{Name: name, Experiment: strings.Split(name, "/")[0], Status: result.StatusOK,
			Unit: "ns/op", RepMeans: vs, Median: vs[len(vs)/2], Noise: result.Noise{Noisy: noisy}})
	}
	return r
}

// The rule's constants come from benchmath: a 95% interval of the median
// needs 6 repetitions, and fully separated 3 vs 3 has p = 0.1.
func TestRuleFromBenchmath(t *testing.T) {
	if n := CIReps(); n != 6 {
		t.Errorf("CIReps() = %d, want 6", n)
	}
	for _, c := range []struct {
		na, nb int
		want   float64
	}{{3, 3, 0.1}, {3, 5, 2.0 / 56}, {5, 5, 2.0 / 252}} {
		if p := ApartChance(c.na, c.nb); math.Abs(p-c.want) > 1e-9 {
			t.Errorf("ApartChance(%d, %d) = %v, want %v", c.na, c.nb, p, c.want)
		}
	}
}

// At 3 repetitions a side, ranges apart are a difference, overlapping
// ranges are not, and fewer than 3 decide nothing. The case: a
// 12.47× slowdown read "~" (p=0.100) under the U test alone.
func TestFewRepetitionsDecideByRanges(t *testing.T) {
	a := fewRun("A", map[string][]float64{
		"x/apart":   {1000, 1010, 1020},
		"x/overlap": {100, 110, 120},
		"x/slower":  {2000, 2040, 2100},
		"x/two":     {100, 101},
		"x/close":   {1000, 1001, 1002},
	})
	b := fewRun("B", map[string][]float64{
		"x/apart":   {2000, 2010, 2020},
		"x/overlap": {115, 125, 135},
		"x/slower":  {24940, 25000, 25300},
		"x/two":     {300, 301},
		"x/close":   {1003, 1004, 1100},
	})
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range c.Rows {
		rows[r.Arm] = r
	}
	if r := rows["x/apart"]; r.Method != MethodRanges || !r.Significant || r.Delta != "+99.0%" || !(r.RatioLo > 1) {
		t.Errorf("ranges apart: %+v", r)
	}
	if r := rows["x/overlap"]; r.Method != MethodRanges || r.Significant || r.Delta != "~" || !(r.RatioLo < 1 && r.RatioHi > 1) {
		t.Errorf("ranges overlapping: %+v", r)
	}
	if r := rows["x/slower"]; !r.Significant || math.Abs(r.Ratio-25000/2040.0) > 1e-9 || r.Delta == "~" {
		t.Errorf("a 12× slowdown at n=3: %+v", r)
	}
	if r := rows["x/two"]; r.Method != MethodTooFew || r.Significant || r.Delta != "?" {
		t.Errorf("2 repetitions: %+v", r)
	}
	// Apart by a hair: the interval must not print an end as 1.00.
	if r := rows["x/close"]; !r.Significant || strings.Contains(ratioInterval(r), "1.00–") {
		t.Errorf("barely apart: %+v, interval %s", r, ratioInterval(r))
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "samples") {
			t.Errorf("benchmath's per-row sample warning passed on: %q", w)
		}
	}
	lead := strings.Join(Lead(c), "\n")
	for _, want := range []string{"4 of 5 arms have fewer than the 6 a side", "1 time in 10 at 3 vs 3", "1 arm(s) have fewer than 3"} {
		if !strings.Contains(lead, want) {
			t.Errorf("lead lacks %q:\n%s", want, lead)
		}
	}
}

// Both sides with 6 or more repetitions keep benchstat's statistics.
func TestEnoughRepetitionsUseTheUTest(t *testing.T) {
	c, err := Compare(loadRun(t), runB(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		want := MethodRanges
		if r.A.N >= 6 && r.B.N >= 6 {
			want = MethodUTest
		}
		if r.Method != want {
			t.Errorf("%s (n=%d+%d): method %s, want %s", r.Arm, r.A.N, r.B.N, r.Method, want)
		}
		if r.Method == MethodUTest && r.Significant != (r.P < r.Alpha) {
			t.Errorf("%s: significance is not the U test's: %+v", r.Arm, r)
		}
	}
}

// A noisy side is named on its row and counted once above the table.
func TestNoisySides(t *testing.T) {
	a := fewRun("A", map[string][]float64{"x/q": {1, 2, 3}, "x/n": {1, 2, 3}})
	b := fewRun("B", map[string][]float64{"x/q": {1, 2, 3}, "x/n!": {1, 2, 3}})
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Table(&buf, c, 0); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "noisy: A in 0 of 2 arms, B in 1") {
		t.Errorf("no noisy count above the table:\n%s", out)
	}
	var nLine, qLine string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "x/n ") {
			nLine = l
		}
		if strings.HasPrefix(l, "x/q ") {
			qLine = l
		}
	}
	if !strings.HasSuffix(nLine, "  B") || strings.HasSuffix(qLine, "B") {
		t.Errorf("noisy column: n %q, q %q", nLine, qLine)
	}
}

// Two runs with no arm in common are an error that names both runs and
// some of their arms, not an empty table.
func TestNothingInCommon(t *testing.T) {
	a := fewRun("run-a", map[string][]float64{"x/one": {1, 2, 3}, "x/two": {1, 2, 3}, "x/three": {1, 2, 3}, "x/four": {1, 2, 3}})
	b := fewRun("run-b", map[string][]float64{"y/one": {1, 2, 3}})
	_, err := Compare(a, b)
	if !errors.Is(err, ErrNothingInCommon) {
		t.Fatalf("err = %v, want ErrNothingInCommon", err)
	}
	for _, want := range []string{"run-a", "run-b", "no arm in common", "4 arm(s): x/four, x/one, x/three, …", "1 arm(s): y/one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Arms in common but none with figures on both sides.
	b = fewRun("run-b", map[string][]float64{"x/one": {1}})
	b.Arms[0].RepMeans, b.Arms[0].Median, b.Arms[0].Status = nil, 0, result.StatusFailed
	if _, err := Compare(a, b); !errors.Is(err, ErrNothingInCommon) || !strings.Contains(err.Error(), "none has figures in both (x/one)") {
		t.Errorf("common arms without figures: %v", err)
	}
}

// The table fits the terminal: no line wider than it, a long arm name on
// a line of its own, the few-repetitions rule said once and no ±∞.
func TestTableFitsTheWidth(t *testing.T) {
	arms := map[string][]float64{}
	for _, n := range []string{"pingpong/thread/futex/same-cpu", "interference/pythread/simplequeue/busy=1/si=default/cross-cpu", "ring/goroutine/chan/n=100/same-cpu"} {
		arms[n] = []float64{1000, 1100, 1200}
	}
	a := fewRun("20261202T003449-19de0b", arms)
	for n := range arms {
		arms[n] = []float64{5000, 5100, 5200}
	}
	b := fewRun("20261202T003518-083f06", arms)
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 120} {
		var buf bytes.Buffer
		if err := Table(&buf, c, width); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, l := range strings.Split(out, "\n") {
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: a line of %d: %q", width, n, l)
			}
		}
		if strings.Count(out, "few repetitions:") != 1 || strings.Contains(out, "±∞") || strings.Contains(out, "need >=") {
			t.Errorf("width %d: the rule is not said once, or ±∞ is back:\n%s", width, out)
		}
		if !strings.Contains(out, "\n  pythread/simplequeue/busy=1/si=default/cross-cpu\n") {
			t.Errorf("width %d: the long name is not on a line of its own:\n%s", width, out)
		}
		if !strings.Contains(out, "+364%") {
			t.Errorf("width %d: a 5× change at 3 vs 3 with ranges apart is not shown:\n%s", width, out)
		}
	}
	// Wide enough: the ranges are shown, and the legend speaks of them.
	var buf bytes.Buffer
	Table(&buf, c, 200)
	if out := buf.String(); !strings.Contains(out, "1–1.2") || !strings.Contains(out, "range: min–max") {
		t.Errorf("width 200 lacks the ranges:\n%s", out)
	}
}

// An arm whose repetitions held too few ops on either side is no answer:
// it is skipped, never compared.
func TestTooFewOpsIsNotCompared(t *testing.T) {
	a := fewRun("A", map[string][]float64{"x/few": {1000, 1010, 1020}, "x/fine": {100, 110, 120}})
	b := fewRun("B", map[string][]float64{"x/few": {9000, 9010, 9020}, "x/fine": {100, 110, 120}})
	b.Arms[0].Status, b.Arms[0].Reason = result.StatusTooFewOps, "only 3 ops per repetition (< 10)"
	c, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 1 || c.Rows[0].Arm != "x/fine" {
		t.Errorf("rows %+v: want x/fine alone", c.Rows)
	}
	if len(c.Skipped) != 1 || c.Skipped[0] != "x/few" {
		t.Errorf("skipped %v: want x/few", c.Skipped)
	}
}
