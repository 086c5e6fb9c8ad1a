package report

import (
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Reference is a published figure (SPEC §8) that the report shows beside
// our arm when the arm matches: same experiment, a substrate or mechanism
// containing one of Match, and (if set) the parameter Param equal to
// Value. Figures are quoted as published, never adjusted.
type Reference struct {
	Experiment string
	Match      []string // substrings of "substrate/mechanism/name"; any one suffices; empty matches all
	Param      string   // e.g. "n"; the arm's params or its name's key=value parts
	Value      string
	Ns         float64 // the figure in ns, 0 when it is not one number
	Text       string  // the figure with its source and conditions
}

// References are SPEC §8's published figures.
var References = []Reference{
	{Experiment: "pingpong", Match: []string{"thread"}, Ns: 7200, Text: "CPython 3.14, 24-core Linux: thread round trip via two SimpleQueues 7.2 µs (7.15–7.63), 2.0 OS switches; Event pair 11.0–11.3 µs"},
	{Experiment: "pingpong", Match: []string{"thread/pipe"}, Ns: 2850, Text: "CPython 3.13, 8 cores, kernel 6.12: pipe RTT p50, thread 2.85 µs"},
	{Experiment: "pingpong", Match: []string{"process/pipe"}, Ns: 3200, Text: "CPython 3.13, 8 cores, kernel 6.12: pipe RTT p50, process 3.2 µs (3.35)"},
	{Experiment: "pingpong", Match: []string{"task", "asyncio"}, Ns: 4300, Text: "CPython 3.14: asyncio.Queue round trip 4.3 µs (4.25–4.49); bare futures 3.4 µs (3.38–3.52)"},
	{Experiment: "ring", Match: []string{"thread"}, Param: "n", Value: "2", Ns: 3980, Text: "CPython 3.14: ring per hop, threads, 2 workers 3.98 µs (free-threaded 4.64 µs)"},
	{Experiment: "ring", Match: []string{"thread"}, Param: "n", Value: "100", Ns: 4540, Text: "CPython 3.14: ring per hop, threads, 100 workers 4.54 µs (free-threaded 5.22 µs)"},
	{Experiment: "ring", Match: []string{"thread"}, Param: "n", Value: "1000", Ns: 7650, Text: "CPython 3.14: ring per hop, threads, 1000 workers 7.65 µs"},
	{Experiment: "ring", Match: []string{"task", "asyncio"}, Param: "n", Value: "2", Ns: 2370, Text: "CPython 3.14: ring per hop, asyncio tasks, 2 workers 2.37 µs"},
	{Experiment: "ring", Match: []string{"task", "asyncio"}, Param: "n", Value: "100", Ns: 2220, Text: "CPython 3.14: ring per hop, asyncio tasks, 100 workers 2.22 µs"},
	{Experiment: "ring", Match: []string{"task", "asyncio"}, Param: "n", Value: "1000", Ns: 3070, Text: "CPython 3.14: ring per hop, asyncio tasks, 1000 workers 3.07 µs"},
	{Experiment: "ring", Match: []string{"same-cpu", "pinned"}, Ns: 6450, Text: "CPython 3.14: two threads pinned to one core 6.45 µs and 3.0 switches per hop (tasks 2.65 µs)"},
	{Experiment: "yield", Param: "k", Value: "1", Ns: 1610, Text: "CPython 3.14: yield per task, 1 task 1.61 µs"},
	{Experiment: "yield", Param: "k", Value: "10", Ns: 760, Text: "CPython 3.14: yield per task, 10 tasks 0.76 µs"},
	{Experiment: "yield", Param: "k", Value: "100", Ns: 670, Text: "CPython 3.14: yield per task, 100 tasks 0.67 µs"},
	{Experiment: "yield", Param: "k", Value: "1000", Ns: 670, Text: "CPython 3.14: yield per task, 1 000 tasks 0.67 µs"},
	{Experiment: "yield", Param: "k", Value: "10000", Ns: 1780, Text: "CPython 3.14: yield per task, 10 000 tasks 1.78 µs"},
	{Experiment: "interference", Match: []string{"thread"}, Text: "CPython 3.14, one busy thread: thread round trip median 5.9 → 5 096 µs, p99 16.6 → 15 235 µs; switch interval 0.5 ms: 572 / 2 187 µs; free-threaded 6.7 / 16.2 µs"},
	{Experiment: "interference", Match: []string{"task", "asyncio"}, Text: "CPython 3.14, one busy thread: asyncio round trip median 4.0 → 8.2 µs, p99 6.9 → 5 146 µs"},
	{Experiment: "interference", Param: "hogs", Value: "6", Text: "CPython 3.13, 8 cores: pipe RTT with 6 CPU hogs p50 3.6 µs, p95 19 µs"},
	{Experiment: "hop", Text: "CPython 3.14: SQLite lookup 8.4 µs direct, 30.4 µs via run_in_executor (3.6×), 58.8 µs via aiosqlite (7.0×)"},
	{Experiment: "callchain", Text: "CPython 3.14: 3-level call chain 55 ns plain, 149 ns as coroutines; ~2 µs per task"},
	{Experiment: "spawn", Text: "CPython 3.14: ~2 µs and ~2.2 KiB per asyncio task"},
	{Experiment: "cachecost", Text: "8 vs 128 threads, 4 MB working sets, 8 cores: context switches 2 410 → 248 300, migrations 180 → 41 700, instructions ≈ equal, cycles +118%, IPC 2.40 → 1.10, LLC misses ×3.3, dTLB misses ×3.9, task-clock +29%; direct switch cost ≈ 1 µs"},
}

// RefMatch is a reference figure beside our arm (Arm empty: the reference
// applies to the experiment as a whole).
type RefMatch struct {
	Arm  string
	Ours string
	Ref  Reference
}

// Matches returns the references for an experiment's arms: per arm where
// an arm matches, and experiment-wide ones that no arm matched. A per-arm
// CPython figure matches only the experiment's CPython arms (substrates
// pythread, pytask, pyprocess): beside a Go or OS-thread arm it would
// compare different things. Experiment-wide figures are shown once, as
// context.
func Matches(exp string, arms []result.Arm) []RefMatch {
	var out []RefMatch
	for _, r := range References {
		if r.Experiment != exp {
			continue
		}
		cpython := strings.HasPrefix(r.Text, "CPython")
		perArm := len(r.Match) > 0 || r.Param != ""
		matched := false
		for _, a := range arms {
			if !measured(a) || !r.matches(a) || perArm && cpython != cpythonArm(a) {
				continue
			}
			matched = true
			if len(r.Match) == 0 && r.Param == "" {
				break // experiment-wide: shown once below
			}
			out = append(out, RefMatch{Arm: a.Name, Ours: result.FormatValue(a.Median, a.Unit), Ref: r})
		}
		if matched && len(r.Match) == 0 && r.Param == "" {
			out = append(out, RefMatch{Ref: r})
		}
	}
	return out
}

// cpythonArm reports whether the arm's workers are CPython's (substrates
// pythread, pytask, pyprocess).
func cpythonArm(a result.Arm) bool { return strings.HasPrefix(a.Substrate, "py") }

func (r Reference) matches(a result.Arm) bool {
	if len(r.Match) > 0 {
		hay := a.Substrate + "/" + a.Mechanism + "/" + a.Name
		ok := false
		for _, m := range r.Match {
			if strings.Contains(hay, m) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	if r.Param != "" {
		ps := armParams(a)
		v, ok := ps[r.Param]
		if !ok {
			// Accept the usual aliases for a count of workers or tasks.
			for _, alias := range []string{"n", "k", "workers", "w", "tasks"} {
				if v2, ok2 := ps[alias]; ok2 {
					v, ok = v2, true
					break
				}
			}
		}
		if !ok || v != r.Value {
			return false
		}
	}
	return true
}

// published holds SPEC §8's figures in the short form the verdict puts
// beside its answers (the seeds' machines, CPython unless noted).
var published = map[string]string{
	"process pipe": "p50 3.2 µs (CPython 3.13, 8 cores)",
	"pythread":     "7.2 µs (7.15–7.63), 2.0 switches",
	"pytask":       "4.3 µs (4.25–4.49)",
	"busy thread":  "p50 5.9 µs → 5 096 µs, p99 16.6 µs → 15 235 µs",
	"hop":          "8.4 µs direct · run_in_executor 30.4 µs (3.6×) · aiosqlite 58.8 µs (7.0×)",
	"indirect":     "4 MB sets, 128 vs 8 threads on 8 cores: cycles +118% for ≈ equal instructions, IPC 2.40 → 1.10, LLC misses ×3.3, task-clock +29%; direct switch ≈ 1 µs",
}
