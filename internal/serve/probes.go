package serve

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// Probe is one registered arm that the exporter re-measures on its schedule.
type Probe struct {
	Spec *exp.Spec
	Arm  exp.Arm
}

// Name is the arm's stable name; it is the "arm" label of every metric.
func (p Probe) Name() string { return p.Arm.Name }

// DefaultProbes are the arms measured when --probes is not given: the cheap
// in-runtime handoff, an OS-thread handoff on one CPU and across two (the
// placement gap is what changes between hosts), and a process round trip.
// The interference probe is added to them when that experiment exists.
var DefaultProbes = []string{
	"pingpong/goroutine/chan/gomaxprocs=1",
	"pingpong/thread/futex/same-cpu",
	"pingpong/thread/futex/cross-cpu",
	"pingpong/process/pipe/unpinned",
}

// InterferenceExperiment is the experiment the default one-hog p99 probe
// comes from. It is looked up at run time, so a build without it still serves.
const InterferenceExperiment = "interference"

// MaxProbes bounds --probes: each probe gets a share of one CPU budget, and
// beyond this the shares are too small to measure anything.
const MaxProbes = 16

// ErrNoProbes is returned when nothing the user asked for can run here.
var ErrNoProbes = errors.New("no probe can run on this machine")

// Lookup finds an experiment by name; exp.Lookup in production, a fake in tests.
type Lookup func(name string) (*exp.Spec, bool)

// Resolve turns --probes patterns (arm names or globs such as
// "pingpong/thread/*") into probes, validated against the registry before
// anything starts. With no patterns it returns the default set. Arms that
// cannot run here (cross-cpu on one CPU) are left out; notes say which and
// why, and so does a missing interference experiment. An error is bad input.
func Resolve(patterns []string, p exp.Params, lookup Lookup) (probes []Probe, notes []string, err error) {
	if lookup == nil {
		lookup = exp.Lookup
	}
	seen := map[string]bool{}
	add := func(pr Probe) {
		if seen[pr.Name()] {
			return
		}
		seen[pr.Name()] = true
		if pr.Arm.Unsupported != "" {
			notes = append(notes, fmt.Sprintf("probe %s left out: %s", pr.Name(), pr.Arm.Unsupported))
			return
		}
		probes = append(probes, pr)
	}
	if len(patterns) == 0 {
		for _, name := range DefaultProbes {
			matched, err := match(name, p, lookup)
			if err != nil {
				return nil, nil, err
			}
			for _, pr := range matched {
				add(pr)
			}
		}
		pr, note := interferenceProbe(p, lookup)
		if note != "" {
			notes = append(notes, note)
		} else {
			add(pr)
		}
	}
	for _, pat := range patterns {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			return nil, nil, fmt.Errorf("--probes: empty arm name; want arm names or globs such as pingpong/thread/*")
		}
		matched, err := match(pat, p, lookup)
		if err != nil {
			return nil, nil, err
		}
		for _, pr := range matched {
			add(pr)
		}
	}
	if len(probes) > MaxProbes {
		return nil, nil, fmt.Errorf("--probes %s: selects %d arms; at most %d can share the CPU budget", strings.Join(patterns, ","), len(probes), MaxProbes)
	}
	if len(probes) == 0 {
		return nil, notes, ErrNoProbes
	}
	return probes, notes, nil
}

// match resolves one arm name or glob. A bare experiment name is not a
// probe (it would select dozens of arms): the user must name arms.
func match(pat string, p exp.Params, lookup Lookup) ([]Probe, error) {
	name, _, hasSlash := strings.Cut(pat, "/")
	spec, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("--probes %q: unknown experiment %q; `ctxlab list` shows experiments and their arms", pat, name)
	}
	if !hasSlash {
		return nil, fmt.Errorf("--probes %q: name arms, not a whole experiment, e.g. %s/* or an arm from `ctxlab list %s`", pat, name, name)
	}
	glob, err := exp.ParsePattern(pat)
	if err != nil {
		return nil, fmt.Errorf("--probes: bad glob: %v", err)
	}
	arms, err := spec.Arms(p)
	if err != nil {
		return nil, fmt.Errorf("--probes %q: %v", pat, err)
	}
	var out []Probe
	for _, a := range arms {
		if glob.Match(a.Name) {
			out = append(out, Probe{Spec: spec, Arm: a})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--probes %q: matches no arm of %s; `ctxlab list %s` shows its arms", pat, name, name)
	}
	return out, nil
}

// interferenceProbe picks the one-hog arm of the interference experiment:
// hogs=1, preferring a spinning hog and a quick arm. note says why there is
// none (the experiment is not in this build, or has no one-hog arm).
func interferenceProbe(p exp.Params, lookup Lookup) (Probe, string) {
	spec, ok := lookup(InterferenceExperiment)
	if !ok {
		return Probe{}, "probe interference (one-hog p99) left out: this build has no interference experiment"
	}
	q := p
	q.Hogs = []int{1}
	arms, err := spec.Arms(q)
	if err != nil {
		if arms, err = spec.Arms(p); err != nil {
			return Probe{}, "probe interference (one-hog p99) left out: " + err.Error()
		}
	}
	best, bestScore := -1, -1
	for i, a := range arms {
		if !oneHog(a) || a.Unsupported != "" {
			continue
		}
		score := 0
		if a.Quick {
			score++
		}
		if strings.Contains(a.Name, "spin") || a.Params["kind"] == "spin" {
			score += 2
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return Probe{}, "probe interference (one-hog p99) left out: the interference experiment has no runnable arm with one hog"
	}
	return Probe{Spec: spec, Arm: arms[best]}, ""
}

func oneHog(a exp.Arm) bool {
	if a.Params["hogs"] == "1" {
		return true
	}
	for _, part := range strings.Split(a.Name, "/") {
		if part == "hogs=1" {
			return true
		}
	}
	return false
}
