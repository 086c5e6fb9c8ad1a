package exp

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Metric declares one figure an experiment's arms report beside their
// median, where the figure is born: its name, its unit, which direction is
// better, and what it says. The name is also the figure's key in the result
// JSON (arm "metrics") and its unit in the bench format.
type Metric struct {
	// Name follows the one convention NameConvention describes, e.g.
	// "oncpu-ns/element", "rss-bytes/worker", "direct-ratio".
	Name string
	// Unit is what one count of the figure is: "ns", "ms", "bytes",
	// "switches", "ratio", "samples", "flag" …
	Unit   string
	Better Better
	Doc    string
	// CPUPerOp marks a figure that is the on-CPU time per op of all the
	// arm's workers, in ns: what price and the budget fall back to when
	// the run recorded no CPU time per op of its own.
	CPUPerOp bool
}

// Better says which direction of a metric is an improvement.
type Better string

// Directions of Better.
const (
	LowerIsBetter  Better = "lower"
	HigherIsBetter Better = "higher"
	// NotRanked marks a figure that describes rather than scores (a count
	// of workers, a flag).
	NotRanked Better = ""
)

// NameConvention is the rule every metric name follows: lower-case plain
// words joined by '-', the unit as the last word, then optionally "/" and
// what it is per (benchstat's custom-unit shape, "x/op"):
// "runq-wait-ns/element", "voluntary-switches/ms", "go-sched-latency-p99-ns".
// Ratios end in "-ratio", flags in their question ("p50-in-pile").
const NameConvention = "lower-case words joined by '-', unit last, optionally /per-what"

var metricName = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*(/[a-z0-9]+(-[a-z0-9]+)*)?$`)

// ValidMetricName reports whether name follows NameConvention.
func ValidMetricName(name string) bool { return metricName.MatchString(name) }

// CounterMetrics are the figures the runner derives from perf counters for
// any experiment whose arms count them (perf stat's own derived figures).
var CounterMetrics = []Metric{
	{Name: "ipc", Unit: "ratio", Better: HigherIsBetter, Doc: "instructions per cycle"},
	{Name: "llc-load-misses/1k-instructions", Unit: "misses", Better: LowerIsBetter, Doc: "last-level cache load misses per 1 000 instructions"},
	{Name: "dtlb-load-misses/1k-instructions", Unit: "misses", Better: LowerIsBetter, Doc: "data TLB load misses per 1 000 instructions"},
	{Name: "branch-misses/1k-instructions", Unit: "misses", Better: LowerIsBetter, Doc: "branch mispredictions per 1 000 instructions"},
}

// DeclaredMetric returns the declaration of name for experiment spec: its
// own metrics, then the counter-derived ones.
func (s *Spec) DeclaredMetric(name string) (Metric, bool) {
	for _, ms := range [][]Metric{s.Metrics, CounterMetrics} {
		for _, m := range ms {
			if m.Name == name {
				return m, true
			}
		}
	}
	return Metric{}, false
}

// Undeclared lists the names in metrics that spec does not declare, sorted.
func (s *Spec) Undeclared(metrics map[string]float64) []string {
	var out []string
	for k := range metrics {
		if _, ok := s.DeclaredMetric(k); !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// CheckMetrics verifies an experiment's declarations: names follow the
// convention, each is declared once, and each has a unit and a doc.
func (s *Spec) CheckMetrics() error {
	seen := map[string]bool{}
	var bad []string
	for _, m := range s.Metrics {
		switch {
		case !ValidMetricName(m.Name):
			bad = append(bad, fmt.Sprintf("%q does not follow the convention (%s)", m.Name, NameConvention))
		case seen[m.Name]:
			bad = append(bad, fmt.Sprintf("%q declared twice", m.Name))
		case m.Unit == "" || m.Doc == "":
			bad = append(bad, fmt.Sprintf("%q has no unit or no doc", m.Name))
		case m.Better != LowerIsBetter && m.Better != HigherIsBetter && m.Better != NotRanked:
			bad = append(bad, fmt.Sprintf("%q: better is %q", m.Name, m.Better))
		}
		seen[m.Name] = true
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s metrics: %s", s.Name, strings.Join(bad, "; "))
	}
	return nil
}
