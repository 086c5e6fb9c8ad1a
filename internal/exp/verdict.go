package exp

import (
	"math"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// What an experiment declares about itself beyond its arms: the published
// figures the report shows beside them, its rows and lines on the verdict
// screen, and the arms price reads a switch's cost from. report, price and
// serve read these declarations; none of them names an experiment.

// Reference is a published figure (README: Published figures) that the report shows beside
// an arm of the experiment declaring it when the arm matches: a substrate
// in Substrates (if set), "substrate/mechanism/name" containing one of
// Match (if set), and the parameter Param equal to Value (if set). With
// none of the three it is about the experiment as a whole. Figures are
// quoted as published, never adjusted.
type Reference struct {
	// Substrates the arm must have one of: a CPython figure belongs only
	// beside a CPython arm, where it compares the same thing.
	Substrates []string
	Match      []string // substrings of "substrate/mechanism/name"; any one suffices
	Param      string   // e.g. "n"; the arm's params or its name's key=value parts
	Value      string
	Ns         float64 // the figure in ns, 0 when it is not one number
	Text       string  // the figure with its source and conditions
}

// PerArm says whether the reference is matched arm by arm (else it is
// about the experiment as a whole).
func (r Reference) PerArm() bool {
	return len(r.Substrates) > 0 || len(r.Match) > 0 || r.Param != ""
}

// Matches says whether the reference belongs beside arm a.
func (r Reference) Matches(a result.Arm) bool {
	if len(r.Substrates) > 0 && !contains(r.Substrates, a.Substrate) {
		return false
	}
	if len(r.Match) > 0 {
		hay := a.Substrate + "/" + a.Mechanism + "/" + a.Name
		ok := false
		for _, m := range r.Match {
			if strings.Contains(hay, m) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	if r.Param != "" {
		ps := ArmParams(a)
		v, ok := ps[r.Param]
		if !ok {
			// Accept the usual aliases for a count of workers or tasks.
			for _, alias := range []string{"n", "k", "workers", "w", "tasks"} {
				if v2, ok2 := ps[alias]; ok2 {
					v, ok = v2, true
					break
				}
			}
		}
		if !ok || v != r.Value {
			return false
		}
	}
	return true
}

// ArmParams are an arm's parameters: the key=value parts of its name,
// overridden by its recorded params.
func ArmParams(a result.Arm) map[string]string {
	m := map[string]string{}
	for _, s := range NameSegments(a.Name) {
		if s.Key != "" {
			m[s.Key] = s.Value
		}
	}
	for k, v := range a.Params {
		m[k] = v
	}
	return m
}

// Headline is one row of the verdict's handoff table: a kind of worker,
// the arms that measure it on one CPU and across CPUs (or unpinned), each
// list in order of preference (the first measured one is shown), and the
// published figure in short form. PublishedP50 says the published figure
// is a p50, so the verdict puts this run's sampled p50 beside it.
type Headline struct {
	Label        string
	One, Across  []string
	Published    string
	PublishedP50 bool
}

// Block is a part of the verdict screen, in screen order.
type Block int

// The verdict's blocks: what a handoff costs (the Headline table and the
// lines under it), what one busy worker does to the tail, what a hop adds
// to a microsecond operation, the indirect cost of cold caches, and what
// handoffs cost in CPU.
const (
	BlockHandoff Block = iota
	BlockTail
	BlockHop
	BlockIndirect
	BlockBudget
	NumBlocks
)

// VerdictRate is the handoff rate the verdict prices in CPU.
const VerdictRate = 10000

// VerdictSection is what one experiment writes in one block of the
// verdict. A block shows the first Heading its experiments give, then
// every experiment's Lines, Notes and Foot, each in experiment order.
// The screen has room for about 40 lines: Lines (the figures) are always
// shown; More (figures of a second interpreter or build, --python all),
// Notes (readings of them) and Foot (the published figures, quoted from
// other machines) give way, Foot first, then More, when the screen is
// full; More that gave way is counted on a line that says where to find
// it.
type VerdictSection struct {
	Block   Block
	Heading string
	Lines   []string
	More    []string
	Notes   []string
	Foot    []string
}

// VerdictRun is the run a verdict is read from: its measured arms by name
// (every experiment's; a run may hold only some of them).
type VerdictRun struct {
	Run  *result.Run
	arms map[string]result.Arm
	// plan holds the arms run on one of several interpreters (--python
	// all) by their plan name (ArmKey.Plan), the first in run order, for
	// Pick to fall back on.
	plan map[string]result.Arm
	// few and fewPlan hold the arms whose repetitions held too few ops
	// (result.StatusTooFewOps) the same way, for TooFew.
	few, fewPlan map[string]result.Arm
}

// NewVerdictRun indexes run's measured arms (result.Arm.HasFigure), and
// apart from them those with too few ops.
func NewVerdictRun(run *result.Run) *VerdictRun {
	v := &VerdictRun{Run: run, arms: map[string]result.Arm{}, plan: map[string]result.Arm{},
		few: map[string]result.Arm{}, fewPlan: map[string]result.Arm{}}
	for _, a := range run.Arms {
		switch {
		case Measured(a):
			index(v.arms, v.plan, a)
		case a.Status == result.StatusTooFewOps:
			index(v.few, v.fewPlan, a)
		}
	}
	return v
}

// index puts a in byName, and in byPlan by its plan name when it ran on
// one of several interpreters and is the first there.
func index(byName, byPlan map[string]result.Arm, a result.Arm) {
	byName[a.Name] = a
	if k, err := ParseArmKey(a.Name); err == nil && k.Interpreter != "" {
		if _, seen := byPlan[k.Plan().String()]; !seen {
			byPlan[k.Plan().String()] = a
		}
	}
}

// Measured says whether an arm has a figure to show (result.Arm.HasFigure:
// never one from too few ops).
func Measured(a result.Arm) bool { return a.HasFigure() }

// Pick returns the first measured arm of names. An arm run under
// --python all, whose key carries an interpreter, is found by its plan
// name too (the first interpreter's arm in run order).
func (v *VerdictRun) Pick(names ...string) (result.Arm, bool) {
	for _, n := range names {
		if a, ok := v.arms[n]; ok {
			return a, true
		}
		if a, ok := v.plan[n]; ok {
			return a, true
		}
	}
	return result.Arm{}, false
}

// TooFew returns the first of names whose repetitions held too few ops
// (result.StatusTooFewOps), found as Pick finds an arm: where Pick finds
// none, the verdict says "too few ops" instead of a figure.
func (v *VerdictRun) TooFew(names ...string) (result.Arm, bool) {
	for _, n := range names {
		if a, ok := v.few[n]; ok {
			return a, true
		}
		if a, ok := v.fewPlan[n]; ok {
			return a, true
		}
	}
	return result.Arm{}, false
}

// Where returns the measured arms of experiment that keep returns true
// for, in run order.
func (v *VerdictRun) Where(experiment string, keep func(a result.Arm) bool) []result.Arm {
	return where(v.Run.Arms, v.arms, experiment, keep)
}

// WhereTooFew is Where over the arms whose repetitions held too few ops:
// those a line would have shown, to say "too few ops" in their place.
func (v *VerdictRun) WhereTooFew(experiment string, keep func(a result.Arm) bool) []result.Arm {
	return where(v.Run.Arms, v.few, experiment, keep)
}

// WhereAny is Where over the measured arms and those with too few ops
// together, in run order: a line that shows each arm's figure or says
// "too few ops" in its place (result.Arm.HasFigure tells which).
func (v *VerdictRun) WhereAny(experiment string, keep func(a result.Arm) bool) []result.Arm {
	var out []result.Arm
	for _, a := range v.Run.Arms {
		_, m := v.arms[a.Name]
		_, f := v.few[a.Name]
		if (m || f) && a.Experiment == experiment && keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// where is the arms of experiment in in, in run order, that keep keeps.
func where(arms []result.Arm, in map[string]result.Arm, experiment string, keep func(a result.Arm) bool) []result.Arm {
	var out []result.Arm
	for _, a := range arms {
		if _, ok := in[a.Name]; ok && a.Experiment == experiment && keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// Figure is an arm's median with its min–max spread, both ends in the
// median's own unit so the range reads at a glance: "6.69 µs (6.68–6.78)",
// "1.93 µs (0.923–2.67)", "552 ns (460–1700)".
func Figure(a result.Arm) string {
	return result.FormatValue(a.Median, a.Unit) + " (" + Spread(a) + ")"
}

// Spread is an arm's min–max in the unit its median is shown in, without
// the unit: "6.68–6.78" beside "6.69 µs".
func Spread(a result.Arm) string {
	div := scaleOf(a.Median, a.Unit)
	return plainNumber(a.Min/div) + "–" + plainNumber(a.Max/div)
}

// Span is "lo–hi" with the unit once when both ends share it.
func Span(lo, hi float64, unit string) string {
	l, h := result.FormatValue(lo, unit), result.FormatValue(hi, unit)
	li, hi2 := strings.LastIndexByte(l, ' '), strings.LastIndexByte(h, ' ')
	if li > 0 && hi2 > 0 && l[li:] == h[hi2:] {
		l = l[:li]
	}
	return l + "–" + h
}

// Change is a duration before → after, its unit said once when both
// share it: "32.5 → 32.3 µs", "134 µs → 19.7 ms".
func Change(fromNs, toNs float64) string {
	f, t := result.FormatNs(fromNs), result.FormatNs(toNs)
	fi, ti := strings.LastIndexByte(f, ' '), strings.LastIndexByte(t, ' ')
	if fi > 0 && ti > 0 && f[fi:] == t[ti:] {
		f = f[:fi]
	}
	return f + " → " + t
}

// scaleOf is what result.FormatValue divides v by to show it in unit:
// 1e3 for a figure it shows in µs, result.KiB for one in KiB, 1 for a
// unit it does not scale.
func scaleOf(v float64, unit string) float64 {
	switch {
	case unit == "" || strings.HasPrefix(unit, "ns/"):
		for _, s := range []float64{1e9, 1e6, 1e3} {
			if v >= s {
				return s
			}
		}
	case unit == "B/op" || unit == "bytes":
		for _, u := range result.ByteUnits {
			if math.Abs(v) >= u.Size {
				return u.Size
			}
		}
	}
	return 1
}

// plainNumber writes x with three significant digits and never an
// exponent: 0.923, 6.68, 460, 1700.
func plainNumber(x float64) string {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	decimals := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	if decimals < 0 { // 1699 → 1700: three significant digits
		p := math.Pow(10, float64(-decimals))
		x, decimals = math.Round(x/p)*p, 0
	}
	if decimals > 6 {
		decimals = 6
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// SameWithin is how far apart (as a ratio, larger ÷ smaller) two figures
// may be and still read "about the same": the repetitions of one arm on a
// quiet machine spread about this much.
const SameWithin = 1.1

// Compare words x against ref, the one rule every reading follows:
// "about the same" when they are within SameWithin of each other, else
// "N× more" or "N× less" in the words given ("slower"/"faster",
// "higher"/"lower"), N the larger over the smaller, so a multiple below
// SameWithin never reads as lower or higher.
func Compare(x, ref float64, more, less string) string {
	if x <= 0 || ref <= 0 || math.IsInf(x, 0) || math.IsInf(ref, 0) {
		return "not comparable"
	}
	r, word := x/ref, more
	if r < 1 {
		r, word = ref/x, less
	}
	if r < SameWithin {
		return "about the same"
	}
	return Multiple(r) + " " + word
}

// Multiple writes a ratio as a multiple: "1.4×", "19×", "410×".
func Multiple(r float64) string {
	if r < 9.95 {
		return strconv.FormatFloat(r, 'f', 1, 64) + "×"
	}
	return strconv.FormatFloat(r, 'f', 0, 64) + "×"
}

// ShortName is an arm's name without its experiment (ShortNameIn).
func ShortName(a result.Arm) string { return ShortNameIn(a.Experiment, a.Name) }

// CostPoint is the indirect cost of one context switch at one working-set
// size: what a switch costs on top of the direct cost once the caches are
// cold (IndirectCoster).
type CostPoint struct {
	Bytes int64
	Label string // the working set as the experiment names it ("256KiB")
	Ns    float64
	Arm   string // the arm whose round trips measured it
}
