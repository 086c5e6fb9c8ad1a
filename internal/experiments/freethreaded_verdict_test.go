package experiments

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/testload"
)

// The verdict's build comparison on the real builds (internal/testpy;
// skipped, saying why, where they are not installed; in CI a missing
// build fails): the thread round trip and the 2-thread ring run on both
// builds of one version under --python all, the runner measures each on
// the two builds side by side (the pinned round trip in bursts, each build's driver open; the unpinned ring alternating by repetition, set up afresh each turn), and the
// verdict's handoff block has one comparison line for each, worded with
// the pair's interval. Structure and counts only, never the figures.
func TestBuildVerdictOnRealBuilds(t *testing.T) {
	ft, gil, p := bothBuilds(t)
	sel, err := exp.Select([]string{"python"}, p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		ppPlaced("pythread", "simplequeue", "same-cpu").String(): "thread round trip on one CPU",
		ringPyKey("pythread", "simplequeue", 2).String():         "thread ring n=2",
	}
	var keep []exp.Selection
	for _, s := range sel {
		var arms []exp.Arm
		for _, a := range s.Arms {
			if _, ok := want[exp.PlanName(a.Name)]; ok {
				arms = append(arms, a)
			}
		}
		if len(arms) > 0 {
			keep = append(keep, exp.Selection{Spec: s.Spec, Arms: arms})
		}
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	cfg.Reps, cfg.BenchTime, cfg.WarmUp = 2, 20*time.Millisecond, 10*time.Millisecond
	w := testload.Start()
	arms, exps, _ := runner.Run(context.Background(), cfg, keep)
	if len(arms) != 4 {
		t.Fatalf("%d arms ran, want each of 2 on 2 builds", len(arms))
	}
	for _, a := range arms {
		if a.Status != result.StatusOK {
			// the free-threaded build's lock spins by yielding the CPU:
			// under CPU hogs its round trip can run past the arm's limit
			w.SkipIfStarved(t, a.Name)
			t.Fatalf("%s: %s %s", a.Name, a.Status, a.Reason)
		}
	}
	tags := "free-threaded " + ft.Version + "t vs GIL " + gil.Version + ": "
	var pairs int
	for _, e := range exps {
		for _, c := range e.Comparisons {
			if !strings.Contains(c.Label, " on free-threaded "+ft.Version+"t vs GIL "+gil.Version) {
				continue
			}
			pairs++
			// pinned arms take turns in bursts, each build's driver open;
			// unpinned ones are set up afresh for each turn
			paired := result.PairedBursts
			for _, a := range arms {
				if a.Name == c.B && a.Placement == "unpinned" {
					paired = result.PairedReps
				}
			}
			if c.Paired != paired || c.Rounds < runner.DefaultPairPolicy.Rounds || c.A != exp.MustParseArmKey(c.B).Plan().WithInterpreter(ft.Version+"t").String() || c.CPU == nil || c.Basis != result.BasisCPU {
				t.Errorf("%+v: want the free-threaded arm over the GIL one, paired by %s, every round, by CPU time", c, paired)
			}
		}
	}
	if pairs != len(want) {
		t.Errorf("%d build comparisons measured side by side, want %d", pairs, len(want))
	}
	spec, _ := exp.Lookup("pingpong")
	vr, ok := exp.Hook[exp.Verdicter](spec)
	if !ok {
		t.Fatal("pingpong writes no verdict")
	}
	var lines []string
	for _, s := range vr.Verdict(exp.NewVerdictRun(&result.Run{Arms: arms, Experiments: exps})) {
		for _, l := range s.More { // the builds' lines give way on a full screen
			if strings.Contains(l, "free-threaded ") && s.Block == exp.BlockHandoff {
				lines = append(lines, l)
			}
		}
	}
	t.Log(strings.Join(lines, "\n"))
	if len(lines) != len(want) {
		t.Fatalf("handoff block's build lines %q, want %d", lines, len(want))
	}
	for _, what := range []string{"thread round trip on one CPU", "thread ring n=2"} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, "  "+tags+what+" ") && (strings.Contains(l, " rounds alternating by repetition") || strings.Contains(l, " paired bursts")) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q line measured side by side in %q", tags+what, lines)
		}
	}
}
