package price_test

import (
	"math"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// RefillAt reads the curve (1 µs at 1 MiB, 3 µs at 8 MiB): interpolated
// between points, scaled from no cost below the first, scaled by size
// beyond the last, each naming the arms and the run.
func TestRefillAt(t *testing.T) {
	run := curveRun()
	for _, c := range []struct {
		bytes  int64
		ns     float64
		beyond bool
		says   string
	}{
		{512 << 10, 500, false, "cachecost/per-switch/1MiB (1 µs) in run c, scaled down from it (below the smallest working set measured)"},
		{1 << 20, 1000, false, "cachecost/per-switch/1MiB (1 µs) in run c"},
		{(1 << 20) + 7*(1<<20)/2, 2000, false, "between cachecost/per-switch/1MiB (1 µs) and cachecost/per-switch/8MiB (3 µs) in run c, interpolated"},
		{16 << 20, 6000, true, "cachecost/per-switch/8MiB (3 µs) in run c, scaled by size: beyond the largest working set measured, an extrapolation"},
	} {
		rf, ok := price.RefillAt(run, c.bytes)
		if !ok || math.Abs(rf.Ns-c.ns) > 1e-6 || rf.Beyond != c.beyond || rf.Source() != c.says {
			t.Errorf("%d bytes: %.1f ns beyond=%v %q, want %.1f %v %q", c.bytes, rf.Ns, rf.Beyond, rf.Source(), c.ns, c.beyond, c.says)
		}
	}
	if _, ok := price.RefillAt(&result.Run{}, 1<<20); ok {
		t.Error("a run without a curve gave a refill cost")
	}
	if _, ok := price.RefillAt(run, 0); ok {
		t.Error("a working set of 0 bytes gave a refill cost")
	}
}

// With a working set the price reads "direct ≈ X, indirect ≈ Y", the
// indirect priced at that point of the curve, never more than the CPU left.
func TestOfWithWorkingSet(t *testing.T) {
	s := price.Seen{Seconds: 2, Vol: 90000, Invol: 10000, RSSBytes: 64 << 20, WorkingSetBytes: 1 << 20, WorkingSetHow: "one busy thread"}
	p := price.Of(s, price.Cost{PerSwitchNs: 3000, Arm: "a", RunID: "r", RoundTripNs: 1, Switches: 1}, curveRun())
	text := strings.Join(p.Lines, "\n")
	for _, want := range []string{
		"indirect (cold caches) ≈ 5.0% of a core: 50k switches/s × 1 µs per switch at your working set of 1 MiB per thread (one busy thread)",
		"direct ≈ 15%, indirect ≈ 5.0% of a core (estimated from your working set and this host's refill curve",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("price lacks %q:\n%s", want, text)
		}
	}
	if p.Indirect == nil || math.Abs(*p.Indirect-0.05) > 1e-9 || p.IndirectPerSwitch != 1000 {
		t.Errorf("indirect %v per switch %v, want 0.05 and 1000", p.Indirect, p.IndirectPerSwitch)
	}
	s.CPUNs, s.HasCPU = uint64(0.3*2e9), true // 30% of a core: 15% direct leaves 15%; 16 MiB would be 6 µs × 50k = 30%
	s.WorkingSetBytes = 16 << 20
	p = price.Of(s, price.Cost{PerSwitchNs: 3000, Arm: "a", RunID: "r", RoundTripNs: 1, Switches: 1}, curveRun())
	if p.Indirect == nil || math.Abs(*p.Indirect-0.15) > 1e-9 || !strings.Contains(strings.Join(p.Lines, "\n"), "indirect (cold caches): at most 15% of a core, all the CPU this process used beside the direct share") {
		t.Errorf("indirect %v not bounded by the CPU left:\n%s", p.Indirect, strings.Join(p.Lines, "\n"))
	}
}

// A point below a smaller working set's reads as that one's figure (noise:
// refilling more cannot cost less), and one below 0 as 0.
func TestRefillNonDecreasing(t *testing.T) {
	run := curveRun()
	run.Arms[3].Median = 40000 // 8 MiB: (40-48-6)/2 = −7 µs
	rf, ok := price.RefillAt(run, 8<<20)
	if !ok || rf.Ns != 1000 {
		t.Errorf("8 MiB after a noisy point: %+v, want 1 µs (the 1 MiB figure)", rf)
	}
	run.Arms[1].Median = 10000 // 1 MiB: (10-8-6)/2 = −2 µs
	if rf, _ := price.RefillAt(run, 1<<20); rf.Ns != 0 {
		t.Errorf("1 MiB below 0: %+v, want 0", rf)
	}
}
