package price

import (
	"fmt"
	"iter"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// The one cost of a switch. The verdict, budget, watch, diagnose and
// diagnose --vary all take it from DirectCost (FromHistory searches the
// history with it), so one run never shows two figures:
//
//   - the arm: the first of the round trips the experiments declare
//     (exp.SwitchCoster: two threads on one CPU, a raw futex, else a
//     pipe) that the run measured, a quiet one before a noisy one;
//   - the figure: its median round trip ÷ the switches per round trip it
//     measured (PerSwitch). On one CPU wall time is the CPU time of both
//     sides, so the median is what a round trip costs the machine; the
//     switches are counted, never assumed to be 2 (on one CPU they are
//     about 3).
//
// Across CPUs a round trip also waits for an idle CPU to wake, and its CPU
// time holds another CPU's wake-up path: neither is a cost per switch.

// Cost is this host's measured direct cost of one context switch, and
// where it comes from.
type Cost struct {
	PerSwitchNs float64
	RunID       string
	Arm         string
	// RoundTripNs is the arm's median round trip, Switches its measured
	// OS switches per round trip: PerSwitchNs is the one ÷ the other.
	RoundTripNs float64
	Switches    float64
	// Noisy says the run marked the arm noisy; Calibrated that the arm
	// was measured now for the price, not read from a stored run.
	Noisy      bool
	Calibrated bool
}

// OneCPU is the placement of the arms that price a switch.
const OneCPU = "same-cpu"

// minSwitches is the fewest switches per op an arm must make to price
// one: a round trip that makes fewer is not a handoff.
const minSwitches = 1

// PerSwitch is the rule's arithmetic on one arm: its median op ÷ its
// measured OS switches per op. ok is false for an arm that did not
// measure, is not a time per op, makes fewer than one switch per op, or
// runs CPU hogs beside its workers (its op time holds their turns).
func PerSwitch(a result.Arm) (ns float64, ok bool) {
	if a.Status != result.StatusOK || a.Median <= 0 || (a.Unit != "" && a.Unit != "ns/op") ||
		a.Switches == nil || a.Switches.Total() < minSwitches || Hogged(a) {
		return 0, false
	}
	return a.Median / a.Switches.Total(), true
}

// costOf is the Cost arm a of run gives, if it gives one: an arm on one
// CPU, where wall time is CPU time.
func costOf(run *result.Run, a *result.Arm) (Cost, bool) {
	if a == nil || a.Placement != OneCPU {
		return Cost{}, false
	}
	ns, ok := PerSwitch(*a)
	if !ok {
		return Cost{}, false
	}
	return Cost{PerSwitchNs: ns, RunID: run.ID, Arm: a.Name, RoundTripNs: a.Median, Switches: a.Switches.Total(), Noisy: a.Noise.Noisy}, true
}

// DirectCost is the one cost of a switch run gives: the first arm the
// experiments declare (exp.SwitchCoster, in their order) that run
// measured quietly, else the first it measured at all, priced by
// PerSwitch. ok is false when run measured none of them.
func DirectCost(run *result.Run) (Cost, bool) {
	return firstQuiet(func(yield func(Cost, bool) bool) {
		for _, name := range switchCostArms() {
			if !yield(costOf(run, run.Find(name))) {
				return
			}
		}
	})
}

// firstQuiet is the first quiet cost costs yields (ok), else the first
// noisy one; ok is false when it yields none.
func firstQuiet(costs iter.Seq2[Cost, bool]) (Cost, bool) {
	var noisy *Cost
	for c, ok := range costs {
		switch {
		case !ok:
		case !c.Noisy:
			return c, true
		case noisy == nil:
			noisy = &c
		}
	}
	if noisy != nil {
		return *noisy, true
	}
	return Cost{}, false
}

// switchCostArms are the arms the experiments declare, in their order.
func switchCostArms() []string {
	var out []string
	for _, s := range exp.All() {
		if c, ok := exp.Hook[exp.SwitchCoster](s); ok {
			out = append(out, c.SwitchCost()...)
		}
	}
	return out
}

// FromHistory is the one cost of a switch from runs (newest first)
// measured on host: DirectCost of the newest run that has a quiet figure,
// else of the newest that has a noisy one. Runs of other hosts (imported
// ones) are skipped: their costs are another machine's. It reads runs
// only as far as it must.
func FromHistory(runs iter.Seq[*result.Run], host string) (Cost, bool) {
	return firstQuiet(func(yield func(Cost, bool) bool) {
		for run := range runs {
			if run == nil || (host != "" && run.Env.Hostname != "" && run.Env.Hostname != host) {
				continue
			}
			if !yield(DirectCost(run)) {
				return
			}
		}
	})
}

// CalibrationArm is the arm to measure when no stored run can price a
// switch: the first one the experiments declare. ok is false when none
// declares one.
func CalibrationArm() (string, bool) {
	if names := switchCostArms(); len(names) > 0 {
		return names[0], true
	}
	return "", false
}

// How is how the figure was derived from its arm: "median round trip
// 6.69 µs ÷ 2.04 switches" (the switches it measured per round trip).
func (c Cost) How() string {
	return fmt.Sprintf("median round trip %s ÷ %.2f switches", result.FormatNs(c.RoundTripNs), c.Switches)
}

// Source is where the figure comes from — arm, run and how — the same
// words wherever it is printed: "pingpong/thread/futex/same-cpu in run
// 20261201T043100-d6bffb: median round trip 6.69 µs ÷ 2.04 switches",
// with ", noisy" when the run marked the arm noisy.
func (c Cost) Source() string {
	s := fmt.Sprintf("%s in run %s: %s", c.Arm, c.RunID, c.How())
	switch {
	case c.Calibrated:
		s = fmt.Sprintf("measured now for about 2 s, %s: %s, a busy machine reads high", c.Arm, c.How())
	case c.RunID == "": // a run not yet given an id
		s = fmt.Sprintf("%s: %s", c.Arm, c.How())
	}
	if c.Noisy {
		s += ", noisy"
	}
	return s
}

// String is the figure with its source: "3.28 µs per switch
// (pingpong/thread/futex/same-cpu in run …: median round trip 6.69 µs ÷
// 2.04 switches)".
func (c Cost) String() string {
	return result.FormatNs(c.PerSwitchNs) + " per switch (" + c.Source() + ")"
}

// Line is the cost as every command prints it, on a line of its own:
// "switch cost: 3.28 µs (pingpong/thread/futex/same-cpu in run …: median
// round trip 6.69 µs ÷ 2.04 switches)".
func (c Cost) Line() string {
	return "switch cost: " + result.FormatNs(c.PerSwitchNs) + " (" + c.Source() + ")"
}
