package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/textcol"
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

// screenAt is the verdict as a terminal width columns wide shows it.
func screenAt(run *result.Run, width int) []string {
	var out []string
	for _, l := range VerdictLines(run, true, width) {
		out = append(out, textcol.Wrap(l, width)...)
	}
	return out
}

// suiteRuns are the suite runs the screen is tested on: the two real
// quick runs (quick2's verdict was 75 lines at 80 columns, 59 at 120), a
// small one and an empty one.
func suiteRuns(t *testing.T) []*result.Run {
	return []*result.Run{loadQuick(t), loadRunFile(t, "quick2.json"), loadRun(t), {Schema: 1, ID: "empty", Suite: "quick"}}
}

// The quick suite's verdict is one screen at 80 columns and at 120: at
// most VerdictMaxLines lines, none wider than the terminal.
func TestVerdictFitsTheScreen(t *testing.T) {
	for _, run := range suiteRuns(t) {
		for _, width := range []int{80, 120} {
			lines := screenAt(run, width)
			if len(lines) > VerdictMaxLines {
				t.Errorf("%s at %d columns: %d lines, want ≤ %d:\n%s", run.ID, width, len(lines), VerdictMaxLines, strings.Join(lines, "\n"))
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > width {
					t.Errorf("%s at %d columns: a line of %d: %q", run.ID, width, n, l)
				}
			}
		}
	}
}

// A wrapped or shortened line never cuts a word or a figure: where the
// verdict leaves something out it says " …" after a whole word.
func TestVerdictCutsNoWord(t *testing.T) {
	cut := regexp.MustCompile(`[^\s]…`)
	for _, run := range suiteRuns(t) {
		for _, width := range []int{80, 120} {
			for _, l := range screenAt(run, width) {
				if cut.MatchString(l) {
					t.Errorf("%s at %d columns: a word cut: %q", run.ID, width, l)
				}
			}
		}
	}
}

// The verdict says every line once, prints no figure in scientific
// notation, and answers every question with a figure or "not measured".
func TestVerdictShape(t *testing.T) {
	for _, run := range suiteRuns(t) {
		lines := VerdictLines(run, true, 80)
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
		for _, q := range []string{"handoff, one round trip", "one busy worker", "a thread hop", "the indirect cost", "round trips a second cost in CPU", "checks"} {
			if !strings.Contains(text, q) {
				t.Errorf("%s: no answer to %q", run.ID, q)
			}
		}
	}
	empty := strings.Join(VerdictLines(&result.Run{Schema: 1, ID: "empty", Suite: "quick"}, true, 80), "\n")
	if strings.Count(empty, "not measured") < 6 {
		t.Errorf("an empty run should say 'not measured' for each answer:\n%s", empty)
	}
}

// No word a user cannot look up: no reference to a SPEC or a seed the
// repository does not have, no driver's code name, and no symbol
// explained only in a footer (†, *, °).
func TestVerdictPlainWords(t *testing.T) {
	runs := append(suiteRuns(t), ringSelection(t))
	for _, run := range runs {
		for _, width := range []int{80, 120} {
			text := strings.Join(VerdictLines(run, true, width), "\n")
			for _, bad := range []string{"SPEC", "§", "seed", "modernc-memory", "†", "°", " *", "(k×)"} {
				if strings.Contains(text, bad) {
					t.Errorf("%s at %d columns says %q:\n%s", run.ID, width, bad, text)
				}
			}
		}
	}
	if text := strings.Join(VerdictLines(loadRunFile(t, "quick2.json"), true, 80), "\n"); !strings.Contains(text, "pure-Go SQLite, in-memory database") {
		t.Errorf("the hop line does not say what modernc-memory is:\n%s", text)
	}
}

// ringSelection is `ctxlab run ring` cut from a real quick run: its ring
// arms and checks, and a custom suite.
func ringSelection(t *testing.T) *result.Run {
	run := loadRunFile(t, "quick2.json")
	sel := *run
	sel.ID, sel.Suite, sel.Arms, sel.Experiments = "ring-selection", "custom", nil, nil
	for _, a := range run.Arms {
		if a.Experiment == "ring" {
			sel.Arms = append(sel.Arms, a)
		}
	}
	for _, e := range run.Experiments {
		if e.Name == "ring" {
			sel.Experiments = append(sel.Experiments, e)
		}
	}
	return &sel
}

// A selection that is not a suite leads with its own figures: each arm of
// the experiment that ran with its median, spread, repetitions and switches,
// what an op is, and the experiment's checks; nothing of the experiments
// that did not run ("not measured", the handoff table), within 80 columns.
func TestVerdictOfASelection(t *testing.T) {
	run := ringSelection(t)
	lines := VerdictLines(run, true, 80)
	text := strings.Join(lines, "\n")
	for _, a := range run.Arms {
		name := strings.TrimPrefix(a.Name, "ring/")
		row := ""
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), name+" ") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("no row for %s:\n%s", name, text)
			continue
		}
		sw := fmt.Sprintf("%.2f", a.Switches.Total())
		for _, want := range []string{result.FormatNs(a.Median), exp.Spread(a), " 3 ", sw} {
			if !strings.Contains(row, want) {
				t.Errorf("%s: row %q lacks %q", name, row, want)
			}
		}
	}
	for _, want := range []string{"per hop", "per round trip", "checks: 2 of 2 hold", "holds: ", "n: repetitions", "switches: OS context switches per op"} {
		if !strings.Contains(text, want) {
			t.Errorf("the selection's verdict lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"not measured", "handoff, one round trip", "one busy worker", "a thread hop"} {
		if strings.Contains(text, bad) {
			t.Errorf("the selection's verdict says %q, about what it did not run:\n%s", bad, text)
		}
	}
	if n := strings.Count(text, "noise:"); n != 1 {
		t.Errorf("noise said %d times in one table, want once:\n%s", n, text)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
}

// An experiment with dozens of arms and long names (interference's) shows
// every arm within 80 columns, its name whole (issue 50: a cut name,
// "modernc-file/threa…2hop", is no arm a user can run): a name too long
// for the room wraps at a '/' onto a line of its own.
func TestVerdictOfManyArms(t *testing.T) {
	names := []string{
		"timer/none/hogs=0/gomaxprocs=1", "timer/goroutine-spin/hogs=3/gomaxprocs=1", "timer/process-spin/hogs=3/gomaxprocs=1",
		"timer/goroutine-spin/hogs=3/gomaxprocs=2", "timer/goroutine-gosched/hogs=3/gomaxprocs=1", "netpoll/none/hogs=0/gomaxprocs=1",
		"netpoll/goroutine-spin/hogs=3/gomaxprocs=1", "netpoll/process-spin/hogs=3/gomaxprocs=1", "chanpair/goroutine-gosched/hogs=3/gomaxprocs=1",
		"starve/goroutine-spin/hogs=3/gomaxprocs=1/asyncpreemptoff", "starve/goroutine-gosched/hogs=3/gomaxprocs=1/asyncpreemptoff",
		"pythread/simplequeue/busy=3/si=default/cross-cpu", "pythread/simplequeue/busy=3/si=0.5ms/in=process",
		"pytask/asyncio-queue/busy=3/si=default/in=process", "pytask/asyncio-queue/busy=0/si=default",
	}
	run := &result.Run{Schema: 1, ID: "many", Suite: "custom", Experiments: []result.Experiment{{Name: "interference", Op: "wake-up"}}}
	for i, n := range names {
		m := float64(i+1) * 1000
		run.Arms = append(run.Arms, result.Arm{Name: "interference/" + n, Experiment: "interference", Op: "1 ms timer sleep (percentiles: wake delay beyond the 1 ms)",
			Unit: "ns/op", Status: result.StatusOK, RepMeans: []float64{m, m, m}, Median: m, Min: m, Max: m,
			Switches: &result.Switches{Voluntary: 1}, Percentiles: &result.Percentiles{Samples: 100, P50: m, P99: 2 * m}})
	}
	lines := VerdictLines(run, true, 80)
	text := strings.Join(lines, "\n")
	var shown []string // the names as the table shows them, continuations joined
	table, in := 0, false
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
		in = (in || strings.HasPrefix(l, "  per ")) && !strings.HasPrefix(l, "  noise")
		f := strings.Fields(l)
		if !in || strings.HasPrefix(l, "  per ") || len(f) == 0 {
			continue
		}
		table++
		if strings.HasPrefix(l, "    ") && len(f) == 1 && len(shown) > 0 {
			shown[len(shown)-1] += f[0]
			continue
		}
		shown = append(shown, f[0])
	}
	if strings.Join(shown, "\n") != strings.Join(names, "\n") {
		t.Errorf("the names shown are not the arms' whole names:\n%s\nwant\n%s\n%s", strings.Join(shown, "\n"), strings.Join(names, "\n"), text)
	}
	for i := range names {
		if n := strings.Count(text, fmt.Sprintf(" %d µs ", i+1)); n != 1 {
			t.Errorf("arm %d's median appears %d times, want once:\n%s", i, n, text)
		}
	}
	if table > 2*len(names) {
		t.Errorf("%d table lines for %d arms:\n%s", table, len(names), text)
	}
	if strings.Contains(text, "…") {
		t.Errorf("a name was cut:\n%s", text)
	}
}

// An op too wide for the names' column (the user's query) is a line of its
// own above its rows: it does not widen the table past the width.
func TestVerdictLongOpHeading(t *testing.T) {
	run := &result.Run{Schema: 1, ID: "q", Suite: "custom", Experiments: []result.Experiment{{Name: "hop", Op: "call"}}}
	op := `your query "select customer, total from orders where order_id = ?" on shop.db`
	for i, n := range []string{"user/direct/gomaxprocs=all", "user/thread-2hop/gomaxprocs=all"} {
		m := float64(i+1) * 1000
		run.Arms = append(run.Arms, result.Arm{Name: "hop/" + n, Experiment: "hop", Op: op, Unit: "ns/op", Status: result.StatusOK,
			RepMeans: []float64{m, m, m}, Median: m, Min: m, Max: m, Switches: &result.Switches{Voluntary: 1}})
	}
	run.Arms = append(run.Arms, result.Arm{Name: "hop/map/direct/gomaxprocs=1", Experiment: "hop", Op: op + " again, longer", Unit: "ns/op",
		Status: result.StatusOK, RepMeans: []float64{9, 9, 9}, Median: 9, Min: 9, Max: 9})
	lines := VerdictLines(run, true, 80)
	text := strings.Join(lines, "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
		if strings.HasPrefix(l, "  user/") && utf8.RuneCountInString(l) > 70 {
			t.Errorf("the op heading widened the table: %q", l)
		}
	}
	if !strings.Contains(text, "  per your query") || !strings.Contains(text, "median") {
		t.Errorf("no op heading or column heads:\n%s", text)
	}
}

// A run confined to one CPU (--cpus 0) measured nothing across CPUs: its
// unpinned arms ran on that one CPU, so the handoff table has no "across
// CPUs" figure, and says why.
func TestVerdictOneCPUHasNoAcrossColumn(t *testing.T) {
	arm := func(name, place string, gmp int, ns float64) result.Arm {
		return result.Arm{Name: name, Experiment: "pingpong", Status: result.StatusOK, Unit: "ns/op", Placement: place, GOMAXPROCS: gmp,
			CPUs: []int{0}, Median: ns, Min: ns, Max: ns, RepMeans: []float64{ns}}
	}
	run := &result.Run{Schema: 1, ID: "cpus0", Suite: "quick", Env: result.Env{LogicalCPUs: 2, OnlineCPUs: []int{0, 1}}, Arms: []result.Arm{
		arm("pingpong/goroutine/chan/gomaxprocs=1", "unpinned", 1, 300),
		arm("pingpong/goroutine/chan/gomaxprocs=all", "unpinned", 1, 310),
		arm("pingpong/thread/futex/same-cpu", "same-cpu", 1, 5100),
		arm("pingpong/thread/futex/unpinned", "unpinned", 1, 4670),
	}}
	text := strings.Join(VerdictLines(run, true, 120), "\n")
	if strings.Contains(text, "4.67 µs") || strings.Contains(text, "310 ns") {
		t.Errorf("a one-CPU arm shows as an across-CPUs figure:\n%s", text)
	}
	if !strings.Contains(text, "across CPUs: not measured, the run was confined to one CPU") {
		t.Errorf("the verdict does not say why there is no across-CPUs figure:\n%s", text)
	}
	// With two CPUs the same unpinned arm is an across-CPUs figure, said to
	// be unpinned.
	run.Arms[3].CPUs, run.Arms[3].GOMAXPROCS = []int{0, 1}, 2
	if text := strings.Join(VerdictLines(run, true, 120), "\n"); !regexp.MustCompile(`4\.67 µs \(4\.67–4\.67\)\s+unpinned`).MatchString(text) {
		t.Errorf("an unpinned arm on two CPUs is not shown as unpinned:\n%s", text)
	}
}

// processes vs threads: an extra cost per switch is spoken of only when
// the process round trip is slower beyond the noise, never at 0.9× or 1.03×.
func TestVerdictProcessesVsThreadsWording(t *testing.T) {
	for _, tc := range []struct {
		process float64
		want    string
		extra   bool
	}{
		{18000, "1.1× faster", false},
		{20600, "about the same", false},
		{34000, "1.7× slower", true},
	} {
		sw := &result.Switches{Voluntary: 1, Involuntary: 1}
		arm := func(name string, ns float64) result.Arm {
			return result.Arm{Name: name, Experiment: "pingpong", Status: result.StatusOK, Unit: "ns/op", Placement: "same-cpu",
				Median: ns, Min: ns, Max: ns, Switches: sw}
		}
		run := &result.Run{Schema: 1, ID: "pvt", Suite: "quick", Arms: []result.Arm{
			arm("pingpong/thread/pipe/same-cpu", 20000), arm("pingpong/process/pipe/same-cpu", tc.process)}}
		text := strings.Join(VerdictLines(run, true, 200), "\n")
		line := ""
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "processes vs threads") {
				line = l
			}
		}
		if !strings.Contains(line, tc.want) || strings.Contains(line, "extra") != tc.extra {
			t.Errorf("process %v ns vs thread 20 µs: %q; want %q, extra %v", tc.process, line, tc.want, tc.extra)
		}
	}
}

// A busy thread that makes the CPython round trip faster (67.2 → 16.3 µs)
// is said to, with why; a slower one is not.
func TestVerdictBusyThreadFaster(t *testing.T) {
	arm := func(busy string, p50 float64) result.Arm {
		return result.Arm{Name: "interference/pythread/simplequeue/busy=" + busy + "/si=default", Experiment: "interference",
			Substrate: "pythread", Status: result.StatusOK, Unit: "ns/op", Median: p50, Min: p50, Max: p50,
			Params:      map[string]string{"busy": busy, "switch_interval": "5ms"},
			Percentiles: &result.Percentiles{Samples: 100, P50: p50, P99: 3 * p50}}
	}
	for _, tc := range []struct {
		quiet, busy float64
		faster      bool
	}{{67200, 16300, true}, {5900, 5096000, false}, {5900, 5800, false}} {
		run := &result.Run{Schema: 1, ID: "busy", Suite: "quick", Arms: []result.Arm{arm("0", tc.quiet), arm("1", tc.busy)}}
		text := strings.Join(VerdictLines(run, true, 200), "\n")
		says := strings.Contains(text, "faster with a busy thread") && strings.Contains(text, "keeps the CPU awake (no idle wake-up); not a GIL cost")
		if says != tc.faster {
			t.Errorf("p50 %v → %v: says faster %v, want %v:\n%s", tc.quiet, tc.busy, says, tc.faster, text)
		}
	}
}

// A run that recorded CPU time per op prices handoffs from it, not from
// wall time: a cross-CPU round trip mostly waits.
func TestVerdictBudgetFromCPUTime(t *testing.T) {
	cpu := 20000.0
	run := &result.Run{Schema: 1, ID: "r", Suite: "quick", Arms: []result.Arm{{
		Name: "pingpong/thread/futex/cross-cpu", Experiment: "pingpong", Status: result.StatusOK,
		Unit: "ns/op", Median: 200000, Min: 190000, Max: 210000, Placement: "cross-cpu", CPUNsPerOp: &cpu,
	}}}
	text := strings.Join(VerdictLines(run, true, 120), "\n")
	if !strings.Contains(text, "threads across CPUs 20% (20 µs on CPU each)") {
		t.Errorf("budget line not from CPU time:\n%s", text)
	}
}

// The count of checks that did not hold says what it counts and agrees
// with the lines listed: it counts checks by name, one per line (a check
// that failed on several arms is one line that says on how many), and,
// where a check was evaluated more than once, the evaluations too; a list
// cut to fit the screen says how many checks are left.
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
			"checks that did not hold on this machine: 2 of 3 (3 of 4 evaluations)", 2},
		{[]result.Check{chk("same", false, "arm 1"), chk("same", false, "arm 2")},
			"checks that did not hold on this machine: 1 of 1 (2 of 2 evaluations)", 1},
		{[]result.Check{chk("same", false, "arm 1"), chk("same", true, "arm 2"), chk("other", true, "")},
			"checks that did not hold on this machine: 1 of 2 (1 of 3 evaluations)", 1},
	} {
		run := &result.Run{Schema: 1, ID: "r", Experiments: []result.Experiment{{Name: "e", Checks: tc.checks}}}
		head, bad := verdictChecks(run)
		if head != tc.head {
			t.Errorf("head %q, want %q", head, tc.head)
		}
		if len(bad) != tc.lines {
			t.Errorf("%d lines listed, want %d: %q", len(bad), tc.lines, bad)
		}
		checkCountAgrees(t, append([]string{head}, bad...))
	}
	// Real runs, whose lists are grouped, wrapped and cut to fit the screen.
	for _, name := range []string{"quick", "quick2"} {
		lines := VerdictLines(loadRunFile(t, name+".json"), true, 80)
		found := false
		for i, l := range lines {
			if strings.HasPrefix(l, "checks that did not hold") {
				found = true
				end := i + 1
				for end < len(lines) && strings.HasPrefix(lines[end], "  ") {
					end++
				}
				checkCountAgrees(t, lines[i:end])
			}
		}
		if !found {
			t.Errorf("%s: no line of checks that did not hold", name)
		}
	}
}

// checkCountAgrees: the head's count of failed checks is the number of
// check lines under it ("… N more" is N; a line indented further
// continues the one above), and when every line is there, its count of
// failed evaluations, if it gives one, is the sum of their "(on k arms)".
func checkCountAgrees(t *testing.T, lines []string) {
	t.Helper()
	var failed, evals, of int
	head := strings.TrimPrefix(lines[0], "checks that did not hold on this machine: ")
	fmt.Sscanf(head, "%d of %d (%d of", &failed, &of, &evals)
	checks, sum, cut := 0, 0, false
	on := regexp.MustCompile(`\(on (\d+) arms\) — `)
	text := strings.Join(lines[1:], "\n")
	for _, l := range strings.Split(strings.ReplaceAll(text, "\n   ", " "), "\n") {
		if l == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "  … "); ok {
			k := 0
			fmt.Sscan(rest, &k)
			checks += k
			cut = true
			continue
		}
		k := 1
		if m := on.FindStringSubmatch(l); m != nil {
			fmt.Sscan(m[1], &k)
		}
		checks++
		sum += k
	}
	if checks != failed {
		t.Errorf("the lines stand for %d checks, the head says %d:\n%s", checks, failed, strings.Join(lines, "\n"))
	}
	if evals > 0 && !cut && sum != evals {
		t.Errorf("the lines stand for %d evaluations, the head says %d:\n%s", sum, evals, strings.Join(lines, "\n"))
	}
}

// The detail tables of a real busy quick run say each noise reason once,
// explain a median far above its sampled p50 in words, and print no
// figure in scientific notation.
func TestTableSaysThingsOnce(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, loadQuick(t)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "load average 3.7 on 2 CPUs when the run started"); n != 1 {
		t.Errorf("the run-wide load note appears %d times, want once", n)
	}
	if !strings.Contains(out, "slow tail: median more than 1.5× the sampled p50") {
		t.Error("no explanation of a median far above its sampled p50")
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "e-0") || strings.Contains(l, "e+0") {
			t.Errorf("not a human scale: %q", l)
		}
		if strings.ContainsAny(l, "*°†") {
			t.Errorf("a symbol explained only in a footer: %q", l)
		}
	}
}

// Under --python all a CPython arm's name carries its interpreter; the
// handoff table finds it by the plain name and says whose figures it
// shows: in one line under the table when they are one interpreter's,
// beside each figure when they are several interpreters'.
func TestVerdictNamesTheInterpreter(t *testing.T) {
	arm := func(name string, med float64, place string) result.Arm {
		return result.Arm{Name: name, Experiment: "pingpong", Status: result.StatusOK,
			Unit: "ns/op", Median: med, Min: med - 1000, Max: med + 1000, Placement: place}
	}
	one := &result.Run{Schema: 1, ID: "r", Suite: "quick", Arms: []result.Arm{
		arm("pingpong/pythread/simplequeue/same-cpu/py=3.11", 21000, "same-cpu")}}
	text := strings.Join(VerdictLines(one, true, 120), "\n")
	if !strings.Contains(text, "21 µs (20–22) ") || strings.Contains(text, "(20–22) (py=") || !strings.Contains(text, "  CPython rows: py=3.11 ") {
		t.Errorf("one interpreter's figures are not named under the table:\n%s", text)
	}
	two := &result.Run{Schema: 1, ID: "r", Suite: "quick", Arms: []result.Arm{
		arm("pingpong/pythread/simplequeue/same-cpu/py=3.11", 21000, "same-cpu"),
		arm("pingpong/pytask/asyncio-queue/same-cpu/py=3.13", 9000, "same-cpu")}}
	text = strings.Join(VerdictLines(two, true, 120), "\n")
	if !strings.Contains(text, "21 µs (20–22) (py=3.11)") || !strings.Contains(text, "9 µs (8–10) (py=3.13)") || strings.Contains(text, "CPython rows:") {
		t.Errorf("two interpreters' figures are not named beside each:\n%s", text)
	}
}

// TestVerdictUnstoredRun: a run the history does not hold (--no-store, an
// interrupted run) must not point at `ctxlab show ID`, which would fail.
func TestVerdictUnstoredRun(t *testing.T) {
	for _, suite := range []string{"quick", "custom"} {
		run := &result.Run{Schema: 1, ID: "20261202T000000-abcdef", Suite: suite}
		stored := strings.Join(VerdictLines(run, true, 80), "\n")
		unstored := strings.Join(VerdictLines(run, false, 80), "\n")
		if !strings.Contains(stored, "ctxlab show "+run.ID) {
			t.Errorf("%s: a stored run's verdict does not point at ctxlab show %s", suite, run.ID)
		}
		if strings.Contains(unstored, "ctxlab show") || !strings.Contains(unstored, "not in the history") {
			t.Errorf("%s: an unstored run's verdict:\n%s", suite, unstored)
		}
	}
}

// A full screen gives way with a second interpreter's figures
// (exp.VerdictSection.More) after its readings and checks, and says how
// many rows went and where they are; the figures and the closing lines
// stay (the screen of a --python all run was cut at 38 rows, its noise
// and detail lines with it).
func TestVerdictMoreGivesWay(t *testing.T) {
	s := &screen{width: 80, more: "ctxlab show X"}
	for i := 0; i < 30; i++ {
		s.add(keepLine, fmt.Sprintf("figure %d", i))
	}
	for i := 0; i < 5; i++ {
		s.add(moreLine, fmt.Sprintf("other interpreter %d", i))
	}
	s.add(noteLine, "a reading")
	s.add(keepLine, "noise: …", "detail: …")
	got := s.fit(35)
	text := strings.Join(got, "\n")
	if len(got) > 35 || !strings.Contains(text, "figure 29") || !strings.HasSuffix(text, "detail: …") {
		t.Fatalf("%d rows:\n%s", len(got), text)
	}
	if strings.Contains(text, "a reading") {
		t.Errorf("the reading stayed while other interpreters' figures gave way:\n%s", text)
	}
	kept := strings.Count(text, "other interpreter ")
	want := fmt.Sprintf("  … %d lines more of other interpreters' figures: ctxlab show X", 5-kept)
	if kept == 5 || !strings.Contains(text, want) {
		t.Errorf("%d of 5 kept; want the line %q:\n%s", kept, want, text)
	}
	if got := s.fit(100); len(got) != 38 || strings.Contains(strings.Join(got, "\n"), "lines more") {
		t.Errorf("a screen with room: %d rows, want all 38, no marker", len(got))
	}
}
