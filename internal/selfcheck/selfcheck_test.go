package selfcheck

import (
	"bytes"
	"context"
	"errors"
	"github.com/ctxlab/ctxlab/internal/exp"
	_ "github.com/ctxlab/ctxlab/internal/experiments" // the registry whose Harness lists the rows
	"github.com/ctxlab/ctxlab/internal/sqlop"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// TestMain makes the test binary the child modes' process, as ctxlab's
// main does.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// fixed is a side that reads v, and records the order it ran in.
func fixed(v float64, log *[]string, name string) Side {
	return func(context.Context) (float64, error) {
		*log = append(*log, name)
		return v, nil
	}
}

// Every supported row runs once per round on each side, arm beside
// reference, in a shuffled
// order; each round's ratio is ctxlab ÷ reference and the row is their
// median and min–max; an unsupported row keeps its reason and runs nothing.
func TestRunRoundsAndRatios(t *testing.T) {
	var log []string
	vals := []float64{100, 110, 130}
	k := 0
	varying := func(context.Context) (float64, error) { log = append(log, "a"); k++; return vals[(k-1)%3], nil }
	comps := []Comparison{
		{Arm: "x/a", Reference: "ref a", Ctxlab: varying, Ref: fixed(100, &log, "ra")},
		{Arm: "x/b", Reference: "ref b", Ctxlab: fixed(50, &log, "b"), Ref: fixed(50, &log, "rb")},
		{Arm: "x/c", Reference: "perf", Unsupported: "perf is not installed"},
	}
	var seen []int
	rows := Run(context.Background(), comps, Plan{Rounds: 3, Rand: rand.New(rand.NewPCG(1, 2)),
		Progress: func(done, total int, _ string) { seen = append(seen, done*100+total) }})
	if len(log) != 12 || len(seen) != 12 || seen[11] != 1212 {
		t.Fatalf("ran %d commands (%v), progress %v; want 12: 2 rows × 2 sides × 3 rounds", len(log), log, seen)
	}
	if strings.Join(log[:4], ",") == strings.Join(log[4:8], ",") && strings.Join(log[4:8], ",") == strings.Join(log[8:], ",") {
		t.Errorf("every round ran in the same order %v: want a new shuffle each round", log[:4])
	}
	for r := 0; r < 3; r++ { // a row's arm and reference run back to back
		round := strings.Join(log[4*r:4*r+4], ",")
		if !strings.Contains(round, "a,ra") && !strings.Contains(round, "ra,a") || !strings.Contains(round, "b,rb") && !strings.Contains(round, "rb,b") {
			t.Errorf("round %d ran %s: want each arm beside its reference", r+1, round)
		}
	}
	a := rows[0]
	if a.Status != result.StatusOK || len(a.Ratios) != 3 || a.Ratio != 1.1 || a.Min != 1.0 || a.Max != 1.3 || !a.Over() {
		t.Errorf("row a: %+v; want ratios 1.0, 1.1, 1.3: median 1.1, over 1.05", a)
	}
	if b := rows[1]; b.Ratio != 1 || b.Over() {
		t.Errorf("row b: %+v; want 1.00, not over", b)
	}
	if c := rows[2]; c.Status != result.StatusUnsupported || c.Reason != "perf is not installed" || len(c.Ratios) != 0 {
		t.Errorf("row c: %+v; want unsupported with its reason", c)
	}
	v := Verdict(rows)
	for _, want := range []string{"over its limit here: x/a reads 1.10× ref a (+10%, limit 1.05×; its rounds read 1.00–1.30×", "the other row adds nothing measurable (1.00× the reference)", "not checked: x/c (perf is not installed)"} {
		if !strings.Contains(v, want) {
			t.Errorf("verdict %q\nwant %q", v, want)
		}
	}
}

// A failing side fails its row, with the error, and stops it; the other
// rows go on. A bad figure (0, NaN) is a failure too, never a ratio.
func TestRunFailures(t *testing.T) {
	var log []string
	boom := func(context.Context) (float64, error) {
		log = append(log, "boom")
		return 0, errors.New("exit status 1")
	}
	zero := func(context.Context) (float64, error) { return 0, nil }
	comps := []Comparison{
		{Arm: "x/fails", Reference: "r", Ctxlab: boom, Ref: fixed(1, &log, "r1")},
		{Arm: "x/zero", Reference: "r", Ctxlab: fixed(1, &log, "z"), Ref: zero},
		{Arm: "x/ok", Reference: "r", Ctxlab: fixed(2, &log, "ok"), Ref: fixed(2, &log, "r3")},
	}
	rows := Run(context.Background(), comps, Plan{Rounds: 4})
	if rows[0].Status != result.StatusFailed || !strings.Contains(rows[0].Reason, "x/fails: exit status 1") {
		t.Errorf("failing row: %+v", rows[0])
	}
	if n := strings.Count(strings.Join(log, ","), "boom"); n != 1 {
		t.Errorf("the failing side ran %d times; want once, then its row stops", n)
	}
	if rows[1].Status != result.StatusFailed || !strings.Contains(rows[1].Reason, "read 0 ns per op") {
		t.Errorf("zero row: %+v", rows[1])
	}
	if rows[2].Status != result.StatusOK || len(rows[2].Ratios) != 4 {
		t.Errorf("ok row: %+v; want 4 rounds", rows[2])
	}
	if v := Verdict(rows); !strings.HasPrefix(v, "ctxlab adds nothing measurable") || !strings.Contains(v, "not checked: x/fails") {
		t.Errorf("verdict %q", v)
	}
}

// Ctrl-C stops at once and keeps the rounds that finished with both sides.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	side := func(context.Context) (float64, error) {
		n++
		if n == 5 { // in round 3, after two whole rounds
			cancel()
		}
		return 10, nil
	}
	rows := Run(ctx, []Comparison{{Arm: "x/a", Reference: "r", Ctxlab: side, Ref: side}}, Plan{Rounds: 10})
	if n != 5 || len(rows[0].Ratios) != 2 {
		t.Errorf("%d commands ran, %d ratios kept; want 5 and the 2 whole rounds", n, len(rows[0].Ratios))
	}
}

// The verdict when every arm is within its limit says the largest excess,
// rounded up, with the range.
func TestVerdictWithin(t *testing.T) {
	rows := []Row{{Arm: "a", Status: result.StatusOK, Ratio: 1.021, Limit: Limit}, {Arm: "b", Status: result.StatusOK, Ratio: 0.99, Limit: Limit}}
	if v := Verdict(rows); v != "ctxlab adds ≤ 3% (0.99–1.02× the references) here" {
		t.Errorf("verdict %q", v)
	}
	rows[0].Min, rows[0].Max = 0.8, 1.3
	if v := Verdict(rows); !strings.Contains(v, "noisy: the rounds of 1 of 2 rows disagree by more than 25% (worst a, 0.80–1.30×)") {
		t.Errorf("noisy verdict %q", v)
	}
	one := []Row{{Arm: "a", Status: result.StatusOK, Ratio: 1.2, Min: 1.2, Max: 1.2, Limit: Limit, Ratios: []float64{1.2}}}
	if v := Verdict(one); !strings.Contains(v, "only 1 round: no spread to judge a 5% answer by (--rounds 3 or more)") {
		t.Errorf("one-round verdict %q", v)
	}
	skipped := []Row{{Arm: "a", Status: result.StatusSkipped, Reason: "no round finished"}, {Arm: "b", Status: result.StatusSkipped, Reason: "no round finished"},
		{Arm: "c", Status: result.StatusUnsupported, Reason: "no perf"}}
	if v := Verdict(skipped); v != "nothing could be checked; not checked: a, b (no round finished); not checked: c (no perf)" {
		t.Errorf("verdict of rows not checked %q", v)
	}
	if v := Verdict(nil); v != "nothing could be checked" {
		t.Errorf("empty verdict %q", v)
	}
}

// A check stored as a run reads back as the summary runs carry.
func TestArmsRoundTrip(t *testing.T) {
	rows := []Row{
		{Arm: "pingpong/thread/futex/unpinned", Reference: "raw futex loop", Status: result.StatusOK, Limit: Limit,
			CtxlabNs: []float64{110, 120}, RefNs: []float64{100, 100}, Ratios: []float64{1.1, 1.2}, Ratio: 1.15, Min: 1.1, Max: 1.2},
		{Arm: "pingpong/process/pipe/unpinned", Reference: "perf bench sched pipe", Status: result.StatusUnsupported, Reason: "no perf", Limit: Limit},
	}
	arms := Arms(rows, 1)
	run := &result.Run{Schema: result.SchemaVersion, ID: "20261202T000000-abcdef", Time: time.Unix(1, 0).UTC(), Suite: Suite, Arms: arms,
		Experiments: []result.Experiment{{Name: Experiment, Findings: []string{Verdict(rows)}}}}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	a := arms[0]
	if a.Name != "selfcheck/pingpong/thread/futex/unpinned" || a.Unit != "×" || a.Substrate != "thread" || a.Mechanism != "futex" ||
		a.Metrics["ctxlab-ns/op"] != 115 || a.Metrics["reference-ns/op"] != 100 || len(a.Checks) != 1 || a.Checks[0].Holds {
		t.Errorf("arm %+v", a)
	}
	h := FromRun(run)
	if h == nil || len(h.Rows) != 2 || h.Verdict == "" || h.RunID != run.ID {
		t.Fatalf("summary %+v", h)
	}
	if r, ok := h.Row("pingpong/thread/futex/unpinned"); !ok || !r.Over() || r.Ratio != 1.15 || r.Limit != Limit {
		t.Errorf("row %+v", r)
	}
	if r, _ := h.Row("pingpong/process/pipe/unpinned"); r.Over() || r.Reason != "no perf" {
		t.Errorf("unsupported row %+v", r)
	}
	if FromRun(&result.Run{Suite: "quick"}) != nil {
		t.Error("a quick run read as a selfcheck")
	}
}

func TestParsePerfBench(t *testing.T) {
	out := []byte("# Running 'sched/pipe' benchmark:\n# Executed 200000 pipe operations between two processes\n\n     Total time: 2.615 [sec]\n\n      13.077150 usecs/op\n          76469 ops/sec\n")
	if v, err := ParsePerfBench(out); err != nil || v < 13077.1 || v > 13077.2 {
		t.Errorf("= %v, %v; want 13077.15 ns", v, err)
	}
	if _, err := ParsePerfBench([]byte("perf: not found\n")); err == nil || !strings.Contains(err.Error(), "perf: not found") {
		t.Errorf("garbage: %v", err)
	}
}

// The built-in references run for real as child processes: each prints a
// positive ns per op.
func TestBuiltInReferences(t *testing.T) {
	// Marks this test's children (the environment is inherited), so the
	// leftover scan below cannot see another package's selfcheck.
	marker := "CTXLAB_TEST_MARKER=selfcheck-" + strconv.Itoa(os.Getpid())
	t.Setenv("CTXLAB_TEST_MARKER", strings.TrimPrefix(marker, "CTXLAB_TEST_MARKER="))
	h := Host{CPU: 0, Reps: 1, BenchTime: 5 * time.Millisecond}
	if cpus, _ := measure.Affinity(); !slices.Contains(cpus, 0) {
		t.Skip("CPU 0 is not ours")
	}
	for name, side := range map[string]Side{
		"futex": h.role(roleRaw, nil, "futex"), "eventfd": h.role(roleRaw, nil, "eventfd"), "pipe": h.role(roleRaw, nil, "pipe"),
		"chan": h.role(roleChan, []int{0}), "process": h.role(roleRawProc, nil),
	} {
		v, err := side(context.Background())
		if err != nil || !(v > 0) {
			t.Errorf("%s: %v, %v", name, v, err)
		}
	}
	if _, err := h.role(roleRaw, nil, "smoke")(context.Background()); err == nil || !strings.Contains(err.Error(), "bad arguments") {
		t.Errorf("a bad mechanism: %v", err)
	}
	if child.Alive() != 0 {
		t.Errorf("%d children left", child.Alive())
	}
	// The process loop's echo is a grandchild: it must be gone too.
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, f := range envs {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(child.EnvRole+"="+roleEcho+"\x00")) && bytes.Contains(b, []byte(marker+"\x00")) {
			t.Errorf("an echo child is left: %s", f)
		}
	}
}

// The exec mode runs the program pinned, its output passed through.
func TestExecChild(t *testing.T) {
	out, err := output(context.Background(), child.Options{Role: roleExec, Args: []string{"sh", "-c", "grep Cpus_allowed_list /proc/self/status"}, CPUs: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[1] != "0" {
		t.Errorf("exec'd program's affinity: %q; want CPU 0 only", out)
	}
}

// A command that does not answer within the plan's timeout fails its row,
// saying so; the other rows go on.
func TestRunTimeout(t *testing.T) {
	var log []string
	hang := func(ctx context.Context) (float64, error) { <-ctx.Done(); return 0, ctx.Err() }
	comps := []Comparison{
		{Arm: "x/hangs", Reference: "r", Ctxlab: hang, Ref: fixed(1, &log, "r1")},
		{Arm: "x/ok", Reference: "r", Ctxlab: fixed(2, &log, "ok"), Ref: fixed(2, &log, "r2")},
	}
	rows := Run(context.Background(), comps, Plan{Rounds: 2, Timeout: 20 * time.Millisecond})
	if rows[0].Status != result.StatusFailed || !strings.Contains(rows[0].Reason, "x/hangs: no answer within 20ms: stopped") {
		t.Errorf("hung row: %+v", rows[0])
	}
	if rows[1].Status != result.StatusOK || len(rows[1].Ratios) != 2 {
		t.Errorf("the other row: %+v", rows[1])
	}
}

// An arm held to two references is over only if it is over both: the
// process pipe beside perf bench's single-threaded processes and beside
// the same raw loop between two Go processes. Its second row gets a name
// of its own, and a run's note reads the row within the limit.
func TestArmWithTwoReferences(t *testing.T) {
	pipe := "pingpong/process/pipe/unpinned"
	rows := []Row{
		{Arm: pipe, Reference: "perf bench sched pipe", Status: result.StatusOK, Limit: Limit, Ratio: 1.08, Min: 1.07, Max: 1.1,
			CtxlabNs: []float64{2080, 2070, 2090}, RefNs: []float64{1920, 1930, 1900}, Ratios: []float64{1.08, 1.07, 1.1}},
		{Arm: pipe, Reference: "raw pipe loop, two Go processes", Status: result.StatusOK, Limit: Limit, Ratio: 1.02, Min: 1.01, Max: 1.03,
			CtxlabNs: []float64{2080, 2070, 2090}, RefNs: []float64{2040, 2050, 2030}, Ratios: []float64{1.02, 1.01, 1.03}},
		{Arm: "pingpong/thread/futex/unpinned", Reference: "raw futex loop", Status: result.StatusOK, Limit: Limit, Ratio: 1.01, Min: 1, Max: 1.02,
			Ratios: []float64{1, 1.01, 1.02}},
	}
	v := Verdict(rows)
	want := "ctxlab adds ≤ 2% (1.01–1.02× the references) here; " + pipe + " reads 1.08× perf bench sched pipe but 1.02× raw pipe loop, two Go processes: the 6% between them lies between the two references (a Go process against C ones), not in ctxlab's harness"
	if v != want {
		t.Errorf("verdict\n %q\nwant\n %q", v, want)
	}
	rows[1].Ratio, rows[1].Min = 1.07, 1.06 // over both: over
	if v := Verdict(rows); !strings.HasPrefix(v, "over its limit here: "+pipe+" reads 1.08× perf bench sched pipe") ||
		!strings.Contains(v, pipe+" reads 1.07× raw pipe loop, two Go processes") || strings.Contains(v, "between the two references") {
		t.Errorf("over both: verdict %q", v)
	}
	rows[1].Ratio, rows[1].Min = 1.02, 1.01
	// Its rounds count among the rows when they disagree, though it is over
	// one reference only.
	rows[0].Min, rows[0].Max = 0.8, 1.3
	if v := Verdict(rows); !strings.Contains(v, "noisy: the rounds of 1 of 3 rows disagree") {
		t.Errorf("a noisy row between two references: verdict %q", v)
	}
	rows[0].Min, rows[0].Max = 1.07, 1.1
	arms := Arms(rows, 0)
	if arms[0].Name != "selfcheck/"+pipe || arms[1].Name != "selfcheck/"+pipe+"/vs=raw-pipe-loop-two-go-processes" {
		t.Errorf("names %q, %q", arms[0].Name, arms[1].Name)
	}
	run := &result.Run{Schema: result.SchemaVersion, ID: "20261202T000000-abcdef", Time: time.Unix(1, 0).UTC(), Suite: Suite, Arms: arms,
		Experiments: []result.Experiment{{Name: Experiment, Findings: []string{v}}}}
	if err := run.Validate(); err != nil {
		t.Fatal(err)
	}
	h := FromRun(run)
	if r, ok := h.Row(pipe); !ok || r.Reference != "raw pipe loop, two Go processes" || r.Ratio != 1.02 || r.SurelyOver() {
		t.Errorf("Row(%s) = %+v, %v; want the raw loop's row, within its limit", pipe, r, ok)
	}
}

// Steal over the limit is named with its share; at or under it, nothing.
func TestStealNote(t *testing.T) {
	if n := StealNote(19.24, 5); !strings.Contains(n, "stole 19.2% of the CPUs' time") || !strings.Contains(n, "over 5%") {
		t.Errorf("19.24%% stolen: %q", n)
	}
	for _, pct := range []float64{0, 5, -1} {
		if n := StealNote(pct, 5); n != "" {
			t.Errorf("%v%% stolen: %q; want nothing", pct, n)
		}
	}
}

// The user's query adds two rows: ctxlab's CPython direct call on the
// application's connection beside the application's own loop
// (sqlite3.connect(path)), and on the immutable one beside the loop on the
// immutable URI; both loops run for real on the file and print a positive
// ns per op, leaving it as it was. A WAL database has no application's
// loop (it would checkpoint the file on close): that row says why.
func TestUserRows(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "shop.db")
	mk := "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\nc.execute('create table items (id integer primary key, name text)')\n" +
		"c.executemany('insert into items values (?, ?)', [(i, 'item %d' % i) for i in range(1, 101)])\nc.commit()\n" +
		"if len(sys.argv) > 2: c.execute('pragma journal_mode=wal'); c.execute('insert into items values (101, 1)'); c.commit(); import os; os._exit(0)\n"
	if out, err := exec.Command(py, "-c", mk, path).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	before, _ := os.ReadFile(path)
	u, err := sqlop.CheckUser(path, "select name from items where id = ?", "range:1..100", "")
	if err != nil {
		t.Fatal(err)
	}
	h := Host{CPU: -1, Reps: 1, BenchTime: 5 * time.Millisecond, Python: py, Dir: dir, User: u}
	if cpus, _ := measure.Affinity(); len(cpus) > 0 {
		h.CPU = cpus[0]
	}
	userRows := func() []Comparison {
		all, err := Comparisons(h)
		if err != nil {
			t.Fatal(err)
		}
		var out []Comparison
		for _, c := range all {
			if exp.HarnessReference(c.Reference).UserOnly() {
				out = append(out, c)
			}
		}
		return out
	}
	rows := userRows()
	if len(rows) != 2 || !strings.HasSuffix(rows[0].Arm, "/user/direct") || !strings.HasSuffix(rows[1].Arm, "/user-immutable/direct") || rows[0].Ref == nil || rows[1].Ref == nil {
		t.Fatalf("rows %+v; want the application's and the immutable connection's, each with a reference", rows)
	}
	for _, r := range rows {
		if v, err := r.Ref(context.Background()); err != nil || !(v > 0) {
			t.Errorf("%s's reference: %v, %v", r.Arm, v, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("the database changed under the loops")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 { // the database and pyref.py
		t.Errorf("files left in the directory: %v", ents)
	}
	wal := filepath.Join(t.TempDir(), "wal.db")
	if out, err := exec.Command(py, "-c", mk, wal, "wal").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if h.User, err = sqlop.CheckUser(wal, "select name from items where id = ?", "range:1..100", ""); err != nil {
		t.Fatal(err)
	}
	rows = userRows()
	if rows[0].Ref != nil || !strings.Contains(rows[0].Unsupported, "checkpoint") || rows[1].Ref == nil {
		t.Errorf("a WAL database: %+v; want the application's loop refused with the reason, the immutable one kept", rows)
	}
}

// selfcheck says how long it took, and the load, only when it took longer
// than the README says.
func TestLengthNote(t *testing.T) {
	if n := LengthNote(38*time.Second, 0, 0.5, 0.6, 2, 0); n != "" {
		t.Errorf("38 s of about 35: %q, want nothing", n)
	}
	n := LengthNote(90*time.Second, 0, 4.2, 5.1, 2, 3)
	for _, want := range []string{"it took 90 s, not the about 35 s", "load average was 4.2 at its start and 5.1 at its end on 2 CPUs", "stole 3.0%"} {
		if !strings.Contains(n, want) {
			t.Errorf("%q lacks %q", n, want)
		}
	}
	if n := LengthNote(90*time.Second, 0, 0.1, 0.2, 2, 0); !strings.Contains(n, "(load average 0.1 at its start") {
		t.Errorf("quiet machine: %q", n)
	}
	if n := LengthNote(90*time.Second, 100*time.Second, 4, 4, 2, 0); n != "" {
		t.Errorf("within a longer usual (more --rounds): %q", n)
	}
}
