// Package price turns what a process was seen doing — context switches per
// second, its resident set — into what that costs on this host, with the
// cost per switch ctxlab measured here: the direct cost from a pingpong
// round trip, the indirect cost (cold caches) from cachecost's per-switch
// curve. It reads only the result model, so any stored run can price.
package price

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// CPUPerOp is the on-CPU time per op of all the arm's participants, and
// where it comes from: the runner's per-op CPU time when the run recorded
// it, else the perf task-clock counter per op, else the arm's own CPU
// figure (cpu-ns/yield). ok is false when the run has none of these: wall
// time is never passed off as CPU time.
func CPUPerOp(a result.Arm) (ns float64, source string, ok bool) {
	if a.CPUNsPerOp != nil && *a.CPUNsPerOp > 0 {
		return *a.CPUNsPerOp, "CPU time of all participants", true
	}
	for _, c := range a.Counters {
		if c.Name == "task-clock" && c.Unsupported == "" && c.PerOp != nil && *c.PerOp > 0 {
			return *c.PerOp, "perf task-clock of the measured threads", true
		}
	}
	if v, ok := a.Metrics["cpu-ns/yield"]; ok && v > 0 && !math.IsInf(v, 0) {
		return v, "getrusage CPU time per yield", true
	}
	return 0, "", false
}

// Cost is this host's measured direct cost of one context switch.
type Cost struct {
	PerSwitchNs float64
	Arm         string // the arm it comes from
	RunID       string
	How         string // how the figure was derived from the arm
}

// Placements a watched process can have, for choosing the arm to price with.
const (
	OneCPU   = "same-cpu" // the process may run on one CPU only
	Unpinned = "unpinned"
)

// DirectCost is the cost per switch from run's thread round trips, for the
// watched process's placement: CPU time per round trip ÷ switches per round
// trip where the run recorded CPU time; otherwise, only for arms on one CPU
// (where wall time is CPU time), the round trip ÷ its switches. A raw futex
// handoff is preferred (the kernel floor), then a pipe. ok is false when no
// arm of run can give the figure.
func DirectCost(run *result.Run, placement string) (Cost, bool) {
	places := []string{placement}
	if placement != OneCPU {
		places = append(places, OneCPU)
	}
	for _, pl := range places {
		for _, mech := range []string{"futex", "pipe"} {
			a := run.Find("pingpong/thread/" + mech + "/" + pl)
			if a == nil || a.Status != result.StatusOK || a.Median <= 0 || a.Switches == nil || a.Switches.Total() < 0.5 {
				continue
			}
			sw := a.Switches.Total()
			if c, src, ok := CPUPerOp(*a); ok {
				return Cost{PerSwitchNs: c / sw, Arm: a.Name, RunID: run.ID,
					How: fmt.Sprintf("%s per round trip %s ÷ %.2f switches", src, result.FormatNs(c), sw)}, true
			}
			if a.Placement == OneCPU {
				return Cost{PerSwitchNs: a.Median / sw, Arm: a.Name, RunID: run.ID,
					How: fmt.Sprintf("round trip on one CPU %s (wall = CPU there) ÷ %.2f switches", result.FormatNs(a.Median), sw)}, true
			}
		}
	}
	return Cost{}, false
}

// point is the indirect cost per switch at one working-set size.
type point struct {
	bytes int64
	label string
	ns    float64
}

// indirectCurve is cachecost's per-switch indirect cost at each W > 0 the
// run measured, by W: what a round trip over two W-byte sets costs beyond
// the same traversals without a switch (solo) and beyond a round trip
// without data (W=0), per switch. It takes CPU time per op where all three
// arms recorded it — (RT(W) − solo(W) − RT(0)) ÷ the switches RT(W) made
// beyond solo(W)'s, which counts preemptions by other processes too (each
// one also leaves the caches cold); from wall time it keeps only points
// whose round trip switched about twice, ÷ 2 (a preempted op's wall time
// holds other processes' turns).
func indirectCurve(run *result.Run) []point {
	rt, solo := map[string]result.Arm{}, map[string]result.Arm{}
	var zero *result.Arm
	for i, a := range run.Arms {
		if a.Experiment != "cachecost" || a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		switch a.Params["mode"] {
		case "per-switch":
			if a.Params["W_bytes"] == "0" {
				zero = &run.Arms[i]
			} else {
				rt[a.Params["W_bytes"]] = a
			}
		case "per-switch-solo":
			solo[a.Params["W_bytes"]] = a
		}
	}
	if zero == nil {
		return nil
	}
	z, zok := cpuOnly(*zero)
	var out []point
	for wb, r := range rt {
		s, ok := solo[wb]
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(wb, 10, 64)
		rc, rok := cpuOnly(r)
		sc, sok := cpuOnly(s)
		switch {
		case zok && rok && sok && r.Switches != nil:
			extra := r.Switches.Total()
			if s.Switches != nil {
				extra -= s.Switches.Total()
			}
			if extra >= 1 {
				out = append(out, point{n, r.Params["W"], (rc - sc - z) / extra})
			}
		case r.Switches != nil && r.Switches.Total() >= 1.5 && r.Switches.Total() <= 2.5 && (s.Switches == nil || s.Switches.Total() < 0.5):
			// Wall time only from round trips that switched about twice
			// (not preempted), divided by the switches they made.
			out = append(out, point{n, r.Params["W"], (r.Median - s.Median - zero.Median) / r.Switches.Total()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bytes < out[j].bytes })
	return out
}

// cpuOnly is the arm's CPU time per op when the run recorded it.
func cpuOnly(a result.Arm) (float64, bool) {
	c, _, ok := CPUPerOp(a)
	return c, ok
}

// Indirect is the range of the indirect cost per switch for a process of
// a given resident set: from the smallest working set measured (a switch
// that touches little) to the working set at the RSS (a switch after which
// the whole resident set is touched again). The RSS bounds the working set
// from above; what a process really touches between switches lies inside.
type Indirect struct {
	LoNs, HiNs float64
	From, To   string // the working sets the two ends come from
	Beyond     bool   // the RSS is larger than any working set measured
}

// IndirectAt is the Indirect range for a resident set of rssBytes (never
// below 0: a negative point is noise around no cost).
func IndirectAt(run *result.Run, rssBytes int64) (Indirect, bool) {
	c := indirectCurve(run)
	if len(c) == 0 || rssBytes <= 0 {
		return Indirect{}, false
	}
	hi := c[len(c)-1]
	for _, p := range c {
		if p.bytes >= rssBytes {
			hi = p
			break
		}
	}
	lo := c[0]
	a, b := math.Max(0, lo.ns), math.Max(0, hi.ns)
	if a > b {
		a = b
	}
	return Indirect{LoNs: a, HiNs: b, From: lo.label, To: hi.label, Beyond: rssBytes > c[len(c)-1].bytes}, true
}

// Curve is the indirect cost per switch at each working set measured,
// "16KiB 3.3 µs · 256KiB 27 µs", or "" when run has no per-switch arms.
func Curve(run *result.Run) string {
	var parts []string
	for _, p := range indirectCurve(run) {
		parts = append(parts, p.label+" "+result.FormatNs(p.ns))
	}
	return strings.Join(parts, " · ")
}

// Seen is what a watch or diagnose saw of a process.
type Seen struct {
	Seconds    float64
	Vol, Invol uint64
	RSSBytes   int64 // 0 when unknown
}

// Rate is switches per second.
func (s Seen) Rate() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.Vol+s.Invol) / s.Seconds
}

// Price is what the switches seen cost: the share of one core that goes to
// direct switching, and the indirect range when the run has cachecost's
// per-switch curve.
type Price struct {
	Rate      float64 `json:"switches_per_s"`
	PerSwitch float64 `json:"cost_per_switch_ns"`
	Share     float64 `json:"direct_core_share"`
	Arm       string  `json:"cost_arm"`
	RunID     string  `json:"cost_run"`
	How       string  `json:"cost_how"`
	// IndirectLo/Hi are the indirect share of a core, when known.
	IndirectLo *float64 `json:"indirect_core_share_lo,omitempty"`
	IndirectHi *float64 `json:"indirect_core_share_hi,omitempty"`
	Lines      []string `json:"lines"`
}

// Of prices what was seen with cost, and the indirect cost from run: a run
// with cachecost's per-switch arms, or nil when there is none.
func Of(s Seen, cost Cost, run *result.Run) Price {
	rate := s.Rate()
	p := Price{Rate: rate, PerSwitch: cost.PerSwitchNs, Share: rate * cost.PerSwitchNs / 1e9, Arm: cost.Arm, RunID: cost.RunID, How: cost.How}
	p.Lines = append(p.Lines, fmt.Sprintf("price: %s switches/s × %s per switch ≈ %s of a core goes to direct switching; %s",
		fmtRate(rate), result.FormatNs(cost.PerSwitchNs), pct(p.Share), advice(s)))
	p.Lines = append(p.Lines, fmt.Sprintf("  cost per switch measured here: %s in run %s (%s)", cost.Arm, cost.RunID, cost.How))
	if s.RSSBytes <= 0 {
		p.Lines = append(p.Lines, "  indirect (cold caches): not priced, the process's resident set is unknown")
		return p
	}
	if run == nil {
		p.Lines = append(p.Lines, fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — no run has cachecost's per-switch arms (ctxlab run cachecost)", result.FormatBytes(float64(s.RSSBytes))))
		return p
	}
	in, ok := IndirectAt(run, s.RSSBytes)
	if !ok {
		p.Lines = append(p.Lines, fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — run %s has no cachecost per-switch arms (ctxlab run cachecost)", result.FormatBytes(float64(s.RSSBytes)), run.ID))
		return p
	}
	lo, hi := rate*in.LoNs/1e9, rate*in.HiNs/1e9
	p.IndirectLo, p.IndirectHi = &lo, &hi
	upper := fmt.Sprintf("%s if each switch touches the whole RSS again (cachecost W=%s", result.FormatNs(in.HiNs), in.To)
	if in.Beyond {
		upper += ", the largest measured: more for the full RSS"
	}
	share := pct(lo) + "–" + pct(hi) + " of a core more"
	if hi > 1 {
		// Over a whole core: the process cannot touch all of its RSS
		// between switches at this rate, so that end is no figure.
		share = fmt.Sprintf("%s of a core more, or more (the upper end would exceed a whole core: the process cannot touch all of its RSS between switches at this rate)", pct(lo))
		p.IndirectHi = nil
	}
	p.Lines = append(p.Lines, fmt.Sprintf("  indirect (cold caches) at RSS %s: %s per switch if a switch touches little (W=%s) to %s) ≈ %s",
		result.FormatBytes(float64(s.RSSBytes)), result.FormatNs(in.LoNs), in.From, upper, share))
	return p
}

// advice reads the switch mix: voluntary switches are handoffs the code
// asked for (batch them); involuntary ones are preemptions (too many
// runnable threads, or a quota).
func advice(s Seen) string {
	total := s.Vol + s.Invol
	if total == 0 {
		return "no switches seen"
	}
	v := float64(s.Vol) / float64(total)
	switch {
	case v >= 2.0/3:
		return fmt.Sprintf("%.0f%% voluntary → batch the handoffs (fewer, larger messages; fewer wake-ups)", 100*v)
	case v <= 1.0/3:
		return fmt.Sprintf("%.0f%% involuntary → fewer runnable threads than CPUs, or a CPU quota: preemption, not the code's handoffs", 100*(1-v))
	}
	return fmt.Sprintf("%.0f%% voluntary, %.0f%% involuntary → both handoffs and preemption", 100*v, 100*(1-v))
}

func pct(f float64) string {
	switch {
	case f >= 0.1:
		return fmt.Sprintf("%.0f%%", 100*f)
	case f >= 0.01:
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	return fmt.Sprintf("%.2g%%", 100*f)
}

// Percent renders a fraction as a percentage with sensible digits: 18%, 1.5%, 0.044%.
func Percent(f float64) string { return pct(f) }

func fmtRate(r float64) string { return result.FormatCount(math.Round(r)) }
