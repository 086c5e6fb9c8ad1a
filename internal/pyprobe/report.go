package pyprobe

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Report is what the probe measured in one run of a CPython program, as
// records with a stable "kind" each (Records): the interpreter, its
// threads, every loop's lag, the hops of each kind, the call sites, the
// probe's own cost, the readings and the notes.
type Report struct {
	// Loaded: the probe started in the interpreter (its hello arrived).
	Loaded bool `json:"loaded"`
	// Final: its report at the interpreter's exit arrived. Without it (the
	// program ended with os._exit, a signal or an exec) the figures are
	// what it had sent until then.
	Final       bool   `json:"final"`
	Unsupported string `json:"unsupported,omitempty"`
	Failed      string `json:"failed,omitempty"`

	Interpreter Interpreter `json:"interpreter"`
	Threads     []Thread    `json:"threads"`
	Loops       []Loop      `json:"loops"`
	Hops        []Hops      `json:"hops"`
	Sites       []Site      `json:"sites"`
	Libraries   []Library   `json:"libraries,omitempty"`
	Cost        *Cost       `json:"cost,omitempty"`
	Readings    []Reading   `json:"readings,omitempty"`
	Notes       []string    `json:"notes,omitempty"`
}

// Interpreter is the probed interpreter (kind "py-interpreter").
type Interpreter struct {
	Kind         string  `json:"kind"` // py-interpreter
	PID          int     `json:"pid"`
	Version      string  `json:"version"`
	Build        string  `json:"build"` // GIL, free-threaded
	FreeThreaded bool    `json:"free_threaded"`
	GILEnabled   bool    `json:"gil_enabled"` // at the end of the run (sys._is_gil_enabled where it exists)
	SwitchS      float64 `json:"switch_interval_s"`
	// SwitchStartS is the interval when the probe loaded, when the program
	// changed it (sys.setswitchinterval) since.
	SwitchStartS float64 `json:"switch_interval_at_start_s,omitempty"`
	Executable   string  `json:"executable,omitempty"`
	TickNs       int64   `json:"tick_ns"`
	WallNs       int64   `json:"wall_ns,omitempty"`
	CPUNs        int64   `json:"cpu_ns,omitempty"`
}

// Thread is one Python thread (kind "py-thread"): threading's name and the
// kernel's thread id, which the profile's rows are matched by.
type Thread struct {
	Kind   string `json:"kind"` // py-thread
	PID    int    `json:"pid"`
	TID    int64  `json:"tid"` // native id
	Ident  int64  `json:"ident"`
	Name   string `json:"name"`
	Daemon bool   `json:"daemon,omitempty"`
	Ended  bool   `json:"ended,omitempty"`
	// CPUShare is the thread's time on a CPU over the run, RunnableShare
	// that and its time waiting for one (run-queue wait), each as a share
	// of the run, from the profile (schedstat); nil without it.
	CPUShare      *float64 `json:"cpu_share,omitempty"`
	RunnableShare *float64 `json:"runnable_share,omitempty"`
}

// Loop is one asyncio loop's lag (kind "py-loop").
type Loop struct {
	Kind   string `json:"kind"` // py-loop
	Loop   int64  `json:"loop"`
	Class  string `json:"class"`
	Thread string `json:"thread"`
	TID    int64  `json:"tid"`
	TickNs int64  `json:"tick_ns"`
	// Ticks fired; Corrected are the values added for stalls longer than
	// a tick (RecordCorrectedValue), which Lag holds beside the ticks.
	Ticks     int64 `json:"ticks"`
	Corrected int64 `json:"corrected"`
	// CorrectedEveryNs is the interval the correction assumes between
	// samples: the ticks' own cadence (the median time from one tick to
	// the next: the timer's period plus its typical lateness), so a stall
	// adds as many values as ticks it swallowed.
	CorrectedEveryNs int64 `json:"corrected_every_ns"`
	// Lag is the corrected distribution; AsFired the ticks' own lateness.
	Lag     Dist `json:"lag"`
	AsFired Dist `json:"lag_as_fired"`
	// Seconds the loop ran (its ticks' wall time); the share of it its
	// thread was on a CPU, and waiting for one (run queue: the machine's
	// CPUs were taken); and over the intervals that ended in a late tick
	// (≥ 1 ms late), the share of the time its thread did not spend in a
	// run queue that it ran on a CPU: high when the loop ran Python
	// through its stalls, low when it slept through them (waiting for the
	// GIL). RunqKnown: the run-queue figures are there (schedstat).
	Seconds float64 `json:"seconds"`
	// ObservedShare is the share of the time the loop ran that its polls
	// were timed: below 1 when it polled more than the probe's budget and
	// the probe timed it in windows (docs/pyprobe.md); 0: not known (the
	// loop did not stop before the program ended).
	ObservedShare float64 `json:"observed_share,omitempty"`
	CPUShare      float64 `json:"cpu_share"`
	RunqShare     float64 `json:"runq_share"`
	RunqKnown     bool    `json:"runq_known"`
	LateTicks     int64   `json:"late_ticks"`
	LateRan       float64 `json:"late_ran_share"`
	EarlyTicks    int64   `json:"early_ticks,omitempty"`
	ResolutionN   string  `json:"resolution"`
}

// Hops is one kind of hop (kind "py-hops"): call_soon_threadsafe, to_thread,
// run_in_executor, aiosqlite, executor (another executor: the whole call).
type Hops struct {
	Kind string `json:"kind"` // py-hops
	Of   string `json:"of"`
	// Calls is every call made, counted exactly; PerSec their rate over
	// the run.
	Calls  int64   `json:"calls"`
	PerSec float64 `json:"per_s"`
	// Timed is how many calls were timed: all of them, or when the probe
	// timed calls in windows (more wrapped calls a second than its
	// budget) those made in a window. The histograms are of the calls
	// timed (their n), each weighted by the calls it stands for.
	Timed int64 `json:"timed"`
	// SameThread: call_soon_threadsafe calls made on the loop's own thread
	// (not a hop between threads; left out of Hop), counted exactly.
	SameThread int64 `json:"same_thread,omitempty"`
	// Cancelled: calls cancelled, of those timed.
	Cancelled int64 `json:"cancelled,omitempty"`
	Hop       *Dist `json:"hop,omitempty"`   // call_soon_threadsafe: the call until the callback runs
	Wait      *Dist `json:"wait,omitempty"`  // the call until the worker starts the function
	Work      *Dist `json:"work,omitempty"`  // the function
	Back      *Dist `json:"back,omitempty"`  // its end until the awaiting coroutine resumes
	Total     *Dist `json:"total,omitempty"` // the whole call
}

// Site is one call site (kind "py-call-site"): a callback handed to
// call_soon_threadsafe, or a function handed to an executor, to_thread or
// aiosqlite's thread, with its means per call.
type Site struct {
	Kind   string  `json:"kind"` // py-call-site
	Of     string  `json:"of"`
	Name   string  `json:"name"`
	Where  string  `json:"where,omitempty"`
	Calls  int64   `json:"calls"`
	Timed  int64   `json:"timed"` // as in Hops
	WaitNs float64 `json:"wait_mean_ns,omitempty"`
	WorkNs float64 `json:"work_mean_ns,omitempty"`
	BackNs float64 `json:"back_mean_ns,omitempty"` // call_soon_threadsafe: the hop
	// HopsPerWork is (wait + back) ÷ work, for calls handed to a thread.
	HopsPerWork float64 `json:"hops_per_work,omitempty"`
	From        []From  `json:"from,omitempty"`
	Cancelled   int64   `json:"cancelled,omitempty"`
	SameThread  int64   `json:"same_thread,omitempty"`
}

// From is a thread that called call_soon_threadsafe, and how often
// (counted exactly).
type From struct {
	Thread string `json:"thread"`
	TID    int64  `json:"tid,omitempty"`
	Calls  int64  `json:"calls"`
}

// Library is a thread-backed library the probe hooked (aiosqlite).
type Library struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Cost is the probe's own price (kind "py-probe-cost"): its CPU time,
// estimated from what it measured of itself — the ticks and writes timed as
// they ran, the wrappers at their per-call cost calibrated at exit on
// stand-ins — as a share of the process's CPU time and of the run.
type Cost struct {
	Kind       string             `json:"kind"` // py-probe-cost
	SelfNs     float64            `json:"self_ns"`
	Parts      map[string]float64 `json:"parts_ns"`
	PerCallNs  map[string]float64 `json:"per_call_ns,omitempty"`
	CPUNs      int64              `json:"process_cpu_ns"`
	WallNs     int64              `json:"wall_ns"`
	CPUShare   float64            `json:"share_of_cpu"`
	WallShare  float64            `json:"share_of_wall"`
	AtExitNs   float64            `json:"at_exit_ns"`
	Estimated  bool               `json:"estimated"`
	TargetPct  float64            `json:"target_pct"`
	OverTarget bool               `json:"over_target,omitempty"`
	// BudgetPerS is the most wrapped calls a second the probe times (0:
	// every call); TimedCalls how many it timed, in Windows windows that
	// were open WindowShare of the run (1: every call was timed).
	BudgetPerS  int64   `json:"budget_per_s"`
	TimedCalls  int64   `json:"timed_calls"`
	Windows     int64   `json:"windows"`
	WindowShare float64 `json:"window_share"`
	// CountedIn says where every call out of a window was counted: "c"
	// (the counter ctxlab built for the interpreter, counter.c) or
	// "python"; CountedHow says how it was built, or why it was not.
	CountedIn  string `json:"counted_in"`
	CountedHow string `json:"counted_how,omitempty"`
}

// counter says, from the probe's final report and ctxlab's build of the
// counter (c), where the probe counted calls and why.
func (cost *Cost) counter(c Counter) {
	if cost.CountedIn == "c" {
		how := "built for this run in %s"
		if c.Cached {
			how = "from ctxlab's cache, ready in %s"
		}
		cost.CountedHow = "ctxlab's counter for this interpreter, " + fmt.Sprintf(how, result.FormatNs(float64(c.Took.Nanoseconds())))
		return
	}
	cost.CountedIn = "python"
	switch {
	case cost.CountedHow != "":
	case c.Why != "":
		cost.CountedHow = c.Why
	default: // built, but not for the interpreter that ran the probe
		cost.CountedHow = "the interpreter that ran is not the one ctxlab built its counter for (" + filepath.Base(c.File) + ")"
	}
}

// Reading is one sentence with the numbers behind it (kind "py-reading").
type Reading struct {
	Kind    string `json:"kind"` // py-reading
	Subject string `json:"subject"`
	Reading string `json:"reading"`
	Text    string `json:"text"`
}

// Reading kinds.
const (
	ReadGIL          = "gil-contention"
	ReadFreeThreaded = "free-threaded"
	ReadHandlerCPU   = "handler-cpu"
	ReadHops         = "hops-over-work"
	ReadInferredGIL  = "gil-inferred"
	ReadCPython      = "cpython"
)

// CostTargetPct is the probe's target: at most 2% of the program's time.
const CostTargetPct = 2.0

// report turns what was read into a Report (readings are added by Read).
func (c *collector) report() *Report {
	r := &Report{Loaded: c.hello != nil, Final: c.final != nil, Unsupported: c.unsup, Failed: c.failed, Libraries: c.libs}
	r.Notes = append(r.Notes, c.notes...)
	if c.badFrame != "" {
		r.Notes = append(r.Notes, "the probe's pipe carried something that is not a probe frame ("+c.badFrame+"); what came before it is reported")
	}
	if c.hello == nil {
		return r
	}
	r.Interpreter = c.interpreter()
	if c.final == nil {
		r.Notes = append(r.Notes, "the probe's final report did not arrive (the program ended by os._exit, a signal or an exec, or the probe was cut off): the figures are what it had sent until then, at most a second before the end")
	}
	names := threadNames{}
	for _, t := range c.sortedThreads() {
		names[t.Ident] = t
		r.Threads = append(r.Threads, Thread{Kind: "py-thread", PID: c.hello.PID, TID: t.NativeID, Ident: t.Ident, Name: t.Name, Daemon: t.Daemon, Ended: t.Ended})
	}
	for _, l := range c.sortedLoops() {
		r.Loops = append(r.Loops, c.loopReport(l, names))
	}
	r.Hops = c.hopsReport()
	for _, s := range c.sortedSites() {
		if s.calls > 0 {
			r.Sites = append(r.Sites, siteReport(s, names))
		}
	}
	if f := c.final; f != nil {
		r.Cost = costOf(f, c.kinds)
	}
	return r
}

// interpreter is the probed interpreter: as it said hello, and as it was
// at exit when its final report came.
func (c *collector) interpreter() Interpreter {
	h := c.hello
	in := Interpreter{Kind: "py-interpreter", PID: h.PID, Version: h.Version, FreeThreaded: h.FreeThreaded, GILEnabled: h.GILEnabled,
		SwitchS: h.SwitchS, TickNs: c.tickNs(), Build: "GIL"}
	if f := c.final; f != nil {
		in.GILEnabled, in.Executable, in.WallNs, in.CPUNs = f.GILEnabled, f.Executable, f.WallNs, f.CPUNs
		if f.SwitchS != h.SwitchS {
			in.SwitchS, in.SwitchStartS = f.SwitchS, h.SwitchS
		}
	}
	if in.FreeThreaded {
		in.Build = "free-threaded"
	}
	return in
}

// threadNames are the program's threads by threading ident.
type threadNames map[int64]*threadInfo

// of is a thread's name and native id, or what it is when threading
// did not start it.
func (n threadNames) of(ident int64) (string, int64) {
	if t, ok := n[ident]; ok {
		return t.Name, t.NativeID
	}
	return "a thread not started by threading", 0
}

// loopReport is one loop's lag: the ticks as fired, and corrected at
// their own cadence, with its thread's shares of the run.
func (c *collector) loopReport(l *loopAcc, names threadNames) Loop {
	name, tid := names.of(l.ident)
	every := l.cadence(c.tickNs())
	lag, added := l.fired.corrected(every)
	lp := Loop{Kind: "py-loop", Loop: l.id, Class: l.class, Thread: name, TID: tid, TickNs: c.tickNs(), Ticks: l.ticks, Corrected: added,
		CorrectedEveryNs: every, Lag: lag.dist(), AsFired: l.fired.dist(), Seconds: float64(l.wallNs) / 1e9, LateTicks: l.late,
		EarlyTicks: l.negative, ResolutionN: resolutionText(c.tickNs()), RunqKnown: l.runqKnown()}
	if l.runningNs > 0 {
		lp.ObservedShare = min(float64(l.observedNs)/float64(l.runningNs), 1)
	}
	if l.wallNs > 0 {
		lp.CPUShare = float64(l.cpuNs) / float64(l.wallNs)
		lp.RunqShare = float64(l.runqNs) / float64(l.wallNs)
	}
	if off := l.lateWl - l.lateRunqNs(); off > 0 {
		lp.LateRan = min(float64(l.lateCPU)/float64(off), 1)
	}
	return lp
}

// hopsReport is each kind of hop, in a fixed order, with its rate over
// the run and its histograms.
func (c *collector) hopsReport() []Hops {
	var wall float64
	if c.final != nil {
		wall = float64(c.final.WallNs) / 1e9
	}
	var kinds []string
	for k := range c.kinds {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kindOrder(kinds[i]) < kindOrder(kinds[j]) })
	var out []Hops
	for _, k := range kinds {
		a := c.kinds[k]
		hp := Hops{Kind: "py-hops", Of: k, Calls: a.calls, Timed: a.timed, SameThread: a.same, Cancelled: a.cancelled}
		if wall > 0 {
			hp.PerSec = float64(a.calls) / wall
		}
		hp.Hop, hp.Wait, hp.Work, hp.Back, hp.Total = a.hop.distOrNil(), a.wait.distOrNil(), a.work.distOrNil(), a.back.distOrNil(), a.total.distOrNil()
		out = append(out, hp)
	}
	return out
}

// distOrNil is the distribution, nil when nothing was recorded.
func (h *hist) distOrNil() *Dist {
	if h.n == 0 {
		return nil
	}
	d := h.dist()
	return &d
}

// siteReport is one call site's means per call and its calling threads,
// most calls first.
func siteReport(s *siteAcc, names threadNames) Site {
	st := Site{Kind: "py-call-site", Of: s.kind, Name: s.name, Where: s.where, Calls: s.calls, Timed: s.timed, Cancelled: s.cancelled, SameThread: s.same}
	if s.waitN > 0 {
		st.WaitNs = s.wait / float64(s.waitN)
	}
	if s.workN > 0 {
		st.WorkNs = s.work / float64(s.workN)
	}
	if s.backN > 0 {
		st.BackNs = s.back / float64(s.backN)
	}
	if st.WorkNs > 0 && s.waitN > 0 {
		st.HopsPerWork = (st.WaitNs + st.BackNs) / st.WorkNs
	}
	for ident, n := range s.from {
		name, tid := names.of(ident)
		st.From = append(st.From, From{Thread: name, TID: tid, Calls: n})
	}
	sort.Slice(st.From, func(i, j int) bool {
		return st.From[i].Calls > st.From[j].Calls || (st.From[i].Calls == st.From[j].Calls && st.From[i].TID < st.From[j].TID)
	})
	return st
}

func kindOrder(k string) int {
	for i, o := range []string{"call_soon_threadsafe", "to_thread", "run_in_executor", "aiosqlite", "executor"} {
		if k == o {
			return i
		}
	}
	return 99
}

// resolutionText states what a loop's lag can resolve.
func resolutionText(tickNs int64) string {
	return fmt.Sprintf("lateness of a timer re-armed every %s, timed with perf_counter_ns; a stall longer than the ticks' cadence is corrected for (HdrHistogram's RecordCorrectedValue, at the median time between ticks), a shorter one is seen when a tick falls due in it; an idle loop's timers fire up to ~1 ms late by themselves (epoll waits in whole milliseconds); percentiles within 1%%",
		result.FormatNs(float64(tickNs)))
}

// costOf estimates the probe's own CPU time from its final report: the
// wrappers cost what they cost a call timed for the calls they timed, and
// what counting alone costs a call for the rest.
func costOf(f *finalFrame, kinds map[string]*kindAcc) *Cost {
	calls := func(names ...string) (timed, untimed float64) {
		for _, k := range names {
			if a, ok := kinds[k]; ok {
				timed += float64(a.timed)
				untimed += float64(max(a.calls-a.timed, 0))
			}
		}
		return timed, untimed
	}
	c := &Cost{Kind: "py-probe-cost", Parts: map[string]float64{}, PerCallNs: map[string]float64{}, CPUNs: f.CPUNs, WallNs: f.WallNs, Estimated: true, TargetPct: CostTargetPct}
	for _, k := range []string{"tick", "flush", "load"} {
		c.Parts[k] = float64(f.SelfNs[k])
	}
	c.AtExitNs = float64(f.SelfNs["report"])
	if v, ok := f.Cal["cst_ns"]; ok {
		timed, untimed := calls("call_soon_threadsafe")
		c.PerCallNs["call_soon_threadsafe"] = v
		c.PerCallNs["call_soon_threadsafe_counted"] = f.Cal["cst_count_ns"]
		c.Parts["call_soon_threadsafe"] = v*timed + f.Cal["cst_count_ns"]*untimed
	}
	if v, ok := f.Cal["call_ns"]; ok {
		timed, untimed := calls("to_thread", "run_in_executor", "executor", "aiosqlite")
		c.PerCallNs["executor_call"] = v
		c.PerCallNs["executor_call_counted"] = f.Cal["call_count_ns"]
		c.Parts["executor_calls"] = v*timed + f.Cal["call_count_ns"]*untimed
	}
	for _, v := range c.Parts {
		c.SelfNs += v
	}
	if f.CPUNs > 0 {
		c.CPUShare = c.SelfNs / float64(f.CPUNs)
	}
	if f.WallNs > 0 {
		c.WallShare = c.SelfNs / float64(f.WallNs)
	}
	c.OverTarget = 100*c.CPUShare > CostTargetPct
	c.WindowShare = 1
	if f.Counter != nil {
		c.CountedIn, c.CountedHow = f.Counter.In, f.Counter.Why
	}
	if t := f.Timing; t != nil {
		c.BudgetPerS, c.TimedCalls, c.Windows = t.BudgetPerS, t.Timed, t.Windows
		if t.Windows > 0 && f.WallNs > 0 {
			c.WindowShare = min(float64(t.OpenNs)/float64(f.WallNs), 1)
		}
	}
	return c
}

// Records lists the report's JSON records, each with its kind.
func (r *Report) Records() []any {
	var out []any
	if r.Loaded {
		out = append(out, r.Interpreter)
		for _, t := range r.Threads {
			out = append(out, t)
		}
		for _, l := range r.Loops {
			out = append(out, l)
		}
		for _, h := range r.Hops {
			out = append(out, h)
		}
		for _, s := range r.Sites {
			out = append(out, s)
		}
		if r.Cost != nil {
			out = append(out, *r.Cost)
		}
	}
	for _, rd := range r.Readings {
		out = append(out, rd)
	}
	for _, n := range r.allNotes() {
		out = append(out, map[string]string{"kind": "py-note", "text": n})
	}
	return out
}

func (r *Report) allNotes() []string {
	var out []string
	if r.Unsupported != "" {
		out = append(out, "the probe did not start: "+r.Unsupported)
	}
	if r.Failed != "" {
		out = append(out, "the probe could not start: "+r.Failed+"; the program ran without it")
	}
	return append(out, r.Notes...)
}

// ThreadName is the Python name of the thread with native id tid of
// process pid ("" when the probe did not see it).
func (r *Report) ThreadName(pid int, tid int64) string {
	if r == nil || !r.Loaded || pid != r.Interpreter.PID {
		return ""
	}
	name := ""
	for _, t := range r.Threads {
		if t.TID == tid {
			name = t.Name // the latest thread with that id
		}
	}
	return name
}
