package exp

import (
	"fmt"
	"regexp"
)

// OpLabel names, in one lower-case word, what one op of some of an
// experiment's arms is: the "op" label of ctxlab serve's latency metrics
// ("roundtrip", "hop", "yield"). An experiment declares its labels beside
// its arms (Spec.OpLabels), so that rewording an op's description
// (Arm.Op, Spec.Op) never renames a label that queries and alerts are
// written against.
type OpLabel struct {
	Label string
	// Has is a bare segment the arm's key must have (ArmKey.Has): "timer"
	// for interference/timer/…; empty, every arm.
	Has string
}

// DefaultOpLabel is the label of an arm its experiment declares none for.
const DefaultOpLabel = "op"

// opLabelWord is what a label may be: a short lower-case word.
var opLabelWord = regexp.MustCompile(`^[a-z]{1,16}$`)

// OpLabelOf is the label of the arm with key k: the first of the
// experiment's OpLabels whose Has the key has, else DefaultOpLabel. The
// interpreter an arm ran on (--python all) changes nothing.
func (s *Spec) OpLabelOf(k ArmKey) string {
	for _, l := range s.OpLabels {
		if l.Has == "" || k.Has(l.Has) {
			return l.Label
		}
	}
	return DefaultOpLabel
}

// CheckOpLabels verifies an experiment's label declarations: each is one
// lower-case word of at most 16 letters.
func (s *Spec) CheckOpLabels() error {
	for _, l := range s.OpLabels {
		if !opLabelWord.MatchString(l.Label) {
			return fmt.Errorf("%s: op label %q: want one lower-case word of at most 16 letters", s.Name, l.Label)
		}
	}
	return nil
}
