package exp

import "strings"

// What the readers of arms (verdict, report, serve, compare, selfcheck,
// the reader of old runs) ask of an arm's name, answered from its ArmKey
// so that no package outside exp cuts, splits or formats a name. Every
// function here takes names from stored runs as they are: a name that
// ParseArmKey refuses (an empty segment, from a hand-edited or hostile
// file) still gets an answer, the one the plain split at '/' gives.

// Short is the key's name without its experiment, the interpreter last:
// "thread/futex/same-cpu", "pytask/direct/py=3.12" ("" for a key of no
// segments).
func (k ArmKey) Short() string {
	s := k.String()
	return strings.TrimPrefix(s[len(k.Experiment):], "/")
}

// Written is the key's segments as its name writes them after the
// experiment: the interpreter, when set, is a last segment py=TAG.
func (k ArmKey) Written() []Segment {
	out := append([]Segment(nil), k.Segments...)
	if k.Interpreter != "" {
		out = append(out, Segment{Key: interpreterKey, Value: k.Interpreter})
	}
	return out
}

// Under is the key nested one level down, under another experiment: its
// experiment becomes its first segment ("pingpong/thread/futex" under
// "selfcheck" is "selfcheck/pingpong/thread/futex"), its interpreter kept.
func (k ArmKey) Under(experiment string) ArmKey {
	return ArmKey{Experiment: experiment, Segments: append([]Segment{Seg(k.Experiment)}, k.Segments...), Interpreter: k.Interpreter}
}

// Lift is the reverse of Under: the first segment becomes the experiment
// ("python/pingpong/thread/…" is "pingpong/thread/…"); ok is false when
// the key has no bare first segment to lift.
func (k ArmKey) Lift() (ArmKey, bool) {
	if len(k.Segments) == 0 || k.Segments[0].Key != "" {
		return k, false
	}
	return ArmKey{Experiment: k.Segments[0].Value, Segments: append([]Segment(nil), k.Segments[1:]...), Interpreter: k.Interpreter}, true
}

// JoinSegments writes segments as a name writes them, '/' between:
// a part of a name ("thread/futex") for a label or a group.
func JoinSegments(segs []Segment) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.String()
	}
	return strings.Join(parts, "/")
}

// splitName is the experiment of the arm named name and its segments as
// the name writes them (Written). A name ParseArmKey refuses is split at
// every '/' all the same.
func splitName(name string) (experiment string, segs []Segment) {
	if k, err := ParseArmKey(name); err == nil && k.String() == name {
		return k.Experiment, k.Written()
	}
	parts := strings.Split(name, "/")
	for _, p := range parts[1:] {
		if key, v, ok := strings.Cut(p, "="); ok && key != "" {
			segs = append(segs, Segment{Key: key, Value: v})
		} else {
			segs = append(segs, Seg(p))
		}
	}
	return parts[0], segs
}

// ExperimentOf is the experiment the arm named name leads with: "ring"
// for "ring/thread/futex/n=2".
func ExperimentOf(name string) string {
	e, _ := splitName(name)
	return e
}

// NameSegments are the segments of the arm named name after its
// experiment, as the name writes them (see Written).
func NameSegments(name string) []Segment {
	_, segs := splitName(name)
	return segs
}

// LastSegment is the last part of the arm named name, as written
// ("same-cpu", "n=100", "py=3.12"); the experiment for a name of one part.
func LastSegment(name string) string {
	e, segs := splitName(name)
	if len(segs) == 0 {
		return e
	}
	return segs[len(segs)-1].String()
}

// ShortNameIn is the arm named name without experiment, the part that
// tells it from the experiment's other arms: "thread/futex/same-cpu" in
// pingpong. A name that belongs to another experiment is returned whole.
func ShortNameIn(experiment, name string) string {
	e, segs := splitName(name)
	if e != experiment || len(segs) == 0 {
		return name
	}
	return JoinSegments(segs)
}

// ShortSegmentsIn are the segments ShortNameIn(experiment, name) writes:
// the name's after its experiment, or every part of a name that belongs
// to another experiment (or has no segments).
func ShortSegmentsIn(experiment, name string) []Segment {
	e, segs := splitName(name)
	if e != experiment || len(segs) == 0 {
		return append([]Segment{Seg(e)}, segs...)
	}
	return segs
}
