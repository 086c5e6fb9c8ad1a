package exp

import "github.com/ctxlab/ctxlab/internal/result"

// The optional hooks of an experiment. Spec holds what every experiment
// has; what only some experiments declare, and only one package reads, is
// an interface here that the experiment's own type implements (a type
// embedding Spec, registered as one value):
//
//	type pingpongExp struct{ exp.Spec }
//	func (*pingpongExp) SwitchCost() []string { … }
//	exp.Register(&pingpongExp{exp.Spec{Name: "pingpong", …}})
//
// and the one reader finds it with Hook: exp.Hook[exp.SwitchCoster](s).

// Experiment is what Register takes: a *Spec, or a type of the
// experiment's own that embeds Spec (whose spec method it gets).
type Experiment interface{ spec() *Spec }

func (s *Spec) spec() *Spec { return s }

// Bind ties e's Spec to e, so that Hook finds e's methods, and returns the
// Spec. Register binds what it registers; a test that builds an
// experiment outside the registry binds its own.
func Bind(e Experiment) *Spec {
	s := e.spec()
	s.impl = e
	return s
}

// Hook is s's experiment as the hook H (one of the interfaces below), and
// whether it implements it. A Spec never bound implements none.
func Hook[H any](s *Spec) (H, bool) {
	h, ok := s.impl.(H)
	return h, ok
}

// Deriver adds figures that compare arms (a multiple of a baseline arm)
// to the measured arms in place, before Checks and Findings see them;
// only Metrics and Notes should be changed (runner).
type Deriver interface {
	Derive(arms []result.Arm)
}

// Pairer declares the comparisons the experiment's verdict states between
// two of its arms: when a run measures both, the runner measures them
// again side by side, taking turns, and records the ratio
// (result.Experiment.Comparisons).
type Pairer interface {
	Pairs() []Pair
}

// Verdicter writes the experiment's part of the verdict from a run's
// measured arms (report); it is called for every run, so it says "not
// measured" where the run lacks the arms it reads. It only reads the
// result model: a stored run gives the same verdict.
type Verdicter interface {
	Verdict(v *VerdictRun) []VerdictSection
}

// Headliner declares the experiment's rows in the verdict's handoff table
// (report).
type Headliner interface {
	Headline() []Headline
}

// SwitchCoster names the arms, two threads on one CPU, whose round trips
// give this host's direct cost of one context switch, in order of
// preference: price.DirectCost, the one rule the verdict, budget, watch
// and diagnose take it by.
type SwitchCoster interface {
	SwitchCost() []string
}

// IndirectCoster derives the indirect cost per switch by working set from
// the arms that measured it, ascending by size, nil when they measured
// none (price's cold-cache range); IndirectArms are the arm patterns
// (Select) that measure it: what a brief calibration runs when no stored
// run has the curve and a working set is to be priced.
type IndirectCoster interface {
	IndirectCost(arms []result.Arm) []CostPoint
	IndirectArms() []string
}

// Hogger says an arm runs CPU hogs beside its workers: its op time holds
// the hogs' turns, so it is no cost per switch (price, budget, serve).
type Hogger interface {
	Hogged(a result.Arm) bool
}

// Harnessed names the arms `ctxlab selfcheck` holds to an instrument
// ctxlab did not write, each with its reference.
type Harnessed interface {
	Harness() []HarnessRef
}

// Prober names the arms `ctxlab serve` re-measures by default: cheap,
// steady, and telling when hosts are compared.
type Prober interface {
	Probes() []string
}

// Sizer names the arms' parameters (result.Arm.Params keys) whose values
// are sizes in bytes: the report draws them on a bytes axis (SizeParam).
type Sizer interface {
	SizeParams() []string
}
