package cli

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// storeCostRun stores a run whose thread round trip on one CPU prices a
// switch at exactly 3 µs (6 µs per round trip, 2 switches) and returns the db.
func storeCostRun(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "h.db")
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	host, _ := os.Hostname() // only this host's runs price its switches
	run := &result.Run{Schema: result.SchemaVersion, ID: "20261201T000000-cost", Time: time.Now().UTC(), Suite: "custom",
		Env: result.Env{Hostname: host},
		Arms: []result.Arm{{Name: "pingpong/thread/futex/same-cpu", Experiment: "pingpong", Substrate: "thread", Mechanism: "futex",
			Op: "round trip", Unit: "ns/op", Placement: "same-cpu", Status: result.StatusOK, Ops: 1000, RepMeans: []float64{6000, 6000, 6000},
			Median: 6000, Min: 6000, Max: 6000, Switches: &result.Switches{Voluntary: 1.5, Involuntary: 0.5}}}}
	if err := s.Save(context.Background(), run, store.SourceRun); err != nil {
		t.Fatal(err)
	}
	return db
}

// A synthetic process with a known switch rate — one voluntary switch per
// 10 ms sleep, about 100/s — is priced as switches/s × the stored 3 µs per
// switch: the arithmetic a user would do by hand.
func TestWatchPricesAKnownSwitchRate(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH: no synthetic sleeper")
	}
	db := storeCostRun(t)
	// The sleeper says when it is in its loop, so interpreter start-up is not watched.
	cmd := exec.Command(py, "-c", "import sys, time\nprint('ready', flush=True)\nwhile True: time.sleep(0.01)")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var out, errb syncBuf
	code := Main([]string{"watch", fmt.Sprint(pid), "--interval", "250ms", "--count", "4", "--format", "json", "--db", db}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var pr map[string]any
	for _, r := range jsonLines(t, out.String()) {
		if r["kind"] == "price" {
			pr = r
		}
	}
	if pr == nil {
		t.Fatalf("no price record:\n%s\n%s", out.String(), errb.String())
	}
	rate := pr["switches_per_s"].(float64)
	// One voluntary switch per sleep; on a loaded machine a wake-up can also
	// be preempted once or twice (involuntary), so up to ~2.5× that.
	if rate < 40 || rate > 250 {
		t.Errorf("a 10 ms sleeper switches %v times per second, want about 100", rate)
	}
	if pr["cost_per_switch_ns"].(float64) != 3000 || pr["cost_arm"] != "pingpong/thread/futex/same-cpu" || pr["cost_run"] != "20261201T000000-cost" {
		t.Errorf("cost not from the stored run: %v", pr)
	}
	if share := pr["direct_core_share"].(float64); math.Abs(share-rate*3000/1e9) > 1e-12 {
		t.Errorf("share %v, want rate × cost = %v", share, rate*3000/1e9)
	}
	lines := fmt.Sprint(pr["lines"])
	if !strings.Contains(lines, "voluntary → batch the handoffs") || !strings.Contains(lines, "indirect (cold caches)") {
		t.Errorf("price lines: %s", lines)
	}
}

// A whole watch's price sees the CPU time its threads used (schedstat)
// and its children's switches apart; without schedstat on every thread it
// has no CPU time to bound the price with.
func TestSeenOfAWatch(t *testing.T) {
	sum := watch.Profile{Seconds: 2,
		Total:    watch.Thread{Threads: 2, Vol: 10, Invol: 4, CPUNs: 5e8, HasSchedstat: true},
		Children: watch.Children{Procs: 2, Total: watch.Thread{Vol: 300, Invol: 100}, Busiest: 4321}}
	s := seenOf(sum, 1<<20)
	if !s.HasCPU || s.CPUNs != 5e8 || s.Vol != 10 || s.Invol != 4 || s.ChildProcs != 2 || s.ChildVol+s.ChildInvol != 400 || s.BusiestChild != 4321 || s.RSSBytes != 1<<20 {
		t.Errorf("seen = %+v", s)
	}
	sum.Total.HasSchedstat = false
	if seenOf(sum, 0).HasCPU {
		t.Error("CPU time taken from threads without schedstat")
	}
}
