package exp

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Pattern is an arm pattern as users type it, with one meaning wherever
// ctxlab takes one (run, list, budget --arm, serve --probes, report
// --chart): an experiment name ("pingpong"), an arm name, a leading part of
// arm names ("pingpong/thread"), or a glob in which `*` matches any run of
// characters, `/` included ("pingpong/thread/*" is every thread arm of
// pingpong, "*/futex/*" every futex arm), `?` one character and `[…]` one
// of a set ("[!…]" or "[^…]" one not in it), as in a shell.
//
// A selector (RegisterSelector) is a name typed like an experiment's that
// selects arms across experiments: "python" is every CPython arm of every
// experiment. It may lead a pattern: "python/pingpong" is the CPython arms
// of pingpong, selected as "pingpong" selects its arms (in the quick suite,
// only those marked Quick); "python/pingpong/pythread/*" names arms.
type Pattern struct {
	text string
	re   *regexp.Regexp
	// within, when set, is the selector every matched arm must also match;
	// selector is its name when the pattern is the selector alone or the
	// selector over one name without glob characters ("python/pingpong").
	within   *regexp.Regexp
	selector string
	first    string // the pattern's first part after any selector
}

// selector is a registered name for a set of arms across experiments.
type selector struct {
	doc   string
	globs []string
	re    *regexp.Regexp
}

var selectors = map[string]*selector{}

// RegisterSelector makes name select every arm that one of globs matches,
// in every experiment, the way an experiment's name selects its arms (in
// the quick suite, only those marked Quick). Experiments register
// selectors in init(); a name that is also an experiment's is a
// programming error, and so is a bad glob.
func RegisterSelector(name, doc string, globs ...string) {
	if _, dup := selectors[name]; dup || strings.ContainsAny(name, "/*?[\\") || len(globs) == 0 {
		panic("exp: bad or duplicate selector " + name)
	}
	var parts []string
	for _, g := range globs {
		p, err := ParsePattern(g)
		if err != nil {
			panic(err)
		}
		parts = append(parts, p.re.String())
	}
	selectors[name] = &selector{doc: doc, globs: globs, re: regexp.MustCompile(strings.Join(parts, "|"))}
}

// Selectors lists the registered selectors, sorted, each with what it
// selects.
func Selectors() []string {
	var out []string
	for n := range selectors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SelectorDoc says what the selector name selects ("" when there is none).
func SelectorDoc(name string) string {
	if s, ok := selectors[name]; ok {
		return s.doc + " (" + strings.Join(s.globs, ", ") + ")"
	}
	return ""
}

// ParsePattern checks a pattern; the error names it and says what is wrong.
func ParsePattern(s string) (Pattern, error) {
	if strings.TrimSpace(s) == "" {
		return Pattern{}, fmt.Errorf("empty arm pattern; want an experiment, an arm or a glob such as pingpong/thread/*")
	}
	if !utf8.ValidString(s) {
		return Pattern{}, fmt.Errorf("arm pattern %q is not UTF-8 text", s)
	}
	head, rest, _ := strings.Cut(strings.TrimRight(s, "/"), "/")
	if sel, ok := selectors[head]; ok {
		if rest == "" {
			return Pattern{text: s, re: regexp.MustCompile(`^`), within: sel.re, selector: head}, nil
		}
		p, err := ParsePattern(rest)
		if err != nil {
			return Pattern{}, fmt.Errorf("arm pattern %q: %v", s, err)
		}
		p.text, p.within = s, sel.re
		if !strings.ContainsAny(rest, `/*?[\`) { // one plain name, an experiment's (Select checks)
			p.selector = head
		}
		return p, nil
	}
	text := s
	if t := strings.TrimRight(s, "/"); t != "" {
		s = t // "pingpong/thread/" (a completed prefix) is "pingpong/thread"
	}
	var re strings.Builder
	re.WriteString(`^(?:`)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*':
			re.WriteString(`.*`)
		case '?':
			re.WriteString(`.`)
		case '[':
			end := strings.IndexByte(s[i+1:], ']')
			if end == 0 { // "[]…]": a ']' first is a member
				if e := strings.IndexByte(s[i+2:], ']'); e >= 0 {
					end = e + 1
				} else {
					end = -1
				}
			}
			if end < 0 {
				return Pattern{}, fmt.Errorf("arm pattern %q: '[' at %d has no closing ']'", s, i)
			}
			set := s[i+1 : i+1+end]
			if set[0] == '!' {
				set = "^" + set[1:]
			}
			re.WriteString("[" + strings.ReplaceAll(set, `\`, `\\`) + "]")
			i += end + 1
		case '\\':
			if i+1 < len(s) {
				i++
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			re.WriteString(regexp.QuoteMeta(s[i : i+n]))
			i += n - 1
		default:
			_, n := utf8.DecodeRuneInString(s[i:])
			re.WriteString(regexp.QuoteMeta(s[i : i+n]))
			i += n - 1
		}
	}
	// A pattern also selects the arms under a leading part it names.
	re.WriteString(`)(?:/.*)?$`)
	r, err := regexp.Compile(re.String())
	if err != nil {
		return Pattern{}, fmt.Errorf("arm pattern %q: %v", s, err)
	}
	first, _, _ := strings.Cut(s, "/")
	return Pattern{text: text, re: r, first: first}, nil
}

// MustPattern is ParsePattern for patterns written in the code.
func MustPattern(s string) Pattern {
	p, err := ParsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Match reports whether the arm called name is selected.
func (p Pattern) Match(name string) bool {
	return p.re != nil && p.re.MatchString(name) && (p.within == nil || p.within.MatchString(name))
}

// Selector is the selector's name when the pattern is a selector alone
// ("python"), or a selector over an experiment's name ("python/pingpong"):
// it then selects like an experiment's name, across all (Experiment() is
// "") or within that one.
func (p Pattern) Selector() string { return p.selector }

// String is the pattern as typed.
func (p Pattern) String() string { return p.text }

// IsGlob reports whether the pattern has glob characters, i.e. may name
// more than one experiment or arm by a wildcard.
func (p Pattern) IsGlob() bool { return p.selector != "" || strings.ContainsAny(p.text, "*?[") }

// Experiment returns the experiment a pattern names by its first part, or
// "" when that part is a glob (it may then select arms of several).
func (p Pattern) Experiment() string {
	if strings.ContainsAny(p.first, `*?[\`) {
		return ""
	}
	return p.first
}

// Match reports whether pattern selects the arm called name; a malformed
// pattern selects nothing (ParsePattern says why).
func Match(pattern, name string) bool {
	p, err := ParsePattern(pattern)
	return err == nil && p.Match(name)
}
