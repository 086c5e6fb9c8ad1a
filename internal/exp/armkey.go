package exp

import (
	"fmt"
	"strconv"
	"strings"
)

// ArmKey is an arm's identity, the one place its name is built and read.
// A name is the experiment, then the segments that place the arm in the
// experiment's plan, each bare ("thread", "same-cpu") or a parameter
// ("n=100", "gomaxprocs=all"), and last, when --python all ran it on one
// of several interpreters, "py=TAG":
//
//	pingpong/thread/futex/same-cpu
//	ring/goroutine/chan/n=10/same-cpu
//	interference/timer/none/hogs=0/gomaxprocs=1
//	hop/pytask/direct/py=3.12
//
// Experiments build keys (Key, Seg, KV) and find arms by keys, never by
// formatting or cutting strings, so that a rename is one change here or
// in the experiment's plan, and a lookup cannot silently miss.
type ArmKey struct {
	Experiment string
	Segments   []Segment
	// Interpreter is the "py=" tag (a CPython version, "free-threaded"),
	// empty when the run had one interpreter.
	Interpreter string
}

// Segment is one part of an arm's name: a bare word (Key empty) or a
// parameter Key=Value.
type Segment struct {
	Key, Value string
}

// interpreterKey is the last segment's key under --python all.
const interpreterKey = "py"

// Key builds an arm key from its experiment and segments.
func Key(experiment string, segs ...Segment) ArmKey {
	return ArmKey{Experiment: experiment, Segments: segs}
}

// Seg is a bare segment ("thread").
func Seg(word string) Segment { return Segment{Value: word} }

// KV is a parameter segment; v is formatted with %v ("n=100").
func KV(key string, v any) Segment {
	switch x := v.(type) {
	case string:
		return Segment{Key: key, Value: x}
	case int:
		return Segment{Key: key, Value: strconv.Itoa(x)}
	}
	return Segment{Key: key, Value: fmt.Sprint(v)}
}

// String is the arm's name.
func (k ArmKey) String() string {
	var b strings.Builder
	b.WriteString(k.Experiment)
	for _, s := range k.Segments {
		b.WriteByte('/')
		b.WriteString(s.String())
	}
	if k.Interpreter != "" {
		b.WriteString("/" + interpreterKey + "=")
		b.WriteString(k.Interpreter)
	}
	return b.String()
}

// String is the segment as it appears in a name.
func (s Segment) String() string {
	if s.Key == "" {
		return s.Value
	}
	return s.Key + "=" + s.Value
}

// ParseArmKey reads an arm's name. It refuses an empty name or segment;
// a last "py=…" segment becomes the interpreter.
func ParseArmKey(name string) (ArmKey, error) {
	parts := strings.Split(name, "/")
	if parts[0] == "" {
		return ArmKey{}, fmt.Errorf("arm name %q: no experiment", name)
	}
	k := ArmKey{Experiment: parts[0]}
	for i, p := range parts[1:] {
		if p == "" {
			return ArmKey{}, fmt.Errorf("arm name %q: empty segment", name)
		}
		key, v, ok := strings.Cut(p, "=")
		if !ok {
			k.Segments = append(k.Segments, Seg(p))
			continue
		}
		if key == interpreterKey && i == len(parts)-2 {
			k.Interpreter = v
			continue
		}
		k.Segments = append(k.Segments, Segment{Key: key, Value: v})
	}
	return k, nil
}

// MustParseArmKey is ParseArmKey for names the code itself wrote.
func MustParseArmKey(name string) ArmKey {
	k, err := ParseArmKey(name)
	if err != nil {
		panic(err)
	}
	return k
}

// Plan is the key without its interpreter: the arm's name in its
// experiment's plan, the same for every interpreter --python all ran.
func (k ArmKey) Plan() ArmKey {
	k.Interpreter = ""
	return k
}

// PlanName is the name of Plan of the arm named name; a name that does
// not parse is its own plan name.
func PlanName(name string) string {
	k, err := ParseArmKey(name)
	if err != nil {
		return name
	}
	return k.Plan().String()
}

// Interpreter is the "py=" tag of the arm named name, or "".
func Interpreter(name string) string {
	k, err := ParseArmKey(name)
	if err != nil {
		return ""
	}
	return k.Interpreter
}

// WithInterpreter is the key run on the interpreter tagged tag.
func (k ArmKey) WithInterpreter(tag string) ArmKey {
	k.Interpreter = tag
	return k
}

// Param is the value of the parameter segment key, if the key has one.
func (k ArmKey) Param(key string) (string, bool) {
	for _, s := range k.Segments {
		if s.Key == key {
			return s.Value, true
		}
	}
	return "", false
}

// Has says whether a bare segment word is in the key.
func (k ArmKey) Has(word string) bool {
	for _, s := range k.Segments {
		if s.Key == "" && s.Value == word {
			return true
		}
	}
	return false
}

// With returns the key with segs appended (a copy: k is unchanged).
func (k ArmKey) With(segs ...Segment) ArmKey {
	k.Segments = append(append([]Segment(nil), k.Segments...), segs...)
	return k
}

// Equal says whether two keys name the same arm.
func (k ArmKey) Equal(o ArmKey) bool { return k.String() == o.String() }
