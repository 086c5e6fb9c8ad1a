package result

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ErrInvalid marks a run document that decodes but holds figures no
// ctxlab run can have (a negative count, ±1e308, two arms of one name,
// an id that is a path): every reader of run files refuses it with the
// same words, before anything is printed or stored.
var ErrInvalid = errors.New("invalid run")

// The ranges Validate enforces, as docs/result-schema.md states them.
const (
	// MaxCount bounds counts and sizes: ops, samples, bytes, and
	// durations in ns (1e15 ns is 11.6 days).
	MaxCount = 1e15
	// MaxFigure bounds the magnitude of every figure: a mean per op in
	// ns, a per-op count, a metric.
	MaxFigure = 1e15
	// MaxCPUs is Linux's largest NR_CPUS: CPU numbers are 0..MaxCPUs-1.
	MaxCPUs = 8192
	// MaxGOMAXPROCS bounds a recorded GOMAXPROCS.
	MaxGOMAXPROCS = 1 << 20
)

// Validate reports the first field of r outside the schema's ranges, as
// an error wrapping ErrInvalid that names the field, its value and the
// range: non-negative counts, durations and times per op, finite figures
// of plausible size, unique arm names, and an id of [A-Za-z0-9._-] that
// can name a file. Read checks the document's shape; Validate its values.
func (r *Run) Validate() error {
	v := &validator{}
	v.id(r.ID)
	v.nonNeg("clock_cost_ns", r.ClockCostNs)
	v.nonNeg("syscall_ns", r.SyscallNs)
	v.nonNeg("syscall_path_ns", r.SyscallPathNs)
	r.Env.validate(v)
	seen := make(map[string]int, len(r.Arms))
	for i := range r.Arms {
		a := &r.Arms[i]
		v.at = fmt.Sprintf("arms[%d] %q: ", i, a.Name)
		if a.Name == "" {
			v.fail("name is empty; want the arm's name")
		} else if j, dup := seen[a.Name]; dup {
			v.fail("the name of arms[%d] too; arm names must be unique", j)
		} else {
			seen[a.Name] = i
		}
		a.validate(v)
	}
	for i := range r.Experiments {
		e := &r.Experiments[i]
		for j := range e.Comparisons {
			v.at = fmt.Sprintf("experiments[%d] %q: comparisons[%d]: ", i, e.Name, j)
			e.Comparisons[j].validate(v)
		}
	}
	return v.err
}

func (e *Env) validate(v *validator) {
	v.at = "env: "
	v.intIn("logical_cpus", int64(e.LogicalCPUs), 0, MaxCPUs)
	v.intIn("physical_cores", int64(e.Cores), 0, MaxCPUs)
	v.intIn("threads_per_core", int64(e.ThreadsPerCore), 0, MaxCPUs)
	for i, c := range e.OnlineCPUs {
		v.intIn(fmt.Sprintf("online_cpus[%d]", i), int64(c), 0, MaxCPUs-1)
	}
	for i, c := range e.Caches {
		v.intIn(fmt.Sprintf("caches[%d].level", i), int64(c.Level), 0, 9)
		v.intIn(fmt.Sprintf("caches[%d].size_bytes", i), c.SizeB, 0, MaxCount)
		v.intIn(fmt.Sprintf("caches[%d].shared_cpus", i), int64(c.SharedCPUs), 0, MaxCPUs)
	}
	v.intIn("gomaxprocs", int64(e.GOMAXPROCS), 0, MaxGOMAXPROCS)
	v.intIn("cgroup_version", int64(e.CgroupVersion), 0, 2)
	v.intIn("sched_slice_ns", e.SchedSliceNs, 0, MaxCount)
	v.intIn("threads_max", e.ThreadsMax, 0, MaxCount)
	if e.NprocLimit < -1 {
		v.fail("rlimit_nproc is %d; want -1 (unlimited) or more", e.NprocLimit)
	}
	v.intIn("mem_available_bytes", e.MemAvailableB, 0, MaxCount)
	v.nonNeg("load1", e.Load1)
	v.floatIn("steal_pct", e.StealPct, -100, 100)
}

func (a *Arm) validate(v *validator) {
	v.intIn("gomaxprocs", int64(a.GOMAXPROCS), 0, MaxGOMAXPROCS)
	for i, c := range a.CPUs {
		v.intIn(fmt.Sprintf("cpus[%d]", i), int64(c), 0, MaxCPUs-1)
	}
	v.intIn("duration_ns", a.DurationNs, 0, MaxCount)
	v.intIn("ops_per_rep", a.Ops, 0, MaxCount)
	a.validateFigures(v)
	switch a.Status {
	case StatusOK, StatusTooFewOps, StatusTimedOut, StatusFailed, StatusUnsupported, StatusSkipped, StatusInterrupted, "":
	default:
		v.fail("status %q: want one of %s, %s, %s, %s, %s, %s, %s", a.Status, StatusOK, StatusTooFewOps, StatusTimedOut, StatusFailed, StatusUnsupported, StatusSkipped, StatusInterrupted)
	}
	a.validateLatencies(v)
	a.validatePerOp(v)
	a.validateMetrics(v)
	n := a.Noise
	v.nonNeg("noise.spread", n.Spread)
	v.nonNeg("noise.load1_before", n.Load1Before)
	v.nonNeg("noise.load1_after", n.Load1After)
	v.floatIn("noise.steal_pct", n.StealPct, -100, 100)
	v.intIn("noise.throttled_periods", n.Throttled, 0, MaxCount)
	v.intIn("noise.throttled_us", n.ThrottledUs, 0, MaxCount)
}

// validateFigures: the repetitions' means, the median and the range, in
// the arm's unit, with min ≤ median ≤ max.
func (a *Arm) validateFigures(v *validator) {
	// A time per op cannot be negative; other quantities (a memory
	// delta per worker) can.
	fig := v.figure
	if a.Unit == "" || strings.HasPrefix(a.Unit, "ns/") {
		fig = v.nonNeg
	}
	for i, m := range a.RepMeans {
		fig(fmt.Sprintf("rep_means[%d]", i), m)
	}
	fig("median", a.Median)
	fig("min", a.Min)
	fig("max", a.Max)
	// The median and the range are of the same repetitions' means.
	if a.Min > a.Median*(1+1e-9)+1e-12 || a.Median > a.Max*(1+1e-9)+1e-12 {
		v.fail("min %s, median %s, max %s: want min ≤ median ≤ max", num(a.Min), num(a.Median), num(a.Max))
	}
}

// validateLatencies: the sampled percentiles and the histogram.
func (a *Arm) validateLatencies(v *validator) {
	if p := a.Percentiles; p != nil {
		v.intIn("percentiles.samples", p.Samples, 0, MaxCount)
		for _, f := range []struct {
			name string
			v    float64
		}{{"p50", p.P50}, {"p90", p.P90}, {"p95", p.P95}, {"p99", p.P99}, {"p99.9", p.P999}, {"max", p.Max}} {
			v.nonNeg("percentiles."+f.name, f.v)
		}
	}
	for i, b := range a.Histogram {
		at := fmt.Sprintf("histogram[%d].", i)
		v.nonNeg(at+"low_ns", b.LowNs)
		v.floatIn(at+"high_ns", b.HighNs, b.LowNs, MaxFigure)
		v.intIn(at+"count", b.Count, 0, MaxCount)
	}
}

// validatePerOp: switches, migrations, counters, CPU and run-queue time
// per op, none negative.
func (a *Arm) validatePerOp(v *validator) {
	if s := a.Switches; s != nil {
		v.nonNeg("switches_per_op.voluntary", s.Voluntary)
		v.nonNeg("switches_per_op.involuntary", s.Involuntary)
		v.nonNeg("switches_per_op.child_voluntary", s.ChildVoluntary)
		v.nonNeg("switches_per_op.child_involuntary", s.ChildInvoluntary)
	}
	if a.Migrations != nil {
		v.nonNeg("migrations_per_op", *a.Migrations)
	}
	for i, c := range a.Counters {
		if c.PerOp != nil {
			v.nonNeg(fmt.Sprintf("counters[%d].per_op", i), *c.PerOp)
		}
	}
	if a.CPUNsPerOp != nil {
		v.nonNeg("cpu_ns_per_op", *a.CPUNsPerOp)
	}
	if a.RunqNsPerOp != nil {
		v.nonNeg("runq_ns_per_op", *a.RunqNsPerOp)
	}
}

// validateMetrics: the metrics, and the repetitions' metrics, one figure
// per repetition; the first bad one by name, the same one every time.
func (a *Arm) validateMetrics(v *validator) {
	names := make([]string, 0, len(a.Metrics))
	for k := range a.Metrics {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v.figure(fmt.Sprintf("metrics[%q]", k), a.Metrics[k])
	}
	names = names[:0]
	for k := range a.RepMetrics {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		vs := a.RepMetrics[k]
		if k == "" {
			v.fail("rep_metrics has an empty name; want a metric name")
		} else if len(vs) != len(a.RepMeans) {
			v.fail("rep_metrics[%q] has %d figures and rep_means %d; want one per repetition", k, len(vs), len(a.RepMeans))
		}
		for i, x := range vs {
			v.figure(fmt.Sprintf("rep_metrics[%q][%d]", k, i), x)
		}
	}
}

// validator keeps the first failure; at says where in the run it is.
type validator struct {
	at  string
	err error
}

func (v *validator) fail(format string, a ...any) {
	if v.err == nil {
		v.err = fmt.Errorf("%w: %s%s", ErrInvalid, v.at, fmt.Sprintf(format, a...))
	}
}

func (v *validator) intIn(field string, x, lo, hi int64) {
	if x < lo || x > hi {
		v.fail("%s is %d; want %s..%s", field, x, num(float64(lo)), num(float64(hi)))
	}
}

func (v *validator) floatIn(field string, x, lo, hi float64) {
	if !(x >= lo && x <= hi) { // NaN fails too
		v.fail("%s is %s; want %s..%s", field, num(x), num(lo), num(hi))
	}
}

// nonNeg is a figure that cannot be negative: a time, a count per op.
func (v *validator) nonNeg(field string, x float64) { v.floatIn(field, x, 0, MaxFigure) }

// figure is any finite figure of plausible size.
func (v *validator) figure(field string, x float64) { v.floatIn(field, x, -MaxFigure, MaxFigure) }

// id: [A-Za-z0-9][A-Za-z0-9._-]*, 1..maxIDLen, so it can name a file
// (keepRunJSON does) and be typed as an argument: "..", "-rf" and "../x"
// cannot be ids.
func (v *validator) id(id string) {
	ok := id != "" && len(id) <= maxIDLen && isAlnum(id[0])
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = isAlnum(c) || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		v.fail("id %q: want 1..%d of A-Z a-z 0-9 . _ -, starting with a letter or digit", id, maxIDLen)
	}
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// num writes a bound or a value briefly: 1e+15, -5, 2.5.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
