package exp

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Option is one --set key an experiment understands, declared where the
// experiment is: its name, what it does, and how a value is read. Parse
// checks a value and returns what the arms read, or an error naming the
// value and what is allowed. A key named EXPERIMENT.name belongs to that
// experiment; any other is shared (RegisterArmOption says which arms it
// changes). Every --set value is parsed once, before any arm is built
// (ParseSettings); arms read the parsed value with Get or Or.
type Option[T any] struct {
	Key   string
	Doc   string
	Parse func(value string) (T, error)
	// Values, if set, are the values shell completion offers.
	Values []string
}

// Get returns the option's value in p, as Parse made it, and whether
// --set gave one.
func (o *Option[T]) Get(p Params) (T, bool) {
	v, ok := p.Options.val[o.Key]
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Or returns the option's value in p, or def when --set gave none.
func (o *Option[T]) Or(p Params, def T) T {
	if v, ok := o.Get(p); ok {
		return v
	}
	return def
}

// Declared is an Option of any type, as the registry holds it. Only
// this package's Option is one.
type Declared interface {
	OptionKey() string
	OptionDoc() string
	OptionValues() []string
	parse(value string) (any, error)
}

// OptionKey is the option's --set key.
func (o *Option[T]) OptionKey() string { return o.Key }

// OptionDoc says what the option does.
func (o *Option[T]) OptionDoc() string { return o.Doc }

// OptionValues are the values shell completion offers (nil: none).
func (o *Option[T]) OptionValues() []string { return o.Values }

func (o *Option[T]) parse(value string) (any, error) { return o.Parse(value) }

// Settings are a run's --set values, each checked and parsed once by its
// Option. The zero value has none.
type Settings struct {
	text map[string]string // as given
	val  map[string]any    // as parsed
}

// ParseSettings checks every key=value of a run against the declared
// options and parses each value once: an unknown key is an error naming
// the keys there are, a bad value its option's error. Keys are taken in
// sorted order, so the error is the same however they were given.
func ParseSettings(given map[string]string) (Settings, error) {
	s := Settings{text: map[string]string{}, val: map[string]any{}}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o, ok := options[k]
		if !ok {
			return Settings{}, fmt.Errorf("--set %s: unknown option; options are %s", k, strings.Join(OptionNames(), ", "))
		}
		v, err := o.parse(given[k])
		if err != nil {
			return Settings{}, err
		}
		s.text[k], s.val[k] = given[k], v
	}
	return s, nil
}

// Text is the value --set gave key, as given (for messages), and whether
// it gave one.
func (s Settings) Text(key string) (string, bool) {
	v, ok := s.text[key]
	return v, ok
}

// options are the declared --set options by key.
var options = map[string]Declared{}

// optionArms says, for a key that belongs to no one experiment, which
// arms it changes; an experiment without such arms does not list it.
var optionArms = map[string]func(Arm) bool{}

// RegisterOption declares a --set option (in an experiment's init()); it
// panics on a duplicate key (a programming error).
func RegisterOption(o Declared) {
	if _, dup := options[o.OptionKey()]; dup {
		panic("exp: duplicate option " + o.OptionKey())
	}
	options[o.OptionKey()] = o
}

// RegisterArmOption declares a shared --set option that changes the arms
// applies accepts, in whichever experiment they are (python: the CPython
// arms).
func RegisterArmOption(o Declared, applies func(Arm) bool) {
	RegisterOption(o)
	optionArms[o.OptionKey()] = applies
}

// LookupOption returns the option declared for key.
func LookupOption(key string) (Declared, bool) {
	o, ok := options[key]
	return o, ok
}

// OptionsOf lists, sorted, the --set keys that change the experiment
// name's arms: its own (name.key) and those that apply to one of arms.
func OptionsOf(name string, arms []Arm) []string {
	var out []string
	for _, k := range OptionNames() {
		own, _, scoped := strings.Cut(k, ".")
		switch {
		case scoped && own == name:
			out = append(out, k)
		case scoped:
		case optionArms[k] == nil:
			out = append(out, k)
		default:
			for _, a := range arms {
				if optionArms[k](a) {
					out = append(out, k)
					break
				}
			}
		}
	}
	return out
}

// OptionNames lists the --set keys, sorted.
func OptionNames() []string {
	out := make([]string, 0, len(options))
	for k := range options {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// StringOption is an option whose value is taken as given.
func StringOption(key, doc string) *Option[string] {
	return &Option[string]{Key: key, Doc: doc, Parse: func(v string) (string, error) { return v, nil }}
}

// IntOption is an option whose value is a whole number in lo..hi.
func IntOption(key, doc string, lo, hi int) *Option[int] {
	return &Option[int]{Key: key, Doc: doc, Parse: func(s string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("--set %s=%s: %q is not a whole number; want %d..%d", key, s, s, lo, hi)
		}
		if n < lo || n > hi {
			return 0, fmt.Errorf("--set %s=%d: must be in %d..%d", key, n, lo, hi)
		}
		return n, nil
	}}
}

// MaxOptionList bounds a list option: each value is at least one arm.
const MaxOptionList = 64

// IntListOption is an option whose value is a comma-separated list of at
// most MaxOptionList whole numbers, each in lo..hi.
func IntListOption(key, doc string, lo, hi int) *Option[[]int] {
	return &Option[[]int]{Key: key, Doc: doc, Parse: func(s string) ([]int, error) {
		if n := strings.Count(s, ",") + 1; n > MaxOptionList {
			return nil, fmt.Errorf("--set %s: %d values; at most %d, each %d..%d", key, n, MaxOptionList, lo, hi)
		}
		var out []int
		for _, part := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return nil, fmt.Errorf("--set %s=%s: %q is not a whole number; want a list like 1,10,50 with values %d..%d", key, s, part, lo, hi)
			}
			if n < lo || n > hi {
				return nil, fmt.Errorf("--set %s=%s: %d must be in %d..%d", key, s, n, lo, hi)
			}
			out = append(out, n)
		}
		return out, nil
	}}
}

// WordsOption is an option whose value is a comma-separated list of
// words from choices (what says what they are: "pattern", "substrate"),
// each once; the error lists the choices in words.
func WordsOption(key, doc, what string, choices []string, want string) *Option[[]string] {
	return &Option[[]string]{Key: key, Doc: doc, Values: choices, Parse: func(s string) ([]string, error) {
		var out []string
		for _, x := range strings.Split(s, ",") {
			x = strings.TrimSpace(x)
			if !contains(choices, x) {
				return nil, fmt.Errorf("--set %s=%s: %q is not a %s; want %s", key, s, x, what, want)
			}
			if !contains(out, x) {
				out = append(out, x)
			}
		}
		return out, nil
	}}
}
