package wss

import (
	"fmt"
	"slices"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Reading is what the sampling found: the JSON record "wss" that
// diagnose, diagnose --vary and watch write and store.
type Reading struct {
	Kind string `json:"kind"` // wss
	PID  int    `json:"pid"`
	// Unsupported says why there is no working set: never a 0 in its place.
	Unsupported string `json:"unsupported,omitempty"`
	// Intervals were read, each IntervalS long on average; MedianBytes and
	// MaxBytes are what the process touched in one, PerInterval each one's
	// (the first 1000).
	Intervals   int     `json:"intervals,omitempty"`
	IntervalS   float64 `json:"interval_s,omitempty"`
	MedianBytes int64   `json:"median_bytes,omitempty"`
	MaxBytes    int64   `json:"max_bytes,omitempty"`
	PerInterval []int64 `json:"per_interval_bytes,omitempty"`
	RSSBytes    int64   `json:"rss_bytes,omitempty"` // the largest resident set seen
	// BusyThreads is how many threads ran in a median interval (at least
	// a hundredth of the busiest one's CPU time). Alike says they are one
	// pool by name, or their CPU times over the intervals agree within
	// alikeFactor, so the working set divided among them (PerThreadBytes)
	// is a fair assumption; AlikeWhy says what was found either way.
	BusyThreads    int    `json:"busy_threads,omitempty"`
	Alike          bool   `json:"threads_alike"`
	AlikeWhy       string `json:"threads_alike_why,omitempty"`
	PerThreadBytes int64  `json:"per_thread_bytes,omitempty"`
	// The sampling's own cost: ctxlab's CPU time spent on it, the
	// program's CPU time, their ratio, and the intervals left unsampled
	// to keep it within Budget.
	CostNs       uint64  `json:"cost_ns"`
	ProgramCPUNs uint64  `json:"program_cpu_ns"`
	CostShare    float64 `json:"cost_share"`
	Skipped      int     `json:"skipped_intervals"`
	Idle         int     `json:"idle_intervals,omitempty"` // intervals in which no thread ran, left out of the figures
	// Lines is the reading in words (Read), Indirect the estimate when
	// priced.
	Lines    []string  `json:"lines,omitempty"`
	Indirect *Indirect `json:"indirect,omitempty"`
}

// alikeFactor is how far apart the busy threads' CPU times may be for the
// threads to count as alike.
const alikeFactor = 3.0

// perThread keeps the working set per busy thread (PerThreadBytes, the
// median over the intervals of each one's set ÷ its busy threads) only
// when the busy threads are alike: all of one name (a pool of one kind of
// worker), or CPU times over the sampled intervals within alikeFactor.
func (r *Reading) perThread(cpu map[int]uint64, names map[int]string) {
	per := r.PerThreadBytes
	r.PerThreadBytes = 0
	var top uint64
	for _, c := range cpu {
		top = max(top, c)
	}
	var busy []uint64
	name, oneName := "", true
	for tid, c := range cpu {
		if top == 0 || c*busyShare < top {
			continue
		}
		busy = append(busy, c)
		if n := names[tid]; len(busy) == 1 {
			name = n
		} else if n != name {
			oneName = false
		}
	}
	if len(busy) == 0 || r.BusyThreads == 0 || per <= 0 {
		r.AlikeWhy = "no thread ran in the sampled intervals"
		return
	}
	slices.Sort(busy)
	lo, hi := busy[0], busy[len(busy)-1]
	cpus := fmt.Sprintf("CPU time in the sampled intervals %s to %s", result.FormatNs(float64(lo)), result.FormatNs(float64(hi)))
	why := ""
	switch {
	case len(busy) == 1:
	case oneName && name != "":
		why = fmt.Sprintf("all named %q, a pool of one kind; %s", name, cpus)
	case float64(hi) <= alikeFactor*float64(lo):
		why = fmt.Sprintf("their %s, within ×%.0f", cpus, alikeFactor)
	default:
		r.AlikeWhy = fmt.Sprintf("the %d busy threads are not alike (different names, %s): no per-thread figure", len(busy), cpus)
		return
	}
	r.Alike, r.PerThreadBytes = true, per
	if r.BusyThreads == 1 {
		r.AlikeWhy = "one busy thread"
		return
	}
	r.AlikeWhy = fmt.Sprintf("÷ %d busy threads, assuming they touch alike, disjoint sets: %s; shared data would make each thread's set larger", r.BusyThreads, why)
}

// OK says there is a working set.
func (r *Reading) OK() bool { return r != nil && r.Unsupported == "" && r.Intervals > 0 }

// PerThread is the working set one thread touches between switches: the
// per-thread share when the threads are alike, else the whole set (every
// busy thread's data counted once per thread: an upper end); and how it
// was derived.
func (r *Reading) PerThread() (int64, string) {
	if r.Alike {
		return r.PerThreadBytes, r.AlikeWhy
	}
	return r.MedianBytes, "the whole working set: " + r.AlikeWhy + "; an upper end per thread"
}

// Refill is the working set a switch can make a thread refetch: its set
// per thread (PerThread), but no more than the last-level cache holds —
// a switch cannot cost more than refetching what the caches held.
func (r *Reading) Refill(cs []result.Cache) (int64, string) {
	per, how := r.PerThread()
	if c := cachesOf(cs); c.llc > 0 && per > c.llc {
		return c.llc, fmt.Sprintf("%s per thread (%s), capped at the %s L%d: a switch costs at most refetching what the caches held",
			result.FormatBytes(float64(per)), how, result.FormatBytes(float64(c.llc)), c.llcLevel)
	}
	return per, how
}

// Setting is what the working set is set beside: this host's caches and
// CPUs, and what the program did over the run (its switches and CPU
// time, for the estimate), and the run with this host's refill curve.
type Setting struct {
	Caches   []result.Cache
	CPUs     int
	Switches float64 // over the run (all threads, and waited-for children)
	CPUNs    float64 // over the run
	Curve    *result.Run
	// CurveWhy says why there is no curve (Curve nil).
	CurveWhy string
}

// Indirect is the indirect cost estimated from the working set: the
// program's switches × the refill cost at its working set per thread.
type Indirect struct {
	PerSwitchNs float64 `json:"per_switch_ns"`
	Switches    float64 `json:"switches"`
	TotalNs     float64 `json:"total_ns"`
	CPUShare    float64 `json:"cpu_share"` // of the program's CPU time
	Source      string  `json:"source"`    // the arms and run it was read off
	// Bounded says switches × per switch exceeded the program's CPU time,
	// so TotalNs is that CPU time: an upper end, not an estimate.
	Bounded bool `json:"bounded_by_cpu,omitempty"`
}

// Matters is the share of the program's CPU time above which the
// indirect cost is worth acting on.
const Matters = 0.05

// Read puts the working set into words beside set, fills r.Lines and
// r.Indirect, and returns the lines.
func (r *Reading) Read(set Setting) []string {
	if r == nil {
		return nil
	}
	if !r.OK() {
		r.Lines = []string{"working set: unsupported: " + r.Unsupported}
		return r.Lines
	}
	ws := fmt.Sprintf("working set: %s touched per %s interval (median of %d; max %s), beside RSS %s",
		result.FormatBytes(float64(r.MedianBytes)), result.FormatNs(r.IntervalS*1e9), r.Intervals,
		result.FormatBytes(float64(r.MaxBytes)), result.FormatBytes(float64(r.RSSBytes)))
	lines := []string{ws}
	per, how := r.PerThread()
	lines = append(lines, fmt.Sprintf("  ≈ %s per thread (%s)", result.FormatBytes(float64(per)), how))
	c := cachesOf(set.Caches)
	lines = append(lines, "  "+c.beside(per, r.MedianBytes, r.BusyThreads, set.CPUs))
	refill, _ := r.Refill(set.Caches)
	lines = append(lines, "  "+r.estimate(set, refill, c))
	lines = append(lines, "  "+r.costLine())
	r.Lines = lines
	return lines
}

// estimate prices the indirect cost from the working set per thread and
// says whether it matters.
func (r *Reading) estimate(set Setting, per int64, c caches) string {
	small := c.l2 > 0 && per <= c.l2
	if set.Curve == nil {
		if small {
			return fmt.Sprintf("a small working set: the indirect cost does not matter here (not priced: %s)", set.CurveWhy)
		}
		return "indirect cost: not priced — " + set.CurveWhy
	}
	rf, ok := price.RefillAt(set.Curve, per)
	if !ok {
		return fmt.Sprintf("indirect cost: not priced — run %s has no refill curve", set.Curve.ID)
	}
	rf.Calibrated = price.IsCalibration(set.Curve)
	in := &Indirect{PerSwitchNs: rf.Ns, Switches: set.Switches, TotalNs: set.Switches * rf.Ns, Source: rf.Source()}
	if set.CPUNs > 0 {
		in.CPUShare = in.TotalNs / set.CPUNs
	}
	r.Indirect = in
	est := fmt.Sprintf("indirect cost ≈ %s: %s switches × %s per switch at %s (%s)", result.FormatNs(in.TotalNs),
		result.FormatCount(set.Switches), result.FormatNs(rf.Ns), result.FormatBytes(float64(per)), rf.Source())
	if set.CPUNs > 0 && in.TotalNs > set.CPUNs {
		in.TotalNs, in.CPUShare, in.Bounded = set.CPUNs, 1, true
		est = fmt.Sprintf("indirect cost: %s switches × %s per switch at %s (%s) would be more than all the program's CPU time (%s): the threads cannot refetch that much after every switch, so the estimate is no figure here, only a sign that it is large",
			result.FormatCount(set.Switches), result.FormatNs(rf.Ns), result.FormatBytes(float64(per)), rf.Source(), result.FormatNs(set.CPUNs))
	}
	switch {
	case set.CPUNs <= 0:
		return est + "; the program's CPU time is unknown, so its weight is not said"
	case in.Bounded:
		return "the indirect cost matters: " + est
	case in.CPUShare < Matters && small:
		return fmt.Sprintf("a small working set: the indirect cost does not matter here — %s, %s of its CPU time", est, price.Percent(in.CPUShare))
	case in.CPUShare < Matters:
		return fmt.Sprintf("the indirect cost does not matter here: %s, %s of its CPU time (few switches for this working set)", est, price.Percent(in.CPUShare))
	}
	return fmt.Sprintf("the indirect cost matters: %s, %s of its CPU time (fewer switches, or a smaller set per thread, would cut it)", est, price.Percent(in.CPUShare))
}

// costLine says what the sampling cost and how it perturbs the program.
func (r *Reading) costLine() string {
	l := fmt.Sprintf("sampling cost: %s of ctxlab's CPU time, %s of the program's %s (bound: %s)",
		result.FormatNs(float64(r.CostNs)), price.Percent(r.CostShare), result.FormatNs(float64(r.ProgramCPUNs)), price.Percent(Budget))
	if r.Idle > 0 {
		l += fmt.Sprintf("; %d interval(s) in which no thread ran left out", r.Idle)
	}
	if r.Skipped > 0 {
		l += fmt.Sprintf("; %d interval(s) left unsampled to stay within it", r.Skipped)
	}
	return l + "; clearing the referenced bits flushes the program's TLB each interval and makes its pages look idle to the kernel's page ageing (--wss off to avoid both)"
}

// caches are the sizes the working set is set beside.
type caches struct {
	l2, llc   int64
	llcLevel  int
	llcShared int
}

func cachesOf(cs []result.Cache) caches {
	var c caches
	for _, x := range cs {
		if x.Type == "Instruction" {
			continue
		}
		if x.Level == 2 {
			c.l2 = x.SizeB
		}
		if x.Level >= c.llcLevel && x.Level >= 2 {
			c.llc, c.llcLevel, c.llcShared = x.SizeB, x.Level, x.SharedCPUs
		}
	}
	return c
}

// beside sets the working set per thread (and all of it, total) beside
// the caches and the busy threads: what a resume finds still cached.
func (c caches) beside(per, total int64, busy, cpus int) string {
	if c.llc == 0 {
		return "beside the caches: unsupported: this kernel reports no cache sizes (/sys/devices/system/cpu/cpu0/cache)"
	}
	shared := ""
	if c.llcShared > 0 {
		shared = fmt.Sprintf(" shared by %d CPUs", c.llcShared)
	}
	l2 := ""
	if c.l2 > 0 {
		l2 = fmt.Sprintf(", %s L2 per core", result.FormatBytes(float64(c.l2)))
	}
	head := fmt.Sprintf("%s per thread, %d threads busy on %d CPUs, beside a %s L%d%s%s: ",
		result.FormatBytes(float64(per)), busy, cpus, result.FormatBytes(float64(c.llc)), c.llcLevel, shared, l2)
	turns := max(1, (busy+max(cpus, 1)-1)/max(cpus, 1)) // threads taking turns on one CPU
	switch {
	case busy <= cpus:
		return head + "each thread can keep a CPU, so a resume mostly finds its data where it left it (other processes' turns aside)"
	case c.l2 > 0 && per*int64(turns) <= c.l2:
		return head + fmt.Sprintf("the %d threads taking turns on a CPU fit its L2 together: a resume finds its data warm", turns)
	case total <= c.llc:
		return head + fmt.Sprintf("together they fit the L%d: a resume refetches its data from there, not from memory", c.llcLevel)
	case per <= c.llc:
		return head + "together they overflow it: every resume refetches most of its data from memory"
	}
	return head + fmt.Sprintf("one thread's set alone exceeds the L%d: it streams from memory switches or not, so a switch adds little", c.llcLevel)
}
