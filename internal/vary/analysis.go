package vary

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Experiment is the experiment name of a stored diagnose --vary run's
// arms, and its arms' name prefix.
const Experiment = "diagnose"

// Analysis is a measured grid with everything read from it.
type Analysis struct {
	Command  []string
	Points   []Point
	Reps     int
	Settle   time.Duration
	Interval time.Duration
	// WorkFrom says where the units of work came from ("--work 1e6",
	// "--work-from REGEX"), "" when not given.
	WorkFrom    string
	Samples     []Sample
	Interrupted bool
	PerUnit     bool
	Values      []Value
	Splits      []Split
	Decision    Decision
	Cost        Cost
}

// Analyze summarizes the samples of the grid, splits each value's extra
// CPU time against the first value's (the first that finished), and
// decides.
func Analyze(a *Analysis, cost Cost, host *sysinfo.Host, startLoad float64) {
	a.Cost = cost
	a.PerUnit = PerUnit(a.Samples)
	a.Values = Summarize(a.Points, a.Samples, a.PerUnit, host, startLoad)
	a.Splits = nil
	base := -1
	for i, v := range a.Values {
		if !v.OK() {
			continue
		}
		if base < 0 {
			base = i
			continue
		}
		a.Splits = append(a.Splits, NewSplit(a.Values[base], v, a.PerUnit, cost))
	}
	a.Decision = Decide(a.Values, a.PerUnit)
}

// Per is what one figure is per: "run", or "unit" of work.
func (a *Analysis) Per() string {
	if a.PerUnit {
		return "unit"
	}
	return "run"
}

// WorkCheck says whether the values did the same work: from the
// instructions per unit (per run without units of work) where the
// machine counts them, and otherwise that it cannot be checked.
func (a *Analysis) WorkCheck() string {
	var lo, hi *Value
	for i := range a.Values {
		v := &a.Values[i]
		if !v.OK() {
			continue
		}
		st := v.Fig(KeyInstructions)
		if !st.OK() {
			assume := "ctxlab assumes every value does the same work"
			if a.PerUnit {
				assume = "the figures are per unit of work as " + a.WorkFrom + " gives it"
			}
			return fmt.Sprintf("work: cannot be checked here — instructions: unsupported: %s; %s", st.Unsupported, assume)
		}
		if lo == nil || st.Median < lo.Fig(KeyInstructions).Median {
			lo = v
		}
		if hi == nil || st.Median > hi.Fig(KeyInstructions).Median {
			hi = v
		}
	}
	if lo == nil {
		return ""
	}
	l, h := lo.Fig(KeyInstructions).Median, hi.Fig(KeyInstructions).Median
	if l <= 0 {
		return "work: cannot be checked — a value counted no instructions"
	}
	d := h/l - 1
	if d > SameWork {
		return fmt.Sprintf("work: not the same work — instructions per %s differ by %.1f%% (%s %s, %s %s), more than %.0f%%: compare per unit of work (--work, --work-from)",
			a.Per(), 100*d, lo.Point.Label(), Format(KindCount, l), hi.Point.Label(), Format(KindCount, h), 100*SameWork)
	}
	return fmt.Sprintf("work: the same work — instructions per %s within %.1f%% across the values", a.Per(), 100*d)
}

// Reading is the whole reading below the table: the work check, each
// split, the decision.
func (a *Analysis) Reading() []string {
	var out []string
	if w := a.WorkCheck(); w != "" {
		out = append(out, w)
	}
	for _, s := range a.Splits {
		out = append(out, s.Lines()...)
	}
	out = append(out, a.Decision.Lines(a.Values)...)
	for _, c := range a.Comparisons() {
		out = append(out, fmt.Sprintf("  round by round (each round one run of each value, in shuffled order): %s is %s", c.Label, exp.PairWords(c, "slower", "faster")))
	}
	return out
}

// Arms are the values as a stored run's arms (a diagnose run in the
// history: show, compare and report read them): one per value, named
// diagnose/NAME=V, its rep_means the wall time of each finished run (per
// unit of work when known), its rep_metrics the other figures of each run,
// and the split against the first value in its metrics.
func (a *Analysis) Arms() []result.Arm {
	op := "run of the command"
	if a.PerUnit {
		op = "unit of work"
	}
	var arms []result.Arm
	splitOf := map[string]Split{}
	for _, s := range a.Splits {
		splitOf[s.Other] = s
	}
	for _, v := range a.Values {
		r := result.Arm{Name: v.Point.ArmName(), Experiment: Experiment, Substrate: "command", Params: v.Point.Params(),
			Op: op, Unit: "ns/" + a.Per(), Placement: "unpinned", Status: v.Status, Reason: v.Reason}
		for _, s := range v.Runs {
			r.DurationNs += s.WallNs
		}
		r.Notes = append(r.Notes, v.Notes...)
		if !v.OK() {
			arms = append(arms, r)
			continue
		}
		a.figures(&r, v, splitOf)
		arms = append(arms, r)
	}
	return arms
}

// figures fills the arm of a value whose runs count: its summary, the
// switches, CPU and counters per op, every figure as a metric, the split
// of its extra time, and where each figure came from.
func (a *Analysis) figures(r *result.Arm, v Value, splitOf map[string]Split) {
	r.Ops = 1
	if a.PerUnit {
		var ws []float64
		for _, s := range v.OKRuns {
			ws = append(ws, s.Work)
		}
		r.Ops = int64(math.Round(measure.Summarize(ws).Median))
	}
	r.RepMeans = v.Wall.Values
	r.Median, r.Min, r.Max = v.Wall.Median, v.Wall.Min, v.Wall.Max
	r.Noise = v.Noise
	if vo, in := v.Fig(KeyVoluntary), v.Fig(KeyInvoluntary); vo.OK() && in.OK() {
		r.Switches = &result.Switches{Voluntary: vo.Median, Involuntary: in.Median}
	}
	if m := v.Fig(KeyMigrations); m.OK() {
		r.Migrations = ptr(m.Median)
	}
	if c := v.Fig(KeyCPU); c.OK() {
		r.CPUNsPerOp = ptr(c.Median)
	}
	if q := v.Fig(KeyRunq); q.OK() {
		r.RunqNsPerOp = ptr(q.Median)
	}
	for _, ev := range measure.Events {
		st := statOf(Figure{Total: true, Get: perf(ev.Name)}, v.OKRuns, a.PerUnit)
		c := result.Counter{Name: ev.Name, Unsupported: st.Unsupported}
		if st.OK() {
			c.PerOp = ptr(st.Median)
		}
		r.Counters = append(r.Counters, c)
	}
	for _, f := range Figures {
		st := v.Fig(f.Key)
		if !st.OK() {
			continue
		}
		if f.Total {
			if r.RepMetrics == nil {
				r.RepMetrics = map[string][]float64{}
			}
			r.RepMetrics[f.Key] = st.Values
		}
		r.SetMetric(f.Key, st.Median)
	}
	if a.PerUnit && v.Wall.Median > 0 {
		r.SetMetric("throughput-units/s", 1e9/v.Wall.Median)
	}
	if s, ok := splitOf[v.Point.Label()]; ok && s.CPUA > 0 {
		r.SetMetric("extra-cpu-ns/op", s.ExtraCPU)
		r.SetMetric("extra-switches/op", s.ExtraSwitches)
		if s.Priced && s.ExtraCPU > 0 && !s.DirectOverflows {
			r.SetMetric("direct-ns/op", s.DirectNs)
			r.SetMetric("not-in-switch-path-ns/op", s.RestNs)
			r.SetMetric("direct-share-ratio", s.DirectShare)
		}
		if s.Indirect.OK {
			r.SetMetric("indirect-estimate-ns/op", s.Indirect.B) // from the working set (split.go)
			r.SetMetric("extra-indirect-estimate-ns/op", s.Indirect.Delta)
		}
	}
	for _, f := range Figures {
		if st := v.Fig(f.Key); st.OK() && st.Source != "" {
			r.Notes = appendOnce(r.Notes, sourceNote(f, st.Source))
		}
	}
}

// sourceNote says where a figure came from, where it is not perf's own.
func sourceNote(f Figure, src string) string {
	switch {
	case f.Key == KeyCPU && src == "rusage":
		return "CPU time from rusage (user + system of the command and its waited-for children): perf task-clock was unsupported"
	case f.Key == KeySwitches && src == "rusage":
		return "switches from rusage: perf context-switches was unsupported"
	case f.Key == KeyRunq:
		return "run-queue wait sampled from /proc/<pid>/task/<tid>/schedstat: a lower bound (a thread's last partial interval is lost with it)"
	}
	return ""
}

func appendOnce(ss []string, s string) []string {
	if s == "" || contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

func ptr(v float64) *float64 { return &v }

// Label is the grid's name in words: "T=2,32", "T=2,32 × N=1,4".
func Label(points []Point) string {
	if len(points) == 0 {
		return ""
	}
	var parts []string
	for i, n := range points[0].Names {
		var vals []string
		seen := map[string]bool{}
		for _, p := range points {
			if !seen[p.Values[i]] {
				seen[p.Values[i]] = true
				vals = append(vals, p.Values[i])
			}
		}
		parts = append(parts, n+"="+strings.Join(vals, ","))
	}
	return strings.Join(parts, " × ")
}

// Select narrows a stored diagnose --vary run to the values that match
// sel ("T=2", or "T=2/N=4" in a grid) and names each arm without those
// parts ("diagnose/T=2" becomes "diagnose"), so that two values, of one
// run or of two, compare arm by arm. It fails, naming the run's values,
// when none matches.
func Select(run *result.Run, sel string) (*result.Run, error) {
	want := map[string]string{}
	for _, part := range strings.Split(sel, "/") {
		k, v, ok := strings.Cut(part, "=")
		if !ok || !envName.MatchString(k) || v == "" {
			return nil, fmt.Errorf("%q: want NAME=V (or NAME=V/NAME2=V2) after the run, e.g. last:T=2", sel)
		}
		want[k] = v
	}
	out := *run
	out.ID = run.ID + ":" + sel
	out.Arms = nil
	var have []string
	for _, a := range run.Arms {
		if a.Experiment != Experiment {
			continue
		}
		key, err := exp.ParseArmKey(a.Name)
		if err != nil {
			continue
		}
		have = append(have, key.Short())
		match := true
		for k, v := range want {
			match = match && a.Params[k] == v
		}
		if !match {
			continue
		}
		kept := exp.Key(key.Experiment)
		for _, seg := range key.Segments {
			if seg.Key == "" || want[seg.Key] != seg.Value {
				kept = kept.With(seg)
			}
		}
		a.Name = kept.String()
		out.Arms = append(out.Arms, a)
	}
	switch {
	case len(have) == 0:
		return nil, fmt.Errorf("run %s is no diagnose --vary run: it has no values to select %s from", run.ID, sel)
	case len(out.Arms) == 0:
		return nil, fmt.Errorf("run %s has no value %s; its values are %s", run.ID, sel, strings.Join(have, ", "))
	}
	return &out, nil
}
