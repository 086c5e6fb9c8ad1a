package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"10000/s": 1e4, "10k/s": 1e4, "2.5M/s": 2.5e6, "1_000/s": 1000, " 7/s": 7} {
		got, err := parseRate(in)
		if err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10000", "0/s", "-1/s", "NaN/s", "Inf/s", "2e9/s", "k/s", "10/min"} {
		_, err := parseRate(in)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("parseRate(%q): %v, want a usage error", in, err)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10000/s", "10k/s", "1M/s", "x/s", "0/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRate(s)
		if err == nil && !(v > 0 && v <= maxRate) {
			t.Fatalf("parseRate(%q) = %v without error", s, v)
		}
	})
}

// budget prices CPU time, not wall time: a cross-CPU round trip of 200 µs
// that spends 20 µs on a CPU costs 20% of a core at 10 000/s, not 200%.
func TestBudgetUsesCPUTime(t *testing.T) {
	cpu := 20000.0
	run := &result.Run{Schema: 1, ID: "r1", Arms: []result.Arm{
		{Name: "pingpong/thread/futex/cross-cpu", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: result.StatusOK, Unit: "ns/op", Median: 200000, CPUNsPerOp: &cpu},
		{Name: "pingpong/thread/futex/same-cpu", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: result.StatusOK, Unit: "ns/op", Median: 7000},
	}}
	var b bytes.Buffer
	if err := writeBudget(&b, run, 10000, "", 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"pingpong/thread/futex/cross-cpu   20 µs   200 µs", "20%", "CPU time of all participants", "thread 20% (futex/cross-cpu)", "not priced: 1 arm(s) recorded no CPU time per op: pingpong (1: thread/futex/same-cpu)"} {
		if !strings.Contains(out, want) {
			t.Errorf("budget output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "200%") {
		t.Errorf("budget priced wall time:\n%s", out)
	}
	// Without any CPU time the wall-time fallback says so.
	b.Reset()
	run.Arms = run.Arms[1:]
	if err := writeBudget(&b, run, 10000, "", 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "priced by WALL time") {
		t.Errorf("wall-time fallback not said:\n%s", b.String())
	}
}

// budgetArm is an arm with CPU time per op.
func budgetArm(name, sub, op string, cpu float64) result.Arm {
	return result.Arm{Name: name, Experiment: strings.Split(name, "/")[0], Substrate: sub, Op: op, Status: result.StatusOK,
		Unit: "ns/op", Median: cpu, CPUNsPerOp: &cpu}
}

// The summary's label is the op's short noun, never its description
// glued to a rate unit ("…beyond the 1 ms)s/s").
func TestBudgetOpLabel(t *testing.T) {
	run := &result.Run{Schema: 1, ID: "r", Arms: []result.Arm{
		budgetArm("interference/timer/none/hogs=0/gomaxprocs=1", "goroutine", "1 ms timer sleep (percentiles: wake delay beyond the 1 ms)", 38000),
		budgetArm("interference/chanpair/none/hogs=0/gomaxprocs=1", "goroutine", "burst of 100 channel round trips", 31000),
	}}
	var b bytes.Buffer
	if err := writeBudget(&b, run, 10000, "", 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, ")s/s") || strings.Contains(out, "percentiles") {
		t.Errorf("an op description pasted into a label:\n%s", out)
	}
	// Different ops are priced apart: a timer sleep is not the cheapest burst.
	for _, want := range []string{"interference, per 1 ms timer sleep: goroutine 38%", "interference, per burst of 100 channel round trips: goroutine 31%", "at 10 000 ops/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("budget lacks %q:\n%s", want, out)
		}
	}
}

// Arms that run CPU hogs beside their workers are no CPU cost of a
// handoff: they are left out, named, with the reason.
func TestBudgetLeavesOutHoggedArms(t *testing.T) {
	hog := budgetArm("interference/timer/goroutine-spin/hogs=1/gomaxprocs=1", "goroutine", "1 ms timer sleep", 18.744e6)
	hog.Params = map[string]string{"hogs": "1"}
	quiet := budgetArm("interference/timer/none/hogs=0/gomaxprocs=1", "goroutine", "1 ms timer sleep", 38000)
	quiet.Params = map[string]string{"hogs": "0"}
	run := &result.Run{Schema: 1, ID: "r", Arms: []result.Arm{quiet, hog}}
	var b bytes.Buffer
	if err := writeBudget(&b, run, 10000, "", 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "18744%") || strings.Contains(out, "goroutine-spin/hogs=1/gomaxprocs=1  ") {
		t.Errorf("a hogged arm was priced:\n%s", out)
	}
	if !strings.Contains(out, "not priced: 1 arm(s) run CPU hogs beside their workers") || !strings.Contains(out, "interference (1: timer/goroutine-spin/hogs=1/gomaxprocs=1)") {
		t.Errorf("the hogged arm is not named with its reason:\n%s", out)
	}
	// Only hogged arms match: refused, saying why.
	err := writeBudget(&b, run, 10000, "*hogs=1*", 0)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "run CPU hogs") {
		t.Errorf("only hogged arms: %v", err)
	}
}

// Unpriced arms are named compactly: per experiment, a count, two names, "…".
func TestBudgetNamesUnpricedArms(t *testing.T) {
	run := &result.Run{Schema: 1, ID: "r", Arms: []result.Arm{budgetArm("pingpong/thread/futex/same-cpu", "thread", "round trip", 2000)}}
	for _, n := range []string{"pingpong/pythread/a", "pingpong/pythread/b", "pingpong/pythread/c", "hop/pytask/direct"} {
		run.Arms = append(run.Arms, result.Arm{Name: n, Experiment: strings.Split(n, "/")[0], Status: result.StatusOK, Unit: "ns/op", Median: 5000})
	}
	run.Arms = append(run.Arms, result.Arm{Name: "spawn/goroutine/idle-memory", Experiment: "spawn", Status: result.StatusOK, Unit: "B/op", Median: 2048})
	var b bytes.Buffer
	if err := writeBudget(&b, run, 1000, "", 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not priced: 4 arm(s) recorded no CPU time per op: pingpong (3: pythread/a, pythread/b, …), hop (1: pytask/direct)",
		"not priced: 1 arm(s) are not a time per op: spawn (1: B/op)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("budget lacks %q:\n%s", want, b.String())
		}
	}
}

// On a terminal the budget fits its width: arms under their experiment,
// long names on a line of their own, no line wider than the terminal.
func TestBudgetFitsTheWidth(t *testing.T) {
	run := &result.Run{Schema: 1, ID: "20261202T003518-083f06", Env: result.Env{Hostname: "vm"}}
	for i := 0; i < 50; i++ {
		run.Arms = append(run.Arms, budgetArm(fmt.Sprintf("interference/pythread/simplequeue/busy=0/si=default/cross-cpu/n=%d", i), "pythread", "round trip (a long description of what one op is)", float64(1000*(i+1))))
	}
	for _, width := range []int{80, 120} {
		var b bytes.Buffer
		if err := writeBudget(&b, run, 10000, "", width); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: a line of %d: %q", width, n, l)
			}
		}
		if !strings.Contains(b.String(), "\ninterference\n") || strings.Contains(b.String(), "\ninterference/pythread") {
			t.Errorf("width %d: arms not under their experiment:\n%s", width, b.String())
		}
	}
}

// An arm whose repetitions held too few ops has no figure to price: it is
// left out, named, with the reason.
func TestBudgetLeavesOutTooFewOps(t *testing.T) {
	fine := budgetArm("pingpong/thread/futex/same-cpu", "thread", "round trip", 2000)
	few := budgetArm("pingpong/thread/futex/cross-cpu", "thread", "round trip", 7_777_777)
	few.Status, few.Reason = result.StatusTooFewOps, "only 3 ops per repetition (< 10)"
	run := &result.Run{Schema: result.SchemaVersion, ID: "r", Arms: []result.Arm{fine, few}}
	var b bytes.Buffer
	if err := writeBudget(&b, run, 10000, "", 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "cross-cpu  ") || strings.Contains(out, "7.78 ms") {
		t.Errorf("an arm with too few ops was priced:\n%s", out)
	}
	if !strings.Contains(out, "not priced: 1 arm(s) held too few ops per repetition for a figure: pingpong (1: thread/futex/cross-cpu)") {
		t.Errorf("the arm is not named with its reason:\n%s", out)
	}
	err := writeBudget(&b, run, 10000, "*cross-cpu", 0)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "too few ops") {
		t.Errorf("only an arm with too few ops: %v", err)
	}
}
