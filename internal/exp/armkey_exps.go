package exp

import "strings"

// The edits the experiments' analyses make to a key: the same arm at
// another placement or parameter, or the arm a key was derived from.
// Each returns a copy; k is unchanged.

// Replace is k with its first segment equal to old replaced by repl (k
// itself when it has no such segment): "…/same-cpu" → "…/unpinned".
func (k ArmKey) Replace(old, repl Segment) ArmKey {
	for i, s := range k.Segments {
		if s == old {
			k.Segments = append([]Segment(nil), k.Segments...)
			k.Segments[i] = repl
			return k
		}
	}
	return k
}

// SetParam is k with the value of its parameter key set to v (formatted
// as KV formats it); a key without that parameter is returned as it is.
func (k ArmKey) SetParam(key string, v any) ArmKey {
	for _, s := range k.Segments {
		if s.Key == key {
			return k.Replace(s, KV(key, v))
		}
	}
	return k
}

// Without is k without its parameter segments named key.
func (k ArmKey) Without(key string) ArmKey {
	segs := make([]Segment, 0, len(k.Segments))
	for _, s := range k.Segments {
		if s.Key != key {
			segs = append(segs, s)
		}
	}
	k.Segments = segs
	return k
}

// InterpreterSegment is the last segment of k's name when it ran on one
// of several interpreters ("py=3.12"), "" when it did not: how readings
// name the interpreter.
func (k ArmKey) InterpreterSegment() string {
	if k.Interpreter == "" {
		return ""
	}
	return Segment{Key: interpreterKey, Value: k.Interpreter}.String()
}

// InExperiment is k's name without its experiment: "timer/none/hogs=0/gomaxprocs=1".
func (k ArmKey) InExperiment() string {
	k.Experiment = ""
	return strings.TrimPrefix(k.String(), "/")
}
