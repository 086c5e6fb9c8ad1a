package vary

import (
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// ArmName is the stored arm of the point: diagnose/T=2, or diagnose
// alone for a plain diagnose run, whose one point has no values.
func (p Point) ArmName() string {
	k := exp.Key(Experiment)
	for i, n := range p.Names {
		k = k.With(exp.KV(n, p.Values[i]))
	}
	return k.String()
}

// AddProfile counts one /proc reading of the command into the sample, as
// Command.Run does for each of its intervals.
func (s *Sample) AddProfile(p watch.Profile, err error) { s.add(p, err) }

// Single is one run of a command, diagnosed without --vary, as a grid of
// one value with no parameters: its stored run reads as a diagnose run
// (show, report, and compare against another diagnose of the program).
func Single(args []string, s Sample, interval time.Duration, cost Cost, host *sysinfo.Host, startLoad float64) *Analysis {
	s.Point, s.Round = 0, 0
	a := &Analysis{Command: args, Points: []Point{{}}, Reps: 1, Interval: interval, Samples: []Sample{s},
		Interrupted: s.Status == result.StatusInterrupted}
	Analyze(a, cost, host, startLoad)
	return a
}
