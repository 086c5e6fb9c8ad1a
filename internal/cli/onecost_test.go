package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/vary"
)

// oneCostRun is a stored run that tempts every way a switch was once
// priced: the futex round trip on one CPU (the rule's arm: 6 µs ÷ its
// 3 measured switches = 2 µs), a goroutine round trip to subtract from it
// (the old verdict's gap ÷ switches, 1.8 µs), an unpinned futex with CPU
// time (the old price for an unpinned process, 4 µs), and CPU time on the
// rule's arm itself (5.4 µs of CPU ÷ 3 = 1.8 µs, the old price's first
// choice).
func oneCostRun() *result.Run {
	f := func(x float64) *float64 { return &x }
	arm := func(name, sub, mech, placement string, median, cpu, sw float64) result.Arm {
		return result.Arm{Name: name, Experiment: "pingpong", Substrate: sub, Mechanism: mech, Op: "round trip", Unit: "ns/op",
			Placement: placement, GOMAXPROCS: 1, Status: result.StatusOK, Ops: 1000, RepMeans: []float64{median, median, median},
			Median: median, Min: median, Max: median, CPUNsPerOp: f(cpu), Switches: &result.Switches{Voluntary: sw * 2 / 3, Involuntary: sw / 3}}
	}
	host, _ := os.Hostname() // only this host's runs price its switches
	return &result.Run{Schema: result.SchemaVersion, ID: "20261202T000000-onecost", Time: time.Now().UTC(), Suite: "quick",
		Env: result.Env{Hostname: host, LogicalCPUs: 2},
		Arms: []result.Arm{
			arm("pingpong/goroutine/chan/gomaxprocs=1", "goroutine", "chan", "unpinned", 600, 600, 0),
			arm("pingpong/thread/futex/same-cpu", "thread", "futex", "same-cpu", 6000, 5400, 3),
			arm("pingpong/thread/futex/unpinned", "thread", "futex", "unpinned", 20000, 8000, 2),
		}}
}

// oneCostWant is the line every command must print for oneCostRun,
// written out by hand rather than by price.Cost, so that a second
// derivation anywhere shows.
const oneCostWant = "switch cost: 2 µs (pingpong/thread/futex/same-cpu in run 20261202T000000-onecost: median round trip 6 µs ÷ 3.00 switches)"

// unwrap undoes a terminal's wrapping (at spaces, continuation lines
// indented) so a line can be found whole.
func unwrap(s string) string { return regexp.MustCompile(`\s+`).ReplaceAllString(s, " ") }

// One cost per switch: the same stored run gives the same figure, with
// the same words for where it came from, in the verdict (ctxlab show, and
// a selection's), budget, watch's price, diagnose's price and diagnose --vary's split —
// and no other figure per switch.
func TestOneCostPerSwitch(t *testing.T) {
	isolate(t)
	db := filepath.Join(t.TempDir(), "h.db")
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	run := oneCostRun()
	if err := s.Save(context.Background(), run, store.SourceRun); err != nil {
		t.Fatal(err)
	}
	s.Close()
	outs := map[string]string{}
	_, outs["verdict (ctxlab show)"], _ = ctxlab(t, "show", run.ID, "--db", db)
	sel := *run
	sel.Suite = "custom" // `ctxlab run pingpong`: a selection's verdict
	outs["a selection's verdict"] = strings.Join(report.VerdictLines(&sel, true, 80), "\n")
	_, outs["budget"], _ = ctxlab(t, "budget", "--rate", "10000/s", "--db", db)
	seen := price.Seen{Seconds: 2, Vol: 2000, Invol: 1000}
	watchO := &WatchOptions{DB: db, Price: true, noCalibrate: true, Stderr: io.Discard}
	if p := priceOf(context.Background(), watchO, seen); p != nil {
		outs["watch's price"] = strings.Join(p.Lines, "\n")
	}
	diagO := &DiagnoseOptions{WatchOptions: *watchO}
	if p := priceOf(context.Background(), &diagO.WatchOptions, seen); p != nil {
		outs["diagnose's price"] = strings.Join(p.Lines, "\n")
	}
	if c := varyCost(context.Background(), diagO, true); c.OK {
		sp := vary.Split{Base: "T=1", Other: "T=4", Per: "run", CPUA: 1e9, CPUB: 2e9, ExtraCPU: 1e9, ExtraSwitches: 1e5,
			Priced: true, PerSwitchNs: c.PerSwitchNs, DirectNs: 1e5 * c.PerSwitchNs, RestNs: 1e9 - 1e5*c.PerSwitchNs, DirectShare: 0.2, Cost: c}
		outs["diagnose --vary's split"] = strings.Join(sp.Lines(), "\n")
	}
	perSwitch := regexp.MustCompile(`([0-9.]+ [nµm]?s) (per switch|each)`)
	for _, what := range []string{"verdict (ctxlab show)", "a selection's verdict", "budget", "watch's price", "diagnose's price", "diagnose --vary's split"} {
		got, ok := outs[what]
		if !ok {
			t.Errorf("%s: no output", what)
			continue
		}
		flat := unwrap(got)
		if !strings.Contains(flat, oneCostWant) {
			t.Errorf("%s lacks %q:\n%s", what, oneCostWant, got)
		}
		for _, m := range perSwitch.FindAllStringSubmatch(flat, -1) {
			if m[1] != "2 µs" {
				t.Errorf("%s shows %q, a second figure per switch:\n%s", what, m[0], got)
			}
		}
	}
}
