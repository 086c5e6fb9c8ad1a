package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Two real quick runs on the busy 2-vCPU development VM: one stored before
// the metric renaming and the runner's CPU time, one after.
func TestVerdictGolden(t *testing.T) {
	for _, name := range []string{"quick", "quick2"} {
		var b bytes.Buffer
		if err := Verdict(&b, loadRunFile(t, name+".json")); err != nil {
			t.Fatal(err)
		}
		golden(t, name+".verdict.golden", b.Bytes())
	}
}

// The verdict is one screen, says every line once, and answers every
// question with a figure or with "not measured".
func TestVerdictShape(t *testing.T) {
	for _, run := range []*result.Run{loadQuick(t), loadRunFile(t, "quick2.json"), loadRun(t), {Schema: 1, ID: "empty"}} {
		lines := VerdictLines(run, true)
		if len(lines) > VerdictMaxLines {
			t.Errorf("%s: %d lines, want ≤ %d", run.ID, len(lines), VerdictMaxLines)
		}
		seen := map[string]bool{}
		for _, l := range lines {
			if l != "" && seen[l] {
				t.Errorf("%s: line said twice: %q", run.ID, l)
			}
			seen[l] = true
			if strings.Contains(l, "e+0") || strings.Contains(l, "e-0") {
				t.Errorf("%s: figure not in a human scale: %q", run.ID, l)
			}
		}
		text := strings.Join(lines, "\n")
		for _, q := range []string{"handoff, one round trip", "one busy worker", "a thread hop", "the indirect cost", "handoffs per second cost in CPU", "checks"} {
			if !strings.Contains(text, q) {
				t.Errorf("%s: no answer to %q", run.ID, q)
			}
		}
	}
	empty := strings.Join(VerdictLines(&result.Run{Schema: 1, ID: "empty"}, true), "\n")
	if strings.Count(empty, "not measured") < 6 {
		t.Errorf("an empty run should say 'not measured' for each answer:\n%s", empty)
	}
}

// A run that recorded CPU time per op prices handoffs from it, not from
// wall time: a cross-CPU round trip mostly waits.
func TestVerdictBudgetFromCPUTime(t *testing.T) {
	cpu := 20000.0
	run := &result.Run{Schema: 1, ID: "r", Arms: []result.Arm{{
		Name: "pingpong/thread/futex/cross-cpu", Experiment: "pingpong", Status: result.StatusOK,
		Unit: "ns/op", Median: 200000, Min: 190000, Max: 210000, Placement: "cross-cpu", CPUNsPerOp: &cpu,
	}}}
	text := strings.Join(VerdictLines(run, true), "\n")
	if !strings.Contains(text, "thread/futex/cross-cpu 20% of a core (20 µs/op)") {
		t.Errorf("budget line not from CPU time:\n%s", text)
	}
}

// The count of checks that did not hold agrees with the lines listed: a
// check that failed on several arms is one line with its count, and a
// list cut to fit the screen says how many checks, not lines, are left.
func TestVerdictCheckCountMatchesLines(t *testing.T) {
	chk := func(name string, holds bool, detail string) result.Check {
		return result.Check{Name: name, Holds: holds, Detail: detail}
	}
	for _, tc := range []struct {
		checks []result.Check
		head   string
		lines  int
	}{
		{[]result.Check{chk("a", false, "x"), chk("b", false, "y"), chk("c", true, "")},
			"checks that did not hold on this machine: 2 of 3", 2},
		{[]result.Check{chk("same", false, "arm 1"), chk("same", false, "arm 2"), chk("other", true, ""), chk("third", false, "z")},
			"checks that did not hold on this machine: 3 of 4, in 2 lines: (k×) is one check that failed k times", 2},
		{[]result.Check{chk("same", false, "arm 1"), chk("same", false, "arm 2")},
			"checks that did not hold on this machine: 2 of 2, in 1 line: ", 1},
	} {
		run := &result.Run{Schema: 1, ID: "r", Experiments: []result.Experiment{{Name: "e", Checks: tc.checks}}}
		got, _ := verdictChecks(run)
		if !strings.HasPrefix(got[0], tc.head) {
			t.Errorf("head %q, want %q", got[0], tc.head)
		}
		if len(got)-1 != tc.lines {
			t.Errorf("%d lines listed, want %d: %q", len(got)-1, tc.lines, got)
		}
		checkCountAgrees(t, got)
	}
	// Real runs, whose lists are grouped and cut to fit the screen.
	for _, name := range []string{"quick", "quick2"} {
		lines := VerdictLines(loadRunFile(t, name+".json"), true)
		for i, l := range lines {
			if strings.HasPrefix(l, "checks that did not hold") {
				end := i + 1
				for end < len(lines) && strings.HasPrefix(lines[end], "  ") {
					end++
				}
				checkCountAgrees(t, lines[i:end])
			}
		}
	}
}

// checkCountAgrees: the head's count of failed checks is the sum over the
// lines under it (a "(k×)" line is k checks, "… N more" is N).
func checkCountAgrees(t *testing.T, lines []string) {
	t.Helper()
	var failed int
	fmt.Sscanf(strings.TrimPrefix(lines[0], "checks that did not hold on this machine: "), "%d", &failed)
	sum := 0
	for _, l := range lines[1:] {
		k := 1
		if rest, ok := strings.CutPrefix(l, "  … "); ok {
			fmt.Sscan(rest, &k)
		} else if i := strings.Index(l, "×) — "); i > 0 {
			j := strings.LastIndex(l[:i], "(")
			fmt.Sscan(l[j+1:i], &k)
		}
		sum += k
	}
	if sum != failed {
		t.Errorf("the lines stand for %d checks, the head says %d:\n%s", sum, failed, strings.Join(lines, "\n"))
	}
}

// The detail tables of a real busy quick run say each noise reason once,
// explain a median far above its sampled p50, and print no figure in
// scientific notation.
func TestTableSaysThingsOnce(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, loadQuick(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "load average 3.7 on 2 CPUs when the run started"); n != 1 {
		t.Errorf("the run-wide load note appears %d times, want once", n)
	}
	if !strings.Contains(out, "* median more than 1.5× the sampled p50") {
		t.Error("no explanation of a median far above its sampled p50")
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "e-0") || strings.Contains(l, "e+0") {
			t.Errorf("not a human scale: %q", l)
		}
	}
}

// Under --python all a CPython arm's name carries its interpreter; the
// handoff table finds it by the plain name and says whose figure it shows.
func TestVerdictNamesTheInterpreter(t *testing.T) {
	run := &result.Run{Schema: 1, ID: "r", Arms: []result.Arm{{
		Name: "pingpong/pythread/simplequeue/same-cpu/py=3.11", Experiment: "pingpong", Status: result.StatusOK,
		Unit: "ns/op", Median: 21000, Min: 20000, Max: 22000, Placement: "same-cpu",
	}}}
	text := strings.Join(VerdictLines(run, true), "\n")
	if !strings.Contains(text, "21 µs (20–22) (py=3.11)") {
		t.Errorf("the CPython row does not show the py=3.11 arm by name:\n%s", text)
	}
}

// TestVerdictUnstoredRun: a run the history does not hold (--no-store, an
// interrupted run) must not point at `ctxlab show ID`, which would fail.
func TestVerdictUnstoredRun(t *testing.T) {
	run := &result.Run{Schema: 1, ID: "20261202T000000-abcdef"}
	stored := strings.Join(VerdictLines(run, true), "\n")
	unstored := strings.Join(VerdictLines(run, false), "\n")
	if !strings.Contains(stored, "ctxlab show "+run.ID) {
		t.Errorf("a stored run's verdict does not point at ctxlab show %s", run.ID)
	}
	if strings.Contains(unstored, "ctxlab show") || !strings.Contains(unstored, "not in the history") {
		t.Errorf("an unstored run's verdict:\n%s", unstored)
	}
}
