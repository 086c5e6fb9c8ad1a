package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/selfcheck"
)

// Bad input to selfcheck exits 2, naming the value and the range, before
// anything runs or is stored.
func TestSelfcheckBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds 0: must be in 1..20"},
		{[]string{"--rounds", "21"}, "--rounds 21"},
		{[]string{"--reps", "0"}, "--reps 0: must be in 1..20"},
		{[]string{"--benchtime", "0s"}, "--benchtime"},
		{[]string{"--settle", "2m"}, "--settle"},
		{[]string{"--cpu", "9999"}, `--cpu "9999": want a CPU number in 0..8191`},
		{[]string{"--cpu", "8000"}, "--cpu 8000: not a CPU ctxlab may use; want one of"},
		{[]string{"--cpu", "x"}, `--cpu "x": want a CPU number in 0..8191`},
		{[]string{"--cpu", "-1"}, `--cpu "-1": want a CPU number in 0..8191`},
		{[]string{"--format", "xml"}, `--format "xml": must be table or json`},
		{[]string{"--python", "/nonexistent/python3"}, "--python /nonexistent/python3"},
		{[]string{"--set", "hop.pool=2"}, "--set hop.pool=2: selfcheck takes db=PATH"},
		{[]string{"--set", "db=/nonexistent.db", "--set", "query=select 1"}, "db=/nonexistent.db"},
	} {
		code, _, errs := run(t, append([]string{"selfcheck", "--db", db}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("selfcheck %v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused selfcheck made the history: %v", err)
	}
}

// A real selfcheck without perf on PATH: every row is present, the perf
// rows say why they were not checked, the others ran one round each; the
// check is stored, and a later env and run on this host carry it.
func TestSelfcheckWithoutPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ctxlab's arms and references as subprocesses")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The interpreter itself, not a shim on PATH (pyenv's are shell scripts).
	exe, pyErr := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if pyErr == nil {
		if err := os.Symlink(strings.TrimSpace(string(exe)), filepath.Join(bin, "python3")); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "h.db")
	cmd := exec.Command(os.Args[0], "selfcheck", "--rounds", "1", "--reps", "1", "--benchtime", "5ms", "--settle", "0", "--db", db, "--format", "json")
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1", "PATH="+bin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("selfcheck: %v\n%s", err, errb.String())
	}
	t.Logf("selfcheck took %s", time.Since(began))
	var r result.Run
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	h := selfcheck.FromRun(&r)
	var want []string // every arm an experiment declares, in the registry's order, but the user's query's
	for _, spec := range exp.All() {
		hs, ok := exp.Hook[exp.Harnessed](spec)
		if !ok {
			continue
		}
		for _, ref := range hs.Harness() {
			if !ref.Reference.UserOnly() {
				want = append(want, ref.Arm)
			}
		}
	}
	if h == nil || len(h.Rows) != len(want) || len(want) != 8 {
		t.Fatalf("rows %+v; want the %d declared (8: five pingpong arms, the process pipe twice, CPython's chain and lookup)", h, len(want))
	}
	for i, row := range h.Rows {
		perfRow := strings.HasPrefix(row.Reference, "perf bench")
		pyRow := strings.HasPrefix(row.Arm, "hop/") || strings.HasPrefix(row.Arm, "callchain/")
		switch {
		case row.Arm != want[i]:
			t.Errorf("row %d is %s; want %s", i, row.Arm, want[i])
		case perfRow && (row.Status != result.StatusUnsupported || !strings.Contains(row.Reason, "perf is not installed")):
			t.Errorf("%s without perf: %s %q; want unsupported, saying perf is not installed", row.Arm, row.Status, row.Reason)
		case pyRow && pyErr != nil:
			if row.Status != result.StatusUnsupported {
				t.Errorf("%s without python3: %s", row.Arm, row.Status)
			}
		case !perfRow && (row.Status != result.StatusOK || !(row.Ratio > 0)):
			t.Errorf("%s: %s %q ratio %v; want a ratio", row.Arm, row.Status, row.Reason, row.Ratio)
		}
	}
	if !strings.Contains(h.Verdict, "not checked: pingpong/thread/pipe/unpinned, pingpong/process/pipe/unpinned (perf is not installed") {
		t.Errorf("verdict %q; want it to say what was not checked and why", h.Verdict)
	}
	code, envOut, errs := run(t, "env", "--db", db, "--format", "json")
	var e struct {
		Harness *result.HarnessCheck `json:"harness_check"`
	}
	if code != 0 || json.Unmarshal([]byte(envOut), &e) != nil || e.Harness == nil || e.Harness.RunID != r.ID {
		t.Errorf("env after selfcheck: exit %d %s; harness %+v; want run %s", code, errs, e.Harness, r.ID)
	}
	code, show, _ := run(t, "show", r.ID, "--db", db)
	if code != 0 || !strings.Contains(show, "ctxlab selfcheck ·") || !strings.Contains(show, "verdict: ") {
		t.Errorf("show of a selfcheck: exit %d\n%s", code, show)
	}
}

// An arm the last selfcheck found over its limit on this host, in every
// round, carries a note saying by how much; the others carry none (an arm
// over only in the median of noisy rounds neither).
func TestHarnessNotes(t *testing.T) {
	run := &result.Run{Arms: []result.Arm{{Name: "pingpong/process/pipe/unpinned"}, {Name: "pingpong/thread/futex/unpinned"}, {Name: "ring/x"}}}
	run.Env.Harness = &result.HarnessCheck{Time: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), Rows: []result.HarnessRow{
		{Arm: "pingpong/process/pipe/unpinned", Reference: "perf bench sched pipe", Status: result.StatusOK, Ratio: 1.12, Min: 1.08, Max: 1.2, Limit: 1.05, Rounds: 3},
		{Arm: "pingpong/thread/futex/unpinned", Reference: "raw futex loop", Status: result.StatusOK, Ratio: 1.01, Limit: 1.05, Rounds: 3},
		{Arm: "ring/x", Reference: "r", Status: result.StatusOK, Ratio: 1.2, Min: 0.9, Max: 1.4, Limit: 1.05, Rounds: 5}, // over, not in every round
	}}
	harnessNotes(run)
	if n := run.Arms[0].Notes; len(n) != 1 || !strings.Contains(n[0], "ctxlab selfcheck (2026-12-02) read this arm 1.12× perf bench sched pipe on this host (its rounds 1.08–1.20×, limit 1.05×): up to 11% of its figure may be the harness") {
		t.Errorf("over arm's notes %q", n)
	}
	if len(run.Arms[1].Notes)+len(run.Arms[2].Notes) != 0 {
		t.Errorf("notes on arms within their limit or unchecked: %q %q", run.Arms[1].Notes, run.Arms[2].Notes)
	}
	harnessNotes(&result.Run{Arms: []result.Arm{{Name: "a"}}}) // no check: nothing, no panic
}
