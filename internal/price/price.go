// Package price turns what a process was seen doing — context switches per
// second, its resident set — into what that costs on this host, with the
// cost per switch ctxlab measured here: the direct cost by the one rule
// of cost.go (DirectCost), from the round trips the experiments declare
// for it (exp.SwitchCoster), the
// indirect cost (cold caches) from the per-switch curve they derive
// (exp.IndirectCoster). It reads only the result model and those
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

// IndirectCurve is the indirect cost per switch by working set, ascending,
// that run's arms measured: the first curve an experiment derives from
// them (exp.IndirectCoster); nil when none does.
func IndirectCurve(run *result.Run) []exp.CostPoint {
	for _, s := range exp.All() {
		ic, ok := exp.Hook[exp.IndirectCoster](s)
		if !ok {
			continue
		}
		if c := ic.IndirectCost(run.Arms); len(c) > 0 {
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

// CurveArms are the arm patterns that measure the indirect curve, for a
// calibration (exp.IndirectCoster); ok is false when none is declared.
func CurveArms() ([]string, bool) {
	for _, s := range exp.All() {
		if ic, ok := exp.Hook[exp.IndirectCoster](s); ok && len(ic.IndirectArms()) > 0 {
			return ic.IndirectArms(), true
		}
	}
	return nil, false
}

// curveSource names the experiment that derives the indirect curve.
func curveSource() string {
	for _, s := range exp.All() {
		if _, ok := exp.Hook[exp.IndirectCoster](s); ok {
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
	// CPUNs is the CPU time the process used over Seconds (all its
	// threads, and for diagnose the children it waited for); HasCPU says it
	// was measured. Direct switching cannot cost more than that.
	CPUNs  uint64
	HasCPU bool
	// Children are the watched processes' child processes, whose switches
	// are not counted above: how many, their switches, and the PID of the
	// one that switched most.
	ChildProcs           int
	ChildVol, ChildInvol uint64
	BusiestChild         int
	// WorkingSetBytes is what one thread touches between switches, as
	// the working-set sampling estimated it (package wss), 0 when unknown;
	// WorkingSetHow says how it was derived. With it the indirect cost is
	// priced at that point of the refill curve, not as a range up to RSS.
	WorkingSetBytes int64
	WorkingSetHow   string
}

// Rate is switches per second.
func (s Seen) Rate() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.Vol+s.Invol) / s.Seconds
}

// CPUShare is the CPU time the process used, as a share of one core.
func (s Seen) CPUShare() float64 {
	if s.Seconds <= 0 {
		return 0
	}
	return float64(s.CPUNs) / 1e9 / s.Seconds
}

// Price is what the switches seen cost: the share of one core that goes to
// direct switching, and the indirect range when the run has a
// per-switch curve. Neither exceeds the CPU the process used, when that
// was measured: a stored cost that would is bounded, and said to be.
type Price struct {
	Rate      float64 `json:"switches_per_s"`
	PerSwitch float64 `json:"cost_per_switch_ns"`
	Share     float64 `json:"direct_core_share"`
	Arm       string  `json:"cost_arm"`
	RunID     string  `json:"cost_run"`
	How       string  `json:"cost_how"`
	// Source is where the cost comes from, in the words every command
	// prints it with (Cost.Source).
	Source    string `json:"cost_source"`
	CostNoisy bool   `json:"cost_noisy,omitempty"`
	// CPUShare is the CPU the process used, as a share of a core, when
	// measured. Bounded says the stored cost × the rate would exceed it,
	// so PerSwitch and Share are bounded by it; StoredPerSwitch is the
	// stored figure either way.
	CPUShare        *float64 `json:"cpu_core_share,omitempty"`
	Bounded         bool     `json:"bounded_by_cpu,omitempty"`
	StoredPerSwitch float64  `json:"stored_cost_per_switch_ns"`
	// IndirectLo/Hi are the indirect share of a core, when known.
	IndirectLo *float64 `json:"indirect_core_share_lo,omitempty"`
	IndirectHi *float64 `json:"indirect_core_share_hi,omitempty"`
	// Indirect is the indirect share of a core estimated from the working
	// set (Seen.WorkingSetBytes) and the refill curve, IndirectPerSwitch
	// the cost per switch read off it and IndirectSource where from.
	Indirect          *float64 `json:"indirect_core_share,omitempty"`
	IndirectPerSwitch float64  `json:"indirect_cost_per_switch_ns,omitempty"`
	IndirectSource    string   `json:"indirect_cost_source,omitempty"`
	// ChildRate is the switches per second of the child processes, which
	// are not priced here.
	ChildRate float64  `json:"child_switches_per_s,omitempty"`
	Lines     []string `json:"lines"`
}

// Of prices what was seen with cost, and the indirect cost from run: a run
// with cachecost's per-switch arms, or nil when there is none.
func Of(s Seen, cost Cost, run *result.Run) Price {
	rate := s.Rate()
	p := Price{Rate: rate, PerSwitch: cost.PerSwitchNs, Share: rate * cost.PerSwitchNs / 1e9, Arm: cost.Arm, RunID: cost.RunID, How: cost.How(), Source: cost.Source(),
		CostNoisy: cost.Noisy, StoredPerSwitch: cost.PerSwitchNs}
	room := 1.0 // what direct and indirect switching may take together: a core, or the CPU measured
	if s.HasCPU && s.Seconds > 0 {
		cpu := s.CPUShare()
		p.CPUShare, room = &cpu, cpu
		if p.Share > cpu && s.Vol+s.Invol > 0 {
			p.Bounded = true
			p.PerSwitch, p.Share = float64(s.CPUNs)/float64(s.Vol+s.Invol), cpu
		}
	}
	if p.Bounded {
		p.Lines = append(p.Lines, fmt.Sprintf("price: %s switches/s × at most %s per switch ≤ %s of a core goes to direct switching (all the CPU this process used); %s",
			fmtRate(rate), result.FormatNs(p.PerSwitch), pct(p.Share), advice(s)))
		p.Lines = append(p.Lines, fmt.Sprintf("  the stored %s per switch × %s/s would be %s of a core, more than the %s this process used: the stored figure does not fit this process; at most %s per switch here (its CPU time ÷ its switches)",
			result.FormatNs(cost.PerSwitchNs), fmtRate(rate), pct(rate*cost.PerSwitchNs/1e9), pct(*p.CPUShare), result.FormatNs(p.PerSwitch)))
	} else {
		p.Lines = append(p.Lines, fmt.Sprintf("price: %s switches/s × %s per switch ≈ %s of a core goes to direct switching; %s",
			fmtRate(rate), result.FormatNs(cost.PerSwitchNs), pct(p.Share), advice(s)))
	}
	from := "  " + cost.Line()
	if cost.Noisy {
		from += "; no stored run has a quiet one (ctxlab run pingpong on a quiet machine)"
	}
	switch {
	case p.CPUShare == nil:
		from += "; this process's CPU time is unavailable, so the price is not checked against it"
	case !p.Bounded:
		from += fmt.Sprintf("; this process used %s of a core in all", pct(*p.CPUShare))
	}
	p.Lines = append(p.Lines, from)
	if !p.Bounded { // bounded, the direct share is only an upper end: the indirect may take all the CPU too
		room -= p.Share
	}
	p.Lines = append(p.Lines, indirectLine(&p, s, run, rate, room))
	if s.ChildProcs > 0 && s.Seconds > 0 {
		p.ChildRate = float64(s.ChildVol+s.ChildInvol) / s.Seconds
		if p.ChildRate > 0 {
			l := fmt.Sprintf("  its %d child process(es) switched %s/s more, not priced here: ", s.ChildProcs, fmtRate(p.ChildRate))
			if s.BusiestChild > 0 {
				l += fmt.Sprintf("ctxlab watch %d (the busiest) prices them", s.BusiestChild)
			} else {
				l += "ctxlab watch CHILD-PID prices them"
			}
			p.Lines = append(p.Lines, l+", ctxlab diagnose -- CMD the whole tree")
		}
	}
	return p
}

// indirectLine prices the indirect cost (cold caches) at the process's
// resident set within room, the share of a core the process used beyond
// its direct switching (or a core when its CPU is unknown).
func indirectLine(p *Price, s Seen, run *result.Run, rate, room float64) string {
	if s.WorkingSetBytes > 0 && run != nil {
		if rf, ok := RefillAt(run, s.WorkingSetBytes); ok {
			rf.Calibrated = IsCalibration(run)
			return workingSetLine(p, s, rf, rate, room)
		}
	}
	if s.RSSBytes <= 0 {
		return "  indirect (cold caches): not priced, the process's resident set is unknown"
	}
	rss := result.FormatBytes(float64(s.RSSBytes))
	if run == nil {
		return fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — no run has %s's per-switch arms (ctxlab run %[2]s)", rss, curveSource())
	}
	in, ok := IndirectAt(run, s.RSSBytes)
	if !ok {
		return fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — run %s has no %s per-switch arms (ctxlab run %[3]s)", rss, run.ID, curveSource())
	}
	if in.HiNs <= 0 {
		// Both ends clamped to 0: every point read at or below noise.
		return fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — %s's per-switch points in run %s (W=%s to W=%s) read no cost above noise", rss, curveSource(), run.ID, in.From, in.To)
	}
	lo, hi := rate*in.LoNs/1e9, rate*in.HiNs/1e9
	p.IndirectLo, p.IndirectHi = &lo, &hi
	upper := fmt.Sprintf("%s if each switch touches the whole RSS again (%s W=%s", result.FormatNs(in.HiNs), curveSource(), in.To)
	if in.Beyond {
		upper += ", the largest measured: more for the full RSS"
	}
	room = math.Max(room, 0)
	limit := "a whole core"
	if p.CPUShare != nil {
		limit = "the CPU this process used"
	}
	if lo > room {
		// Even a switch that touches little would take more than is left:
		// the curve does not fit this process.
		p.IndirectLo, p.IndirectHi = nil, nil
		return fmt.Sprintf("  indirect (cold caches) at RSS %s: not priced — even a switch that touches little (W=%s, %s) would take %s of a core, more than the %s left of %s: the stored curve does not fit this process",
			rss, in.From, result.FormatNs(in.LoNs), pct(lo), pct(room), limit)
	}
	share := pct(lo) + "–" + pct(hi) + " of a core more"
	if hi > room {
		// The process cannot touch all of its RSS between switches at
		// this rate, so that end is no figure.
		share = fmt.Sprintf("%s of a core more, or more (the upper end would exceed %s: the process cannot touch all of its RSS between switches at this rate)", pct(lo), limit)
		p.IndirectHi = nil
	}
	return fmt.Sprintf("  indirect (cold caches) at RSS %s: %s per switch if a switch touches little (W=%s) to %s) ≈ %s",
		rss, result.FormatNs(in.LoNs), in.From, upper, share)
}

// workingSetLine prices the indirect cost at the working set per thread
// the sampling estimated, within room (as indirectLine), and adds the
// line that sets it beside the direct cost.
func workingSetLine(p *Price, s Seen, rf Refill, rate, room float64) string {
	est := rate * rf.Ns / 1e9
	p.IndirectPerSwitch, p.IndirectSource = rf.Ns, rf.Source()
	what := fmt.Sprintf("%s switches/s × %s per switch at your working set of %s per thread (%s); refill cost from %s",
		fmtRate(rate), result.FormatNs(rf.Ns), result.FormatBytes(float64(s.WorkingSetBytes)), s.WorkingSetHow, rf.Source())
	head := fmt.Sprintf("  indirect (cold caches) ≈ %s of a core: %s", pct(est), what)
	if room = math.Max(room, 0); est > room {
		head = fmt.Sprintf("  indirect (cold caches): at most %s of a core, all the CPU this process used beside the direct share: %s would be %s, more than that — the threads cannot refetch their whole set after every switch",
			pct(room), what, pct(est))
		est = room
	}
	p.Indirect = &est
	p.Lines = append(p.Lines, head)
	direct := pct(p.Share)
	if p.Bounded {
		direct = "≤ " + direct
	}
	return fmt.Sprintf("  direct ≈ %s, indirect ≈ %s of a core (estimated from your working set and this host's refill curve; no hardware counter needed)", direct, pct(est))
}

// IsCalibration says run was measured now for the price, not stored.
func IsCalibration(run *result.Run) bool { return strings.HasPrefix(run.ID, CalibrationID) }

// CalibrationID begins the id of a run measured for the price.
const CalibrationID = "calibration "

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
// declares (exp.Hogger): its time per op holds the hogs' turns, so it
// is no CPU cost of a handoff and prices nothing.
func Hogged(a result.Arm) bool {
	s, ok := exp.Lookup(a.Experiment)
	if !ok {
		return false
	}
	h, ok := exp.Hook[exp.Hogger](s)
	return ok && h.Hogged(a)
}
