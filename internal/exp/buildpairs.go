package exp

import "strings"

// The params a CPython arm bound to one of several interpreters
// (--python all) carries before it runs: its interpreter's tag ("3.13.5",
// "3.13.5t": the version, with a "t" for a free-threaded build) and the
// build (BuildGIL, BuildFreeThreaded, or a free-threaded build with the
// GIL re-enabled, which is neither).
const (
	ParamPython       = "python"
	ParamPythonBuild  = "python_build"
	BuildGIL          = "GIL"
	BuildFreeThreaded = "free-threaded"
)

// ExpandPairs is pairs with each Builds pair replaced by its comparisons
// among arms (the run's selected arms): for each free-threaded arm of the
// pair's plan name, against the GIL build's arm of the same version, "A
// on free-threaded TAGt vs GIL TAG" (ft ÷ GIL). A version with one build
// only gives none, and builds of different versions are never paired:
// that is no build comparison.
func ExpandPairs(pairs []Pair, arms []Arm) []Pair {
	var out []Pair
	for _, p := range pairs {
		if !p.Builds {
			out = append(out, p)
			continue
		}
		out = append(out, buildPairs(p, arms)...)
	}
	return out
}

// buildPairs are p's comparisons among arms.
func buildPairs(p Pair, arms []Arm) []Pair {
	gil := map[string]string{} // the GIL build's tag → its arm's name
	var ft []ArmKey
	for _, a := range arms {
		k, err := ParseArmKey(a.Name)
		if err != nil || k.Interpreter == "" || k.Plan().String() != p.A || a.Unsupported != "" {
			continue
		}
		switch a.Params[ParamPythonBuild] {
		case BuildGIL:
			if _, seen := gil[k.Interpreter]; !seen {
				gil[k.Interpreter] = a.Name
			}
		case BuildFreeThreaded:
			ft = append(ft, k)
		}
	}
	var out []Pair
	for _, k := range ft {
		tag, ok := strings.CutSuffix(k.Interpreter, "t")
		if g, found := gil[tag]; ok && found {
			out = append(out, Pair{Label: p.Label + " on free-threaded " + k.Interpreter + " vs GIL " + tag, A: k.String(), B: g})
		}
	}
	return out
}
