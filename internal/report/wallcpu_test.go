package report

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/ctxlab/ctxlab/internal/result"
)

// diagnoseRun is a stored diagnose --vary run of two values, three runs
// each, with each run's CPU time and switches beside its wall time.
func diagnoseRun() *result.Run {
	arm := func(t string, walls, cpus, sws []float64) result.Arm {
		return result.Arm{Name: "diagnose/T=" + t, Experiment: "diagnose", Substrate: "command", Params: map[string]string{"T": t},
			Op: "run of the command", Unit: "ns/run", Status: result.StatusOK, Ops: 1, RepMeans: walls,
			Median: walls[1], Min: walls[0], Max: walls[2],
			RepMetrics: map[string][]float64{"cpu-ns/op": cpus, "switches/op": sws}}
	}
	return &result.Run{Schema: 1, ID: "20261202T000000-abcdef", Suite: result.SuiteDiagnose, Env: result.Env{Hostname: "h", GOMAXPROCS: 2},
		Arms: []result.Arm{
			arm("2", []float64{1.9e9, 2e9, 2.1e9}, []float64{3.7e9, 3.8e9, 3.9e9}, []float64{400, 410, 420}),
			arm("32", []float64{2.3e9, 2.4e9, 2.5e9}, []float64{4.2e9, 4.3e9, 4.4e9}, []float64{1700, 1800, 1900}),
		},
		Experiments: []result.Experiment{{Name: "diagnose", Op: "run of the command", Findings: []string{"decision: T=2 has the best wall time"}}}}
}

// bench writes each run's CPU time and switches on its line, a unit
// each, so benchstat -col /T sets the values side by side for all three.
func TestBenchRepMetrics(t *testing.T) {
	var b bytes.Buffer
	if err := Bench(&b, diagnoseRun()); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(&b, "diagnose.txt")
	n := 0
	for rd.Scan() {
		r, ok := rd.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		n++
		var units []string
		for _, v := range r.Values {
			units = append(units, v.Unit)
		}
		if got := strings.Join(units, " "); got != "sec/op cpu-sec/op switches/op" {
			t.Errorf("%s: units %q", r.Name.Full(), got)
		}
		if !strings.HasPrefix(string(r.Name.Full()), "Diagnose/T=") {
			t.Errorf("name %q", r.Name.Full())
		}
	}
	if n != 6 {
		t.Errorf("%d result lines, want one per run (6)", n)
	}
}

// The report draws wall and CPU time per value, in place of the plain
// bars chart, and reads the last value against the first; show's table
// leads with the values, not a suite's screen.
func TestDiagnoseCharts(t *testing.T) {
	run := diagnoseRun()
	cs := Charts(run)
	if len(cs) == 0 || cs[0].Name() != "diagnose" || !strings.Contains(cs[0].Title, "wall and CPU time per run of the command") {
		t.Fatalf("charts: %v", cs)
	}
	if want := "T=32 against T=2: wall 2 s → 2.4 s (1.2× longer), CPU 3.8 s → 4.3 s (1.1× more)."; cs[0].Reading != want {
		t.Errorf("reading %q, want %q", cs[0].Reading, want)
	}
	if _, err := cs[0].Render("svg"); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range cs {
		names[c.Name()] = true
	}
	if !names["diagnose:param"] {
		t.Errorf("no wall time against T: %v", names)
	}
	lines := strings.Join(VerdictLines(run, true, 80), "\n")
	if strings.Contains(lines, "handoff, one round trip") || !strings.Contains(lines, "T=32") || !strings.Contains(lines, "decision: T=2") {
		t.Errorf("verdict of a diagnose run:\n%s", lines)
	}
	var html bytes.Buffer
	if err := HTML(&html, run); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "wall and CPU time") {
		t.Error("the HTML report has no wall and CPU chart")
	}
}
