// Package vary is diagnose --vary without the command line: the grid of
// values a user's command runs at, the interleaved shuffled rounds, one
// measured run of the command (RunOne), the figures per value with their
// spread and noise, the split of the extra CPU time into its direct part
// (switches × this host's cost per switch) and the rest, the answer on
// which value is best and whether that is significant, and the stored run
// (a diagnose run in the history) all of it becomes. internal/cli only
// wires flags and output to it.
package vary

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"unicode"
)

// MaxPoints bounds the grid: the product of the numbers of values of
// every --vary. It also bounds one --vary's list.
const MaxPoints = 64

// MinPoints is the fewest points a grid may have: one value compares
// with nothing.
const MinPoints = 2

// ErrBadInput is wrapped by every refusal of a --vary, the grid it makes,
// or the command it expands, before anything runs.
var ErrBadInput = errors.New("bad --vary")

// envName is what POSIX calls a portable environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Axis is one --vary NAME=V1,V2,…: the name set in the command's
// environment and put for {NAME} in its arguments, and its values in the
// order given.
type Axis struct {
	Name   string
	Values []string
}

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, a...))
}

// ParseAxis reads one --vary NAME=V1,V2[,…]. It refuses a NAME that is
// not an environment variable name, an empty list or an empty value, a
// value given twice, a value with a control character or a "/" (a value
// names its arm, where "/" separates parts), and more than MaxPoints
// values; each message names the bad part and what is allowed.
func ParseAxis(s string) (Axis, error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok {
		return Axis{}, bad("%q: want NAME=V1,V2[,…], e.g. T=2,32", s)
	}
	if !envName.MatchString(name) {
		return Axis{}, bad("%q: NAME %q is not an environment variable name; want letters, digits and _, not starting with a digit (e.g. T, GOMAXPROCS, OMP_NUM_THREADS)", s, name)
	}
	if list == "" {
		return Axis{}, bad("%q: the list of values is empty; want 1..%d values a --vary (%d..%d points in the grid), e.g. %s=2,32", s, MaxPoints, MinPoints, MaxPoints, name)
	}
	vals := strings.Split(list, ",")
	if len(vals) > MaxPoints {
		return Axis{}, bad("%q: %d values; want 1..%d values a --vary, and %d..%d points in the grid (the --vary flags' values multiplied)", s, len(vals), MaxPoints, MinPoints, MaxPoints)
	}
	seen := map[string]int{}
	for i, v := range vals {
		switch {
		case v == "":
			return Axis{}, bad("%q: value %d of %d is empty; want a list like %s=2,32", s, i+1, len(vals), name)
		case strings.ContainsRune(v, '/'):
			return Axis{}, bad("%q: value %q has a /; a value names its result (%s=%s), where / separates parts", s, v, name, v)
		case strings.IndexFunc(v, unicode.IsControl) >= 0:
			return Axis{}, bad("%q: value %q has a control character; want printable text", s, v)
		}
		if j, dup := seen[v]; dup {
			return Axis{}, bad("%q: value %q is given twice (values %d and %d); give each value once", s, v, j+1, i+1)
		}
		seen[v] = i
	}
	return Axis{Name: name, Values: vals}, nil
}

// Point is one place in the grid: a value for each axis, in axis order.
type Point struct {
	Names, Values []string
}

// Label is the point as its arm names it: "T=2", or "T=2/N=4" in a grid.
func (p Point) Label() string {
	parts := make([]string, len(p.Names))
	for i := range p.Names {
		parts[i] = p.Names[i] + "=" + p.Values[i]
	}
	return strings.Join(parts, "/")
}

// Params is the point as an arm's parameters.
func (p Point) Params() map[string]string {
	m := make(map[string]string, len(p.Names))
	for i := range p.Names {
		m[p.Names[i]] = p.Values[i]
	}
	return m
}

// Expand puts the point's values for {NAME} in every argument.
func (p Point) Expand(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		for j, n := range p.Names {
			a = strings.ReplaceAll(a, "{"+n+"}", p.Values[j])
		}
		out[i] = a
	}
	return out
}

// Env is base with NAME=value set for each axis, replacing any NAME
// already there.
func (p Point) Env(base []string) []string {
	set := p.Params()
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for i, n := range p.Names {
		out = append(out, n+"="+p.Values[i])
	}
	return out
}

// Grid is every combination of the axes' values, the first axis varying
// slowest. It refuses a NAME given by two axes, and a grid of fewer than
// MinPoints or more than MaxPoints points.
func Grid(axes []Axis) ([]Point, error) {
	seen := map[string]bool{}
	n := 1
	var shape []string
	for _, a := range axes {
		if seen[a.Name] {
			return nil, bad("%s is varied twice; give each NAME one --vary with all its values", a.Name)
		}
		seen[a.Name] = true
		n *= len(a.Values)
		shape = append(shape, fmt.Sprintf("%d %s", len(a.Values), a.Name))
		if n > MaxPoints {
			break
		}
	}
	switch {
	case len(axes) == 0:
		return nil, bad("no --vary given")
	case n > MaxPoints:
		return nil, bad("a grid of %s values is more than %d points; want %d..%d runs per round (values multiplied across --vary flags)", strings.Join(shape, " × "), MaxPoints, MinPoints, MaxPoints)
	case n < MinPoints:
		return nil, bad("%s gives 1 value in all; want %d..%d points to compare (e.g. %s=2,32)", axes[0].Name+"="+strings.Join(axes[0].Values, ","), MinPoints, MaxPoints, axes[0].Name)
	}
	points := []Point{{}}
	for _, a := range axes {
		var next []Point
		for _, p := range points {
			for _, v := range a.Values {
				next = append(next, Point{Names: append(append([]string(nil), p.Names...), a.Name), Values: append(append([]string(nil), p.Values...), v)})
			}
		}
		points = next
	}
	return points, nil
}

// Rounds is the order of the runs: reps rounds, each every point once in
// a new shuffled order, as a benchmark interleaves its repetitions so a
// drift of the machine falls on every value alike.
func Rounds(points, reps int, r *rand.Rand) [][]int {
	out := make([][]int, reps)
	for i := range out {
		out[i] = r.Perm(points)
	}
	return out
}
