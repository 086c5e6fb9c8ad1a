package vary

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Kinds of figure: what one count of it is, for formatting.
const (
	KindNs    = "ns"
	KindCount = "count"
	KindRatio = "ratio"
	KindCores = "cores"
	KindBytes = "bytes"
)

// Figure is one row of the side-by-side table: how one run gives it. Its
// key is its name in the stored run (rep_metrics and metrics), the unit
// in the name.
type Figure struct {
	Key   string
	Label string
	Kind  string
	// Total: a count over the run, divided by the run's units of work
	// when they are known (--work, --work-from); a ratio is not.
	Total bool
	// Get is the run's figure and where it came from ("task-clock",
	// "rusage"), or why the run has none.
	Get func(s Sample) (v float64, source string, why string)
}

// Keys of the figures the split and the answer read.
const (
	KeyWall         = "wall-ns/op" // the arm's rep_means, not a rep_metric
	KeyCPU          = "cpu-ns/op"
	KeyCores        = "cpu-cores"
	KeyUser         = "user-ns/op"
	KeySys          = "system-ns/op"
	KeySwitches     = "switches/op"
	KeyVoluntary    = "voluntary-switches/op"
	KeyInvoluntary  = "involuntary-switches/op"
	KeyMigrations   = "migrations/op"
	KeyRunq         = "runq-wait-ns/op"
	KeyFaults       = "page-faults/op"
	KeyInstructions = "instructions/op"
	KeyCycles       = "cycles/op"
	KeyIPC          = "ipc"
	KeyLLC          = "llc-load-misses/1k-instructions"
	KeyDTLB         = "dtlb-load-misses/1k-instructions"
	KeyWSS          = "working-set-bytes"
	KeyWSSThread    = "working-set-per-thread-bytes"
)

// counter is a perf counter's value in s, or why it has none.
func counter(s Sample, name string) (float64, string) {
	for _, r := range s.Counters {
		if r.Event.Name != name {
			continue
		}
		if r.Value == nil {
			return 0, r.Unsupported
		}
		return float64(*r.Value), ""
	}
	return 0, "not opened"
}

// cpuNs is the run's CPU time: perf's task-clock over every thread and
// child, else rusage's user + system time of the command and its
// waited-for children.
func cpuNs(s Sample) (float64, string, string) {
	if v, why := counter(s, "task-clock"); why == "" {
		return v, "task-clock", ""
	}
	if cpu := s.Rusage.UserNs + s.Rusage.SysNs; cpu > 0 {
		return float64(cpu), "rusage", ""
	}
	_, why := counter(s, "task-clock")
	return 0, "", why
}

// perMille is a hardware counter per 1 000 instructions.
func perMille(name string) func(Sample) (float64, string, string) {
	return func(s Sample) (float64, string, string) {
		ins, why := counter(s, "instructions")
		if why != "" {
			return 0, "", why
		}
		v, why := counter(s, name)
		if why != "" {
			return 0, "", why
		}
		if ins <= 0 {
			return 0, "", "no instructions counted"
		}
		return 1000 * v / ins, "perf", ""
	}
}

func perf(name string) func(Sample) (float64, string, string) {
	return func(s Sample) (float64, string, string) {
		v, why := counter(s, name)
		return v, "perf", why
	}
}

// Figures are the table's rows, in its order: what --vary measures of
// every run, for every thread and child the command starts.
var Figures = []Figure{
	{Key: KeyCPU, Label: "CPU time", Kind: KindNs, Total: true, Get: cpuNs},
	{Key: KeyCores, Label: "CPU use", Kind: KindCores, Get: func(s Sample) (float64, string, string) {
		cpu, src, why := cpuNs(s)
		if why != "" || s.WallNs <= 0 {
			return 0, "", why
		}
		return cpu / float64(s.WallNs), src, ""
	}},
	{Key: KeyUser, Label: "user", Kind: KindNs, Total: true, Get: func(s Sample) (float64, string, string) {
		return float64(s.Rusage.UserNs), "rusage", ""
	}},
	{Key: KeySys, Label: "system", Kind: KindNs, Total: true, Get: func(s Sample) (float64, string, string) {
		return float64(s.Rusage.SysNs), "rusage", ""
	}},
	{Key: KeySwitches, Label: "switches", Kind: KindCount, Total: true, Get: func(s Sample) (float64, string, string) {
		if v, why := counter(s, "context-switches"); why == "" {
			return v, "perf", ""
		}
		return float64(s.Rusage.Vol + s.Rusage.Invol), "rusage", ""
	}},
	{Key: KeyVoluntary, Label: "voluntary", Kind: KindCount, Total: true, Get: func(s Sample) (float64, string, string) {
		return float64(s.Rusage.Vol), "rusage", ""
	}},
	{Key: KeyInvoluntary, Label: "involuntary", Kind: KindCount, Total: true, Get: func(s Sample) (float64, string, string) {
		return float64(s.Rusage.Invol), "rusage", ""
	}},
	{Key: KeyMigrations, Label: "migrations", Kind: KindCount, Total: true, Get: perf("cpu-migrations")},
	{Key: KeyRunq, Label: "run-queue wait", Kind: KindNs, Total: true, Get: func(s Sample) (float64, string, string) {
		switch {
		case s.Sampling != "":
			return 0, "", "the command could not be sampled: " + s.Sampling
		case !s.HasRunq:
			return 0, "", "no /proc/<pid>/task/<tid>/schedstat read (CONFIG_SCHED_INFO, or the run was shorter than --interval)"
		}
		return float64(s.RunqNs), "schedstat", ""
	}},
	{Key: KeyFaults, Label: "page faults", Kind: KindCount, Total: true, Get: func(s Sample) (float64, string, string) {
		if v, why := counter(s, "page-faults"); why == "" {
			return v, "perf", ""
		}
		return float64(s.Rusage.MinFlt + s.Rusage.MajFlt), "rusage", ""
	}},
	{Key: KeyInstructions, Label: "instructions", Kind: KindCount, Total: true, Get: perf("instructions")},
	{Key: KeyCycles, Label: "cycles", Kind: KindCount, Total: true, Get: perf("cycles")},
	{Key: KeyIPC, Label: "IPC", Kind: KindRatio, Get: func(s Sample) (float64, string, string) {
		ins, why := counter(s, "instructions")
		if why != "" {
			return 0, "", why
		}
		cyc, why := counter(s, "cycles")
		if why != "" {
			return 0, "", why
		}
		if cyc <= 0 {
			return 0, "", "no cycles counted"
		}
		return ins / cyc, "perf", ""
	}},
	{Key: KeyLLC, Label: "LLC misses/1k instr", Kind: KindRatio, Get: perMille("LLC-load-misses")},
	{Key: KeyDTLB, Label: "dTLB misses/1k instr", Kind: KindRatio, Get: perMille("dTLB-load-misses")},
	{Key: KeyWSS, Label: "working set", Kind: KindBytes, Get: workingSet(false)},
	{Key: KeyWSSThread, Label: "per thread", Kind: KindBytes, Get: workingSet(true)},
}

// workingSet is the run's working set per interval, the median of its
// intervals (package wss), or per thread; or why there is none.
func workingSet(perThread bool) func(Sample) (float64, string, string) {
	return func(s Sample) (float64, string, string) {
		switch {
		case s.WSS == nil:
			return 0, "", "--wss off"
		case !s.WSS.OK():
			return 0, "", s.WSS.Unsupported
		case !perThread:
			return float64(s.WSS.MedianBytes), "clear_refs", ""
		case s.WSS.Alike:
			return float64(s.WSS.PerThreadBytes), "alike threads", ""
		}
		v, _ := s.WSS.PerThread()
		return float64(v), "unlike threads: the whole set", ""
	}
}

// FigureByKey is the figure of that key.
func FigureByKey(key string) (Figure, bool) {
	for _, f := range Figures {
		if f.Key == key {
			return f, true
		}
	}
	return Figure{}, false
}

// Stat is one figure of one value over its finished runs: each run's
// figure (per unit of work for a total, when known), their median and
// range; or why there is none.
type Stat struct {
	Values           []float64
	Median, Min, Max float64
	Source           string // where the figures came from: task-clock, rusage, perf, schedstat
	Unsupported      string // why there is no figure: never a 0 in its place
}

// OK says the stat has figures.
func (s Stat) OK() bool { return s.Unsupported == "" && len(s.Values) > 0 }

// statOf is f over samples, each a finished run. A figure that one run
// has and another lacks, or that comes from different sources in
// different runs, is no figure: the runs would not compare.
func statOf(f Figure, samples []Sample, perUnit bool) Stat {
	var st Stat
	for i, s := range samples {
		v, src, why := f.Get(s)
		if why != "" {
			return Stat{Unsupported: why}
		}
		if i == 0 {
			st.Source = src
		} else if src != st.Source {
			return Stat{Unsupported: fmt.Sprintf("from %s in one run and %s in another", st.Source, src)}
		}
		if f.Total && perUnit {
			v /= s.Work
		}
		st.Values = append(st.Values, v)
	}
	if len(st.Values) == 0 {
		return Stat{Unsupported: "no finished run"}
	}
	sum := measure.Summarize(st.Values)
	st.Median, st.Min, st.Max = sum.Median, sum.Min, sum.Max
	return st
}

// Format writes v as a figure of kind: a time scaled, a count with k/M,
// a ratio with three digits, cores with two decimals.
func Format(kind string, v float64) string {
	switch kind {
	case KindNs:
		return result.FormatNs(v)
	case KindCount:
		if v < 100 && v != float64(int64(v)) {
			return fmt.Sprintf("%.3g", v)
		}
		return result.FormatCount(v)
	case KindCores:
		return fmt.Sprintf("%.2f cores", v)
	case KindBytes:
		return result.FormatBytes(v)
	}
	return fmt.Sprintf("%.3g", v)
}

// FormatStat is a stat as the table shows it: "1.52 s (1.50–1.55)", or
// the median alone for one run.
func FormatStat(kind string, s Stat) string {
	if !s.OK() {
		return "unsupported"
	}
	m := Format(kind, s.Median)
	if len(s.Values) < 2 || kind == KindCores {
		return m
	}
	lo, hi := Format(kind, s.Min), Format(kind, s.Max)
	if kind == KindNs {
		// the range in the median's unit, as the run tables write it
		return m + " (" + result.FormatRange(s.Min, s.Max, s.Median, "ns/op") + ")"
	}
	return m + " (" + strings.TrimSpace(lo) + "–" + strings.TrimSpace(hi) + ")"
}
