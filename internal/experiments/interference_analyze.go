package experiments

import (
	"fmt"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/quantum"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// interference's analysis of an arm's record: the quanta a tail can pile
// up at, the piles the sampled latencies show, and the Go runtime's own
// scheduling latencies beside them.

const schedMetric = "/sched/latencies:seconds"

// configHZ is the kernel's tick rate, read once (it means decompressing
// /proc/config.gz).
var configHZ struct {
	once sync.Once
	hz   int
	err  error
}

// quantaFor lists the quanta that can explain a pile on host h: Go's
// preemption first when a hog holds a P (goShape), then the kernel slice
// and the tick. note says what had to be assumed or is unknown.
func quantaFor(h *sysinfo.Host, goShape bool) (qs []quantum.Quantum, note string) {
	var notes []string
	if goShape {
		qs = append(qs, quantum.GoPreemption())
	}
	if h != nil {
		sched := h.Scheduler
		switch {
		case h.SchedSliceNs > 0:
			qs = append(qs, quantum.KernelSlice(h.SchedSliceNs, sched, "read from the kernel"))
		default:
			if sched == "" {
				sched = "EEVDF"
				notes = append(notes, "scheduler unknown, EEVDF assumed")
			}
			qs = append(qs, quantum.KernelSlice(quantum.DefaultSliceNs(len(h.OnlineCPUs)), sched, sched+" default"))
		}
	}
	configHZ.once.Do(func() { configHZ.hz, _, configHZ.err = sysinfo.ConfigHZ() })
	if configHZ.err == nil {
		qs = append(qs, quantum.Tick(configHZ.hz))
	} else {
		notes = append(notes, "timer tick unknown ("+configHZ.err.Error()+")")
	}
	return qs, strings.Join(notes, "; ")
}

// Analyze adds Go's own scheduling latencies over the timed repetitions
// and the quantum readings of the sampled latencies, both as the runner
// recorded them.
func (x *ifBench) Analyze(rec *exp.Record, r *result.Arm) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if r.Median > 0 {
		r.Metrics["throughput-ops/s"] = 1e9 / r.Median
	}
	if s, ok := x.shape.(interface{ annotate(*result.Arm) }); ok {
		s.annotate(r)
	}
	if rec.SchedLatencies != nil {
		x.addSched(rec.SchedLatencies, r)
	}
	if len(rec.Samples) > 0 {
		x.addQuanta(rec.Samples, r)
	}
}

// addSched adds the Go runtime's /sched/latencies over the timed
// repetitions, and with hogs says what they were in a note.
func (x *ifBench) addSched(h *metrics.Float64Histogram, r *result.Arm) {
	r.Metrics["go-sched-wakeups"] = 0
	s, ok := summarizeHist(h)
	if !ok {
		r.Notes = append(r.Notes, "Go runtime "+schedMetric+": no goroutine wait was sampled over the arm (the runtime samples 1 in 8)")
		return
	}
	r.Metrics["go-sched-latency-p50-ns"] = s.p50
	r.Metrics["go-sched-latency-p99-ns"] = s.p99
	r.Metrics["go-sched-latency-max-ns"] = s.max
	r.Metrics["go-sched-wakeups"] = float64(s.n)
	if x.arm.hog.N > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("Go runtime %s over the timed repetitions (every goroutine in ctxlab): p50 ≤ %s, p99 ≤ %s, max < %s over %d waits",
			schedMetric, result.FormatNs(s.p50), result.FormatNs(s.p99), result.FormatNs(s.max), s.n))
	}
}

// addQuanta reads the sampled latencies (ascending) against the quanta:
// the piles they form, where p50 and the max sit, and the ops that lost a
// whole Go preemption period.
func (x *ifBench) addQuanta(sorted []int64, r *result.Arm) {
	cl := quantum.Detect(sorted, x.quanta, quantum.Options{})
	r.Metrics["latency-clusters"] = float64(len(cl))
	x.placeP50(sorted, cl, r)
	// Ops that lost at least one whole preemption period: a rare stall
	// shows here even when the max itself is pushed further by noise.
	goQ := []quantum.Quantum{quantum.GoPreemption()}
	if len(x.quanta) > 0 && x.quanta[0].Name == goQ[0].Name {
		n := 0
		for i := len(sorted) - 1; i >= 0 && sorted[i] >= quantum.GoPreemptNs*3/4; i-- {
			if quantum.Name(sorted[i], goQ) != nil {
				n++
			}
		}
		r.Metrics["go-preempt-samples"] = float64(n)
	}
	if m := quantum.Name(sorted[len(sorted)-1], x.quanta); m != nil {
		if m.Quantum.Name == quantum.GoPreemption().Name {
			r.Metrics["max-go-preempt-periods"] = float64(m.Multiple)
		}
		if len(cl) == 0 || sorted[len(sorted)-1] > cl[len(cl)-1].HighNs {
			r.Notes = append(r.Notes, fmt.Sprintf("max %s: %s", result.FormatNs(float64(sorted[len(sorted)-1])), m.Reading()))
		}
	}
	r.Notes = append(r.Notes, topClusters(sorted, cl)...)
	if len(cl) == 0 && x.arm.hog.N > 0 {
		r.Notes = append(r.Notes, "no pile of 3 or more samples above 0.5 ms")
	}
	if x.qnote != "" && len(cl) > 0 {
		r.Notes = append(r.Notes, "quanta: "+x.qnote)
	}
}

// placeP50 says where p50 sits: in a pile named after Go's preemption,
// or — when the samples are too few or too smeared for a pile — at a
// value that is.
func (x *ifBench) placeP50(sorted []int64, cl []quantum.Cluster, r *result.Arm) {
	p50 := sorted[(len(sorted)-1)/2]
	r.Metrics["p50-in-pile"] = 0
	for _, c := range cl {
		if p50 >= c.LowNs && p50 <= c.HighNs {
			r.Metrics["p50-in-pile"] = 1
			if c.Cause != nil && c.Cause.Quantum.Name == quantum.GoPreemption().Name {
				r.Metrics["p50-go-preempt-periods"] = float64(c.Cause.Multiple)
			}
		}
	}
	if m := quantum.Name(p50, x.quanta); r.Metrics["p50-in-pile"] == 0 && m != nil && m.Quantum.Name == quantum.GoPreemption().Name {
		r.Metrics["p50-go-preempt-periods"] = float64(m.Multiple)
		r.Notes = append(r.Notes, fmt.Sprintf("p50 %s (in no pile): %s", result.FormatNs(float64(p50)), m.Reading()))
	}
}

// topClusters describe the biggest clusters that matter (a usual
// percentile sits in them, or they hold ≥ 1 % of the samples), at most
// three, in order of location.
func topClusters(sorted []int64, cl []quantum.Cluster) []string {
	var top []quantum.Cluster
	for _, c := range cl {
		if c.Where(sorted) != "" || c.Fraction >= 0.01 {
			top = append(top, c)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].Count > top[j].Count })
	if len(top) > 3 {
		top = top[:3]
	}
	sort.Slice(top, func(i, j int) bool { return top[i].MedianNs < top[j].MedianNs })
	var out []string
	for _, c := range top {
		out = append(out, c.Describe(sorted))
	}
	return out
}

// annotate says how many wake-ups arrived before and after the child's
// hog started, and why none did after the limit.
func (s *starveShape) annotate(r *result.Arm) {
	r.Metrics["starve-samples"] = float64(s.samples)
	if s.hogAfter < 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d wake-ups arrived; the hog never started", s.samples))
		return
	}
	after := s.samples - s.hogAfter
	r.Metrics["starve-samples-after-hog"] = float64(after)
	msg := fmt.Sprintf("the child's %s hog started after %d wake-ups; %d more arrived after it", s.kind, s.hogAfter, after)
	if r.Status == result.StatusTimedOut {
		msg += ", then none until the limit: with GODEBUG=asyncpreemptoff=1 and GOMAXPROCS=1 nothing preempts a spinning goroutine, so the timer goroutine never ran again; child and hog were killed"
	}
	r.Notes = append(r.Notes, msg)
}

type histSummary struct {
	p50, p99, max float64
	n             uint64
}

// summarizeHist reads a runtime/metrics histogram (a delta the runner
// recorded) as upper bucket bounds (ns).
func summarizeHist(b *metrics.Float64Histogram) (histSummary, bool) {
	if len(b.Buckets) != len(b.Counts)+1 {
		return histSummary{}, false
	}
	d := b.Counts
	var n uint64
	for _, c := range d {
		n += c
	}
	if n == 0 {
		return histSummary{}, false
	}
	bound := func(i int) float64 {
		hi := b.Buckets[i+1]
		if hi > 1e9 || hi != hi { // +Inf or NaN: use the lower bound
			hi = b.Buckets[i]
		}
		return hi * 1e9
	}
	q := func(f float64) float64 {
		want := uint64(f*float64(n) + 0.999999)
		var c uint64
		for i, v := range d {
			c += v
			if c >= want && v > 0 {
				return bound(i)
			}
		}
		return bound(len(d) - 1)
	}
	s := histSummary{p50: q(0.5), p99: q(0.99), n: n}
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] > 0 {
			s.max = bound(i)
			break
		}
	}
	return s, true
}

// interferenceMetrics declares the figures interference arms add beside the median.
var interferenceMetrics = []exp.Metric{
	{Name: "throughput-ops/s", Unit: "ops", Better: exp.HigherIsBetter, Doc: "ops per second (1 / mean)"},
	{Name: "go-sched-wakeups", Unit: "wakeups", Better: exp.NotRanked, Doc: "goroutine waits counted by the Go runtime's /sched/latencies over the arm"},
	{Name: "go-sched-latency-p50-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the runtime's /sched/latencies p50 (upper bucket bound)"},
	{Name: "go-sched-latency-p99-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the runtime's /sched/latencies p99 (upper bucket bound)"},
	{Name: "go-sched-latency-max-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the runtime's /sched/latencies max (upper bucket bound)"},
	{Name: "latency-clusters", Unit: "clusters", Better: exp.NotRanked, Doc: "piles of samples the quantum detector found"},
	{Name: "p50-in-pile", Unit: "flag", Better: exp.NotRanked, Doc: "1 when the p50 sits inside a pile (a quantum sets the typical latency)"},
	{Name: "p50-go-preempt-periods", Unit: "periods", Better: exp.LowerIsBetter, Doc: "the p50's pile as a multiple of Go's 10 ms preemption period"},
	{Name: "max-go-preempt-periods", Unit: "periods", Better: exp.LowerIsBetter, Doc: "the max as a multiple of Go's 10 ms preemption period"},
	{Name: "go-preempt-samples", Unit: "samples", Better: exp.LowerIsBetter, Doc: "samples that stalled a whole number of Go preemption periods"},
	{Name: "starve-samples", Unit: "samples", Better: exp.NotRanked, Doc: "wake-ups that arrived in a starvation arm"},
	{Name: "starve-samples-after-hog", Unit: "samples", Better: exp.NotRanked, Doc: "of those, wake-ups after the hog started"},
}
