package experiments

import (
	"slices"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// How the experiments' analyses find arms: by the keys their plans build
// (exp.ArmKey), never by formatting or cutting names. Every lookup goes
// through armIndex.get or pick, so a test can hear each key an analysis
// asks for and hold it to the experiment's plan (plankeys_test.go).

// keyOf is a measured arm's key. A name that does not parse (an imported
// file's) is a key of its own that no plan builds, so nothing finds it.
func keyOf(a result.Arm) exp.ArmKey {
	k, err := exp.ParseArmKey(a.Name)
	if err != nil {
		return exp.ArmKey{Experiment: a.Name}
	}
	return k
}

// armIndex holds arms by name, to be found by key.
type armIndex map[string]result.Arm

// okArms indexes the arms that measured.
func okArms(arms []result.Arm) armIndex {
	return indexArms(arms, func(a result.Arm) bool { return a.Status == result.StatusOK })
}

// indexArms indexes the arms keep returns true for.
func indexArms(arms []result.Arm, keep func(result.Arm) bool) armIndex {
	by := armIndex{}
	for _, a := range arms {
		if keep(a) {
			by[a.Name] = a
		}
	}
	return by
}

// get is the arm k names, if the index holds it.
func (ix armIndex) get(k exp.ArmKey) (result.Arm, bool) {
	heard(k)
	a, ok := ix[k.String()]
	return a, ok
}

// pick is the first measured arm of keys in a verdict's run
// (exp.VerdictRun.Pick).
func pick(v *exp.VerdictRun, keys ...exp.ArmKey) (result.Arm, bool) {
	names := make([]string, len(keys))
	for i, k := range keys {
		heard(k)
		names[i] = k.String()
	}
	return v.Pick(names...)
}

// tooFew is the first arm of keys whose repetitions held too few ops in
// a verdict's run (exp.VerdictRun.TooFew): where pick finds no figure,
// the verdict says so.
func tooFew(v *exp.VerdictRun, keys ...exp.ArmKey) (result.Arm, bool) {
	names := make([]string, len(keys))
	for i, k := range keys {
		heard(k)
		names[i] = k.String()
	}
	return v.TooFew(names...)
}

// unmeasured is what a verdict says of experiment where it found no
// figure to show: "too few ops" where arms of it had too few (the screen
// names them and says why), else "not measured" and how to measure it.
func unmeasured(v *exp.VerdictRun, experiment, how string) string {
	if len(v.WhereTooFew(experiment, func(result.Arm) bool { return true })) > 0 {
		return "too few ops for a figure (see below)"
	}
	return "not measured (" + how + ")"
}

// names are the keys' arm names, for a declaration (exp.Spec) that lists
// arms by name.
func names(keys ...exp.ArmKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		heard(k)
		out[i] = k.String()
	}
	return out
}

// keySet is a set of keys, asked by key.
type keySet map[string]bool

func keysOf(keys ...exp.ArmKey) keySet {
	s := keySet{}
	for _, k := range keys {
		s[k.String()] = true
	}
	return s
}

func (s keySet) has(k exp.ArmKey) bool { return s[k.String()] }

// lookupHook, when a test sets it, hears every key an analysis or a
// declaration names an arm by.
var lookupHook func(exp.ArmKey)

func heard(k exp.ArmKey) {
	if lookupHook != nil {
		lookupHook(k)
	}
}

// interpreterTags lists the interpreters among the arms ("" for arms run
// on the one interpreter of a run), sorted.
func interpreterTags(arms []result.Arm) []string {
	var out []string
	for _, a := range arms {
		if tag := exp.Interpreter(a.Name); !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	slices.Sort(out)
	return out
}

// onInterpreter is how a reading names the interpreter tag ran on: " (py=3.12)",
// nothing for a run's one interpreter.
func onInterpreter(tag string) string {
	if tag == "" {
		return ""
	}
	return " (" + interpreterText(tag) + ")"
}

// interpreterText is an interpreter tag as the readings write it: "py=3.12".
func interpreterText(tag string) string { return exp.ArmKey{Interpreter: tag}.InterpreterSegment() }
