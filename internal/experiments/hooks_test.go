package experiments

import (
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// The experiments' hooks as the tests read them: a func or list, nil where
// the experiment implements no such hook.

func deriveOf(s *exp.Spec) func([]result.Arm) {
	if h, ok := exp.Hook[exp.Deriver](s); ok {
		return h.Derive
	}
	return nil
}

func verdictOf(s *exp.Spec) func(*exp.VerdictRun) []exp.VerdictSection {
	if h, ok := exp.Hook[exp.Verdicter](s); ok {
		return h.Verdict
	}
	return nil
}

func indirectCostOf(s *exp.Spec) func([]result.Arm) []exp.CostPoint {
	if h, ok := exp.Hook[exp.IndirectCoster](s); ok {
		return h.IndirectCost
	}
	return nil
}

func hoggedOf(s *exp.Spec) func(result.Arm) bool {
	if h, ok := exp.Hook[exp.Hogger](s); ok {
		return h.Hogged
	}
	return nil
}

func headlineOf(s *exp.Spec) []exp.Headline {
	if h, ok := exp.Hook[exp.Headliner](s); ok {
		return h.Headline()
	}
	return nil
}

func switchCostOf(s *exp.Spec) []string {
	if h, ok := exp.Hook[exp.SwitchCoster](s); ok {
		return h.SwitchCost()
	}
	return nil
}

func probesOf(s *exp.Spec) []string {
	if h, ok := exp.Hook[exp.Prober](s); ok {
		return h.Probes()
	}
	return nil
}

func harnessOf(s *exp.Spec) []exp.HarnessRef {
	if h, ok := exp.Hook[exp.Harnessed](s); ok {
		return h.Harness()
	}
	return nil
}
