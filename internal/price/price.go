// Package price turns what a process was seen doing — context switches per
// second, its resident set — into what that costs on this host, with the
// cost per switch ctxlab measured here: the direct cost from the round
// trips the experiments declare for it (exp.Spec.SwitchCost), the
// indirect cost (cold caches) from the per-switch curve they derive
// (exp.Spec.IndirectCost). It reads only the result model and those
// declarations, so any stored run can price.
package price

import (
	"fmt"
	"math"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// CPUPerOp is the on-CPU time per op of all the arm's participants, and
// where it comes from: the runner's per-op CPU time when the run recorded
// it, else the perf task-clock counter per op, else a figure the arm's
// experiment declares as CPU time per op (exp.Metric.CPUPerOp). ok is
// false when the run has none of these: wall time is never passed off as
// CPU time.
func CPUPerOp(a result.Arm) (ns float64, source string, ok bool) {
	if a.CPUNsPerOp != nil && *a.CPUNsPerOp > 0 {
		return *a.CPUNsPerOp, "CPU time of all participants", true
	}
	for _, c := range a.Counters {
		if c.Name == "task-clock" && c.Unsupported == "" && c.PerOp != nil && *c.PerOp > 0 {
			return *c.PerOp, "perf task-clock of the measured threads", true
		}
	}
	if s, known := exp.Lookup(a.Experiment); known {
		for _, m := range s.Metrics {
			if v, ok := a.Metrics[m.Name]; m.CPUPerOp && ok && v > 0 && !math.IsInf(v, 0) {
				return v, "the arm's " + m.Name, true
			}
		}
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
// (where wall time is CPU time), the round trip ÷ its switches. The arms
// are those the experiments declare for the placement (exp.Spec.SwitchCost),
// in their order of preference, then those for one CPU. ok is false when
// no arm of run can give the figure.
func DirectCost(run *result.Run, placement string) (Cost, bool) {
	places := []string{placement}
	if placement != OneCPU {
		places = append(places, OneCPU)
	}
	for _, pl := range places {
		for _, s := range exp.All() {
			for _, name := range s.SwitchCost[pl] {
				a := run.Find(name)
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
	}
	return Cost{}, false
}

// CalibrationArm is the arm to measure when no stored run can price a
// switch: the first one the experiments declare for one CPU, where wall
// time is CPU time. ok is false when none declares one.
func CalibrationArm() (string, bool) {
	for _, s := range exp.All() {
		if names := s.SwitchCost[OneCPU]; len(names) > 0 {
			return names[0], true
		}
	}
	return "", false
}

// IndirectCurve is the indirect cost per switch by working set, ascending,
// that run's arms measured: the first curve an experiment derives from
// them (exp.Spec.IndirectCost); nil when none does.
func IndirectCurve(run *result.Run) []exp.CostPoint {
	for _, s := range exp.All() {
		if s.IndirectCost == nil {
			continue
		}
		if c := s.IndirectCost(run.Arms); len(c) > 0 {
			return c
		}
	}
	return nil
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
	c := IndirectCurve(run)
	if len(c) == 0 || rssBytes <= 0 {
		return Indirect{}, false
	}
	hi := c[len(c)-1]
	for _, p := range c {
		if p.Bytes >= rssBytes {
			hi = p
			break
		}
	}
	lo := c[0]
	a, b := math.Max(0, lo.Ns), math.Max(0, hi.Ns)
	if a > b {
		a = b
	}
	return Indirect{LoNs: a, HiNs: b, From: lo.Label, To: hi.Label, Beyond: rssBytes > c[len(c)-1].Bytes}, true
}

// curveSource names the experiment that derives the indirect curve.
func curveSource() string {
	for _, s := range exp.All() {
		if s.IndirectCost != nil {
			return s.Name
		}
	}
	return "the per-switch experiment"
}

// Curve is the indirect cost per switch at each working set measured,
// "16KiB 3.3 µs · 256KiB 27 µs", or "" when run has no per-switch curve.
func Curve(run *result.Run) string {
	var parts []string
	for _, p := range IndirectCurve(run) {
		parts = append(parts, p.Label+" "+result.FormatNs(p.Ns))
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
// direct switching, and the indirect range when the run has a
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
		p.Lines = append(p.Lines, fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — no run has %s's per-switch arms (ctxlab run %[2]s)", result.FormatBytes(float64(s.RSSBytes)), curveSource()))
		return p
	}
	in, ok := IndirectAt(run, s.RSSBytes)
	if !ok {
		p.Lines = append(p.Lines, fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — run %s has no %s per-switch arms (ctxlab run %[3]s)", result.FormatBytes(float64(s.RSSBytes)), run.ID, curveSource()))
		return p
	}
	lo, hi := rate*in.LoNs/1e9, rate*in.HiNs/1e9
	p.IndirectLo, p.IndirectHi = &lo, &hi
	upper := fmt.Sprintf("%s if each switch touches the whole RSS again (%s W=%s", result.FormatNs(in.HiNs), curveSource(), in.To)
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

// Hogged says the arm runs CPU hogs beside its workers, as its experiment
// declares (exp.Spec.Hogged): its time per op holds the hogs' turns, so it
// is no CPU cost of a handoff and prices nothing.
func Hogged(a result.Arm) bool {
	s, ok := exp.Lookup(a.Experiment)
	return ok && s.Hogged != nil && s.Hogged(a)
}
