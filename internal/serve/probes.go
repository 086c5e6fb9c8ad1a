package serve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Probe is one registered arm that the exporter re-measures on its schedule.
type Probe struct {
	Spec *exp.Spec
	Arm  exp.Arm
}

// Name is the arm's full, stable name ("pingpong/thread/futex/same-cpu").
func (p Probe) Name() string { return p.Arm.Name }

// MaxProbes bounds --probes: each probe gets a share of one CPU budget, and
// beyond this the shares are too small to measure anything.
const MaxProbes = 16

// MaxLabelLen is the longest label value the exporter emits: long values
// make queries, legends and alert texts hard to read.
const MaxLabelLen = 40

// ErrNoProbes is returned when nothing the user asked for can run here.
var ErrNoProbes = errors.New("no probe can run on this machine")

// Resolve turns --probes patterns (arm names or globs such as
// "pingpong/thread/*") into probes, validated against the experiments
// before anything starts. With no patterns it returns the arms each
// experiment declares as its probes (exp.Prober). specs nil means the
// registry (exp.All). Arms that cannot run here (cross-cpu on one CPU) are
// left out; notes say which and why. An error is bad input.
func Resolve(patterns []string, p exp.Params, specs []*exp.Spec) (probes []Probe, notes []string, err error) {
	if specs == nil {
		specs = exp.All()
	}
	seen := map[string]bool{}
	var labelErr error // reported after the count: "*" is too many arms before it is a long label
	selected := 0      // supported arms, with those labelErr refuses
	add := func(pr Probe) error {
		if seen[pr.Name()] {
			return nil
		}
		seen[pr.Name()] = true
		if pr.Arm.Unsupported == "" {
			selected++
		}
		if l := armLabel(pr.Name()); len(l) > MaxLabelLen {
			if labelErr == nil {
				labelErr = fmt.Errorf("--probes: arm %s: its label %q is %d characters, more than the %d a Prometheus label should carry; choose another arm", pr.Name(), l, len(l), MaxLabelLen)
			}
			return nil
		}
		if pr.Arm.Unsupported != "" {
			notes = append(notes, fmt.Sprintf("probe %s left out: %s", pr.Name(), pr.Arm.Unsupported))
			return nil
		}
		probes = append(probes, pr)
		return nil
	}
	if len(patterns) == 0 {
		for _, spec := range specs {
			for _, name := range probesOf(spec) {
				matched, err := match(name, p, specs)
				if err != nil {
					// A declared probe this build or machine cannot plan is a note, not bad input.
					notes = append(notes, fmt.Sprintf("probe %s left out: %v", name, err))
					continue
				}
				for _, pr := range matched {
					if err := add(pr); err != nil {
						return nil, nil, err
					}
				}
			}
		}
	}
	for _, pat := range patterns {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			return nil, nil, fmt.Errorf("--probes: empty arm name; want arm names or globs such as pingpong/thread/*")
		}
		matched, err := match(pat, p, specs)
		if err != nil {
			return nil, nil, err
		}
		for _, pr := range matched {
			if err := add(pr); err != nil {
				return nil, nil, err
			}
		}
	}
	if selected > MaxProbes {
		return nil, nil, fmt.Errorf("--probes %s: selects %d arms; at most %d can share the CPU budget", strings.Join(patterns, ","), selected, MaxProbes)
	}
	if labelErr != nil {
		return nil, nil, labelErr
	}
	if len(probes) == 0 {
		return nil, notes, ErrNoProbes
	}
	return probes, notes, nil
}

// DefaultProbes lists the arms the experiments declare as probes, in
// registry order (for help texts and docs).
func DefaultProbes(specs []*exp.Spec) []string {
	if specs == nil {
		specs = exp.All()
	}
	var out []string
	for _, s := range specs {
		out = append(out, probesOf(s)...)
	}
	return out
}

// probesOf are the arms s declares as its probes (exp.Prober), nil for
// most experiments.
func probesOf(s *exp.Spec) []string {
	if p, ok := exp.Hook[exp.Prober](s); ok {
		return p.Probes()
	}
	return nil
}

// match resolves one arm name or glob as `ctxlab run` reads it: a glob or
// a selector (python/…) in the first part selects arms of every
// experiment. A bare experiment name is not a probe (it would select
// dozens of arms): the user must name arms.
func match(pat string, p exp.Params, specs []*exp.Spec) ([]Probe, error) {
	name, _, hasSlash := strings.Cut(pat, "/")
	glob, err := exp.ParsePattern(pat)
	if err != nil {
		return nil, fmt.Errorf("--probes: bad glob: %v", err)
	}
	var from []*exp.Spec
	anyExperiment := strings.ContainsAny(name, `*?[\`) || exp.SelectorDoc(name) != ""
	for _, s := range specs {
		if anyExperiment || s.Name == name {
			from = append(from, s)
		}
	}
	switch {
	case len(from) == 0:
		return nil, fmt.Errorf("--probes %q: unknown experiment %q; `ctxlab list` shows experiments and their arms", pat, name)
	case !hasSlash && !anyExperiment:
		return nil, fmt.Errorf("--probes %q: name arms, not a whole experiment, e.g. %s/* or an arm from `ctxlab list %s`", pat, name, name)
	}
	var out []Probe
	for _, spec := range from {
		arms, err := spec.Arms(p)
		if err != nil {
			return nil, fmt.Errorf("--probes %q: %v", pat, err)
		}
		for _, a := range arms {
			if glob.Match(a.Name) {
				out = append(out, Probe{Spec: spec, Arm: a})
			}
		}
	}
	if len(out) == 0 {
		if anyExperiment {
			return nil, fmt.Errorf("--probes %q: matches no arm; `ctxlab list` shows the arms", pat)
		}
		return nil, fmt.Errorf("--probes %q: matches no arm of %s; `ctxlab list %s` shows its arms", pat, name, name)
	}
	return out, nil
}

// splitName splits an arm's full name into the experiment and arm labels:
// "pingpong/thread/futex/same-cpu" → "pingpong", "thread/futex/same-cpu".
// The experiment is its own label, so the arm label does not repeat it. A
// name of one part is all arm label.
func splitName(name string) (experiment, arm string) {
	e := exp.ExperimentOf(name)
	if a := exp.ShortNameIn(e, name); a != name {
		return e, a
	}
	return "", name
}

func armLabel(name string) string { _, a := splitName(name); return a }

// opLabel is the "op" label of arm a: the word its experiment declares
// for what one of its ops is (exp.Spec.OpLabels), never read from the op's
// description, so rewording a description renames no label.
func opLabel(a *result.Arm) string {
	s, ok := exp.Lookup(a.Experiment)
	k, err := exp.ParseArmKey(a.Name)
	if !ok || err != nil {
		return exp.DefaultOpLabel
	}
	return s.OpLabelOf(k)
}
