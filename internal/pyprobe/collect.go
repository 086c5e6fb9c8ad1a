package pyprobe

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The event types of an "E" frame (probe.py): recordLen int64 a record.
const (
	evLag   = 1 // loop, lag ns; since the previous tick (or its window's opening): the loop thread's CPU ns, the wall ns; 0
	evCST   = 2 // site, hop ns, the calling thread's ident, 1 when it was the loop's own thread, weight
	evCall  = 3 // site, wait ns, work ns, back ns (-1: not known), weight
	evRunq  = 4 // loop, the loop thread's run-queue wait ns over the wall ns since the previous evRunq (about a second)
	evCount = 5 // site, calls counted since its previous evCount (every call, timed or not), the calling thread's ident (call_soon_threadsafe; 0 else), 1 when from the loop's own thread; 0

	recordLen = 6
)

// eventNames are probe.py's names of the event types (TestProbeProtocol
// holds probe.py's values and record lengths to these).
var eventNames = map[string]int64{"T_LAG": evLag, "T_CST": evCST, "T_CALL": evCall, "T_RUNQ": evRunq, "T_COUNT": evCount}

// maxFrame bounds one frame: the probe sends at most 8192 records (320 KiB)
// of events at a time; anything far larger is not the probe talking.
const maxFrame = 16 << 20

// histHigh is the largest value a histogram keeps (an hour, in ns); larger
// ones are kept as this, and max is kept exactly beside.
const histHigh = int64(time.Hour)

// lateNs: a tick this late or later is a late tick. An idle loop's timers
// fire up to about 1 ms late by themselves (epoll waits in whole
// milliseconds), so lateness below it is the loop's own granularity.
const lateNs = int64(time.Millisecond)

// hist is an HdrHistogram (2 significant digits, 1 ns to an hour) with the
// exact max and sum beside it. n is the values' weight (the calls they stand
// for), values how many were recorded.
type hist struct {
	h      *hdrhistogram.Histogram
	max    int64
	sum    float64
	n      int64
	values int64
}

func newHist() *hist { return &hist{h: hdrhistogram.New(1, histHigh, 2)} }

func (h *hist) record(v int64) { h.recordN(v, 1) }

// recordN records v for w calls: a call timed in the probe's windows
// stands for w calls (probe.py).
func (h *hist) recordN(v, w int64) {
	v = max(v, 0)
	h.max = max(h.max, v)
	_ = h.h.RecordValues(min(v, histHigh), w)
	h.n += w
	h.values++
	h.sum += float64(v) * float64(w)
}

// corrected is the distribution with, for every value longer than
// interval, the values a sampler every interval would have seen during
// that stall (v-interval, v-2·interval, … down to interval), as
// HdrHistogram's RecordCorrectedValue adds them, so a long stall is not
// one sample; added counts them. Values are taken at their bucket's
// lowest equivalent (within 1%); the max stays exact.
func (h *hist) corrected(interval int64) (out *hist, added int64) {
	out = newHist()
	out.max, out.n, out.sum, out.values = h.max, h.n, h.sum, h.values
	for _, b := range h.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		_ = out.h.RecordValues(b.From, b.Count)
		for m := b.From - interval; interval > 0 && m >= interval; m -= interval {
			_ = out.h.RecordValues(m, b.Count)
			added += b.Count
			out.sum += float64(m) * float64(b.Count)
		}
	}
	out.n += added
	out.values += added
	return out, added
}

// Dist is a distribution of durations in ns: how many values were timed (N),
// mean, percentiles from the histogram (each within 1% of the true value),
// the exact max, and the histogram's non-empty buckets as [upper ns, count]
// pairs. A call timed in the probe's windows is weighted by the calls it
// stands for in the mean, percentiles and buckets, and counts once in N.
type Dist struct {
	N       int64      `json:"n"`
	MeanNs  float64    `json:"mean_ns"`
	P50Ns   int64      `json:"p50_ns"`
	P99Ns   int64      `json:"p99_ns"`
	P999Ns  int64      `json:"p999_ns"`
	MaxNs   int64      `json:"max_ns"`
	Buckets [][2]int64 `json:"buckets,omitempty"`
}

func (h *hist) dist() Dist {
	if h == nil || h.n == 0 {
		return Dist{}
	}
	d := Dist{N: h.values, MeanNs: h.sum / float64(h.n), MaxNs: h.max,
		P50Ns: h.h.ValueAtPercentile(50), P99Ns: h.h.ValueAtPercentile(99), P999Ns: h.h.ValueAtPercentile(99.9)}
	for _, p := range []*int64{&d.P50Ns, &d.P99Ns, &d.P999Ns} {
		*p = min(*p, h.max)
	}
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			d.Buckets = append(d.Buckets, [2]int64{b.To, b.Count})
		}
	}
	return d
}

// loopAcc is one loop's ticks.
type loopAcc struct {
	id, ident       int64
	class           string
	fired, period   *hist // the ticks' lateness, and the time between ticks
	ticks           int64
	cpuNs, wallNs   int64
	runqNs          int64
	lateCPU, lateWl int64
	lateRunq        int64
	late            int64
	negative        int64
	// observedNs of runningNs the loop's polls were timed (the probe's
	// windows); both 0 until the loop stopped.
	observedNs, runningNs int64
	// segLateWl is the wall time of the late ticks since the last evRunq
	// (whose run-queue wait it gives, as a share of its wall time);
	// runqSegs counts the evRunq records.
	segLateWl int64
	runqSegs  int64
}

// siteAcc is one call site: a callback handed to call_soon_threadsafe, or
// a function handed to an executor, to_thread or aiosqlite's thread. calls,
// same and from are counted (every call); timed and cancelled are of the
// calls timed; the sums of times are weighted (recordN).
type siteAcc struct {
	id                  int64
	kind, name, where   string
	calls, same, timed  int64
	cancelled           int64
	waitN, workN, backN int64
	wait, work, back    float64 // ns, summed over the calls where known
	from                map[int64]int64
}

// kindAcc is the histograms of one kind of hop. calls and same are
// counted (every call); timed counts the calls timed, cancelled those of
// them cancelled.
type kindAcc struct {
	hop, wait, work, back, total *hist
	calls, same, cancelled       int64
	timed                        int64
}

// collector reads the probe's frames and keeps what they say.
type collector struct {
	hello    *helloFrame
	final    *finalFrame
	unsup    string
	failed   string
	loops    map[int64]*loopAcc
	sites    map[int64]*siteAcc
	kinds    map[string]*kindAcc
	threads  map[int64]*threadInfo // by ident
	libs     []Library
	notes    []string
	badFrame string
	events   int64
}

type threadInfo struct {
	Ident    int64  `json:"ident"`
	NativeID int64  `json:"native_id"`
	Name     string `json:"name"`
	Daemon   bool   `json:"daemon"`
	Ended    bool   `json:"ended"`
	order    int
}

type helloFrame struct {
	Protocol     int     `json:"protocol"`
	PID          int     `json:"pid"`
	Version      string  `json:"version"`
	FreeThreaded bool    `json:"free_threaded"`
	GILEnabled   bool    `json:"gil_enabled"`
	SwitchS      float64 `json:"switch_interval_s"`
	TickNs       int64   `json:"tick_ns"`
	MainIdent    int64   `json:"main_ident"`
	MainNative   int64   `json:"main_native_id"`
}

type finalFrame struct {
	PID        int                `json:"pid"`
	WallNs     int64              `json:"wall_ns"`
	CPUNs      int64              `json:"cpu_ns"`
	SwitchS    float64            `json:"switch_interval_s"`
	GILEnabled bool               `json:"gil_enabled"`
	Threads    []threadInfo       `json:"threads"`
	SelfNs     map[string]int64   `json:"self_ns"`
	Cal        map[string]float64 `json:"calibration"`
	Executable string             `json:"executable"`
	Argv       []string           `json:"argv"`
	Timing     *timingFrame       `json:"timing"`
	Counter    *counterFrame      `json:"counter"`
}

// counterFrame is where the probe counted calls out of its windows: "c",
// or "python" and why, when the probe knows why (ctxlab knows the rest).
type counterFrame struct {
	In  string `json:"in"`
	Why string `json:"why"`
}

// timingFrame is how the probe timed calls: in windows, when the program
// made more wrapped calls a second than its budget (probe.py).
type timingFrame struct {
	BudgetPerS int64 `json:"budget_per_s"`
	Timed      int64 `json:"timed"`
	Windows    int64 `json:"windows"`
	WindowNs   int64 `json:"window_ns"`
	OpenNs     int64 `json:"open_ns"`
}

func newCollector() *collector {
	return &collector{loops: map[int64]*loopAcc{}, sites: map[int64]*siteAcc{}, kinds: map[string]*kindAcc{}, threads: map[int64]*threadInfo{}}
}

var errFrame = errors.New("not a probe frame")

// read reads frames until EOF (nil) or an error.
func (c *collector) read(r io.Reader) error {
	var head [5]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := binary.LittleEndian.Uint32(head[:4])
		if n > maxFrame {
			c.badFrame = fmt.Sprintf("a frame of %d bytes", n)
			return fmt.Errorf("%w: %s", errFrame, c.badFrame)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		if err := c.frame(head[4], buf); err != nil {
			c.badFrame = err.Error()
			return err
		}
	}
}

// frame takes one frame.
func (c *collector) frame(typ byte, b []byte) error {
	switch typ {
	case 'E':
		const size = 8 * recordLen
		if len(b)%size != 0 {
			return fmt.Errorf("%w: %d bytes of events, not whole records", errFrame, len(b))
		}
		for i := 0; i < len(b); i += size {
			var r [recordLen]int64
			for j := range r {
				r[j] = int64(binary.LittleEndian.Uint64(b[i+8*j:]))
			}
			c.event(r)
		}
		return nil
	case 'J':
		return c.object(b)
	}
	return fmt.Errorf("%w: type %q", errFrame, typ)
}

// Protocol is the version of the probe's pipe protocol this collector
// reads (probe.py's PROTOCOL; TestProbeProtocol holds them together).
const Protocol = 1

// Every JSON object kind the probe sends (probe.py and its loader,
// sitecustomize.py), with the type it is read into: the one declaration of
// the "J" frames on the Go side. TestProbeProtocol fails when the Python
// sends a kind or a field not declared here, or when a kind here is one
// the Python never sends.
var frameTypes = map[string]func() any{
	"hello":       func() any { return new(helloFrame) },
	"unsupported": func() any { return new(statusFrame) },
	"failed":      func() any { return new(statusFrame) },
	"final":       func() any { return new(finalFrame) },
	"thread":      func() any { return new(threadInfo) },
	"thread-end":  func() any { return new(threadInfo) },
	"site":        func() any { return new(siteFrame) },
	"loop":        func() any { return new(loopFrame) },
	"loop-end":    func() any { return new(loopFrame) },
	"library":     func() any { return new(Library) },
	"note":        func() any { return new(noteFrame) },
}

// statusFrame: the probe is not running (unsupported: not a CPython it
// supports; failed: it raised as it started), and why.
type statusFrame struct {
	PID    int    `json:"pid"`
	Reason string `json:"reason"`
}

type siteFrame struct {
	Site  int64  `json:"site"`
	Kind  string `json:"site_kind"`
	Name  string `json:"name"`
	Where string `json:"where"`
}

// loopFrame: a loop's start (its thread and class) or its end (how long it
// ran, and how much of that it was observed).
type loopFrame struct {
	Loop       int64  `json:"loop"`
	Ident      int64  `json:"ident"`
	Class      string `json:"class"`
	ObservedNs int64  `json:"observed_ns"`
	RunningNs  int64  `json:"running_ns"`
}

type noteFrame struct {
	Text string `json:"text"`
}

func (c *collector) object(b []byte) error {
	var k struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("%w: %v", errFrame, err)
	}
	mk, ok := frameTypes[k.Kind]
	if !ok {
		c.notes = append(c.notes, fmt.Sprintf("the probe sent a record of an unknown kind %q", k.Kind))
		return nil
	}
	v := mk()
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", errFrame, k.Kind, err)
	}
	c.take(k.Kind, v)
	return nil
}

// take keeps one decoded JSON object of the probe's.
func (c *collector) take(kind string, v any) {
	switch f := v.(type) {
	case *helloFrame:
		c.hello = f
		c.threads[f.MainIdent] = &threadInfo{Ident: f.MainIdent, NativeID: f.MainNative, Name: "MainThread", order: 0}
		if f.Protocol != Protocol {
			c.notes = append(c.notes, fmt.Sprintf("the probe speaks protocol %d where this ctxlab reads %d: its figures may be misread", f.Protocol, Protocol))
		}
	case *statusFrame:
		if kind == "failed" {
			c.failed = f.Reason
		} else {
			c.unsup = f.Reason
		}
	case *finalFrame:
		c.final = f
		for _, t := range f.Threads {
			c.thread(t, false)
		}
	case *threadInfo:
		c.thread(*f, kind == "thread-end")
	case *siteFrame:
		a := c.site(f.Site)
		a.kind, a.name, a.where = f.Kind, f.Name, f.Where
	case *loopFrame:
		a := c.loop(f.Loop)
		if kind == "loop-end" {
			a.observedNs += max(f.ObservedNs, 0)
			a.runningNs += max(f.RunningNs, 0)
		} else {
			a.ident, a.class = f.Ident, f.Class
		}
	case *Library:
		c.libs = append(c.libs, *f)
	case *noteFrame:
		c.notes = append(c.notes, trimNL(f.Text))
	}
}

func (c *collector) thread(t threadInfo, ended bool) {
	if t.Ident == 0 {
		return
	}
	old, ok := c.threads[t.Ident]
	if ok && old.NativeID == t.NativeID {
		old.Name = t.Name
		old.Ended = old.Ended || ended
		return
	}
	t.Ended = ended
	t.order = len(c.threads)
	c.threads[t.Ident] = &t
}

func (c *collector) loop(id int64) *loopAcc {
	l, ok := c.loops[id]
	if !ok {
		l = &loopAcc{id: id, fired: newHist(), period: newHist()}
		c.loops[id] = l
	}
	return l
}

func (c *collector) site(id int64) *siteAcc {
	s, ok := c.sites[id]
	if !ok {
		s = &siteAcc{id: id, kind: "unknown", name: fmt.Sprintf("site %d", id), from: map[int64]int64{}}
		c.sites[id] = s
	}
	return s
}

func (c *collector) kind(name string) *kindAcc {
	k, ok := c.kinds[name]
	if !ok {
		k = &kindAcc{hop: newHist(), wait: newHist(), work: newHist(), back: newHist(), total: newHist()}
		c.kinds[name] = k
	}
	return k
}

func (c *collector) tickNs() int64 {
	if c.hello != nil && c.hello.TickNs > 0 {
		return c.hello.TickNs
	}
	return Tick.Nanoseconds()
}

// event takes one record.
func (c *collector) event(r [recordLen]int64) {
	c.events++
	switch r[0] {
	case evLag:
		c.loop(r[1]).tick(r[2], max(r[3], 0), max(r[4], 0))
	case evRunq:
		c.loop(r[1]).runqSegment(max(r[2], 0), max(r[3], 0))
	case evCST:
		c.hop(c.site(r[1]), r[2], r[4] != 0, max(r[5], 1))
	case evCall:
		c.call(c.site(r[1]), r[2], r[3], r[4], max(r[5], 1))
	case evCount:
		c.count(c.site(r[1]), max(r[2], 0), r[3], r[4] != 0)
	}
}

// count takes n calls counted at a site (every call, timed or not); for
// call_soon_threadsafe, n made from thread caller, or from the loop's own
// thread (not a hop).
func (c *collector) count(s *siteAcc, n, caller int64, sameThread bool) {
	k := c.kind(s.kind)
	s.calls += n
	k.calls += n
	switch {
	case sameThread:
		s.same += n
		k.same += n
	case caller != 0:
		s.from[caller] += n
	}
}

// tick takes one tick of the loop's timer: its lateness, and its thread's
// CPU time and the wall time since the last tick.
func (l *loopAcc) tick(lag, cpu, wall int64) {
	if lag < 0 {
		l.negative++
		lag = 0
	}
	l.ticks++
	l.fired.record(lag)
	l.period.record(wall)
	l.cpuNs += cpu
	l.wallNs += wall
	if lag >= lateNs {
		l.late++
		l.lateCPU += cpu
		l.lateWl += wall
		l.segLateWl += wall
	}
}

// runqSegment takes the run-queue wait of a segment of about a second:
// the late ticks in it are given its share of their wall time.
func (l *loopAcc) runqSegment(runq, wall int64) {
	l.runqNs += runq
	l.runqSegs++
	if wall > 0 {
		l.lateRunq += int64(float64(l.segLateWl) * min(float64(runq)/float64(wall), 1))
	}
	l.segLateWl = 0
}

// hop takes one call_soon_threadsafe timed, standing for w calls in the
// distributions: from the call until the callback ran; one made on the
// loop's own thread is no hop. Its count came in an evCount.
func (c *collector) hop(s *siteAcc, ns int64, sameThread bool, w int64) {
	k := c.kind("call_soon_threadsafe")
	s.timed++
	k.timed++
	if sameThread {
		return
	}
	k.hop.recordN(ns, w)
	s.back += float64(max(ns, 0)) * float64(w)
	s.backN += w
}

// call takes one call handed to a thread timed, standing for w calls in
// the distributions, split in three (-1: not known): a call to another
// executor has its whole time in back; one cancelled before or while its
// function ran has no work. Its count came in an evCount.
func (c *collector) call(s *siteAcc, wait, work, back, w int64) {
	k := c.kind(s.kind)
	s.timed++
	k.timed++
	fw := float64(w)
	switch {
	case wait < 0 && work < 0 && back >= 0: // another executor: the whole call
		k.total.recordN(back, w)
		s.back += float64(back) * fw
		s.backN += w
		return
	case wait < 0:
		s.cancelled++
		k.cancelled++
		return
	}
	k.wait.recordN(wait, w)
	s.wait += float64(wait) * fw
	s.waitN += w
	if work < 0 {
		s.cancelled++
		k.cancelled++
		return
	}
	k.work.recordN(work, w)
	k.back.recordN(back, w)
	k.total.recordN(wait+work+back, w)
	s.work += float64(work) * fw
	s.workN += w
	s.back += float64(back) * fw
	s.backN += w
}

// sortedLoops, sortedSites and sortedThreads list in a stable order.
func (c *collector) sortedLoops() []*loopAcc {
	var out []*loopAcc
	for _, l := range c.loops {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (c *collector) sortedSites() []*siteAcc {
	var out []*siteAcc
	for _, s := range c.sites {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].calls != out[j].calls {
			return out[i].calls > out[j].calls
		}
		return out[i].id < out[j].id
	})
	return out
}

func (c *collector) sortedThreads() []*threadInfo {
	var out []*threadInfo
	for _, t := range c.threads {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// cadence is how often the loop's ticks came: the median time from one
// tick to the next (a 1 ms timer on a loop whose ticks are 1 ms late runs
// every 2 ms), at least the timer's period; the period itself before any
// tick.
func (l *loopAcc) cadence(tick int64) int64 {
	if l.period.n == 0 {
		return tick
	}
	return max(tick, min(l.period.h.ValueAtPercentile(50), l.period.max))
}

// runqKnown says the loop's run-queue figures are there (schedstat).
func (l *loopAcc) runqKnown() bool { return l.runqSegs > 0 }

// lateRunqNs is the run-queue wait of the late ticks: the segments' shares,
// and for late ticks after the last segment (a loop still running when
// the report came) the loop's share over the run.
func (l *loopAcc) lateRunqNs() int64 {
	q := l.lateRunq
	if l.segLateWl > 0 && l.runqSegs > 0 && l.wallNs > 0 {
		q += int64(float64(l.segLateWl) * min(float64(l.runqNs)/float64(l.wallNs), 1))
	}
	return q
}
