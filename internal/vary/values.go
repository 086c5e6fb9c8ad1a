package vary

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Value is one point of the grid: its runs and its figures over the
// finished ones.
type Value struct {
	Point Point
	// Runs are all its runs, in the order they ran; OKRuns the finished
	// ones the figures are made of.
	Runs, OKRuns []Sample
	// Status: result.StatusOK when it has finished runs and none failed;
	// StatusFailed or StatusTimedOut when a run did (its figures are not
	// used: the command did not do its work); StatusInterrupted when
	// Ctrl-C came before any run of it finished.
	Status string
	Reason string
	// Wall is the wall time of each finished run, per unit of work when
	// PerUnit; Figs the other figures by key.
	Wall  Stat
	Figs  map[string]Stat
	Noise result.Noise
	Notes []string
}

// OK says the value has figures.
func (v Value) OK() bool { return v.Status == result.StatusOK && len(v.OKRuns) > 0 }

// Fig is the value's stat of the figure key.
func (v Value) Fig(key string) Stat {
	if key == KeyWall {
		return v.Wall
	}
	if s, ok := v.Figs[key]; ok {
		return s
	}
	return Stat{Unsupported: "not measured"}
}

// PerUnit says every finished run of every value knows its units of
// work, so totals are shown per unit.
func PerUnit(samples []Sample) bool {
	n := 0
	for _, s := range samples {
		if s.OK() {
			if s.Work <= 0 {
				return false
			}
			n++
		}
	}
	return n > 0
}

// Summarize gathers the samples of each point into its Value: the
// figures of its finished runs (per unit of work when perUnit), its
// status, and its noise by the rule run uses (runner.Noise), over the
// load when the grid started and the steal and throttling during its
// runs.
func Summarize(points []Point, samples []Sample, perUnit bool, host *sysinfo.Host, startLoad float64) []Value {
	vals := make([]Value, len(points))
	for i, p := range points {
		vals[i] = Value{Point: p, Status: result.StatusOK, Figs: map[string]Stat{}}
	}
	for _, s := range samples {
		v := &vals[s.Point]
		v.Runs = append(v.Runs, s)
		switch {
		case s.OK():
			v.OKRuns = append(v.OKRuns, s)
		case s.Status == result.StatusInterrupted:
		case v.Status == result.StatusOK:
			v.Status, v.Reason = s.Status, s.Reason
		}
		for _, n := range s.Notes {
			if !contains(v.Notes, n) {
				v.Notes = append(v.Notes, n)
			}
		}
	}
	for i := range vals {
		v := &vals[i]
		failed := 0
		for _, s := range v.Runs {
			if !s.OK() && s.Status != result.StatusInterrupted {
				failed++
			}
		}
		switch {
		case v.Status != result.StatusOK:
			v.Reason = fmt.Sprintf("%s (%d of %d runs)", v.Reason, failed, len(v.Runs))
			continue
		case len(v.OKRuns) == 0:
			v.Status, v.Reason = result.StatusInterrupted, "interrupted before a run of it finished"
			continue
		}
		var walls []float64
		for _, s := range v.OKRuns {
			w := float64(s.WallNs)
			if perUnit {
				w /= s.Work
			}
			walls = append(walls, w)
		}
		sum := measure.Summarize(walls)
		v.Wall = Stat{Values: walls, Median: sum.Median, Min: sum.Min, Max: sum.Max, Source: "clock"}
		for _, f := range Figures {
			v.Figs[f.Key] = statOf(f, v.OKRuns, perUnit)
		}
		v.Noise = noiseOf(v, host, startLoad)
	}
	return vals
}

// noiseOf is runner.Noise over the value's finished runs: their spread,
// the steal and throttling summed over each run's own interval, and the
// load when the grid started.
func noiseOf(v *Value, host *sysinfo.Host, startLoad float64) result.Noise {
	var before, after sysinfo.Noise
	for i, s := range v.OKRuns {
		if i == 0 {
			before.Load1 = s.Before.Load1
		}
		after.Load1 = s.After.Load1
		after.Steal += s.After.Steal - s.Before.Steal
		after.Total += s.After.Total - s.Before.Total
		after.Throttled += s.After.Throttled - s.Before.Throttled
		after.ThrottledUs += s.After.ThrottledUs - s.Before.ThrottledUs
	}
	a := result.Arm{RepMeans: v.Wall.Values, Median: v.Wall.Median, Min: v.Wall.Min, Max: v.Wall.Max}
	return runner.Noise(a, before, after, host, startLoad)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
