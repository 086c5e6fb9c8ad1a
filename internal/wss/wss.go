// Package wss estimates the working set of a running process without root
// or hardware counters: every interval it clears the process's referenced
// bits (/proc/PID/clear_refs, which the process's owner may write) and
// reads back how much was touched since (/proc/PID/smaps_rollup
// Referenced), as the standard WSS tools do. It keeps its own cost — the
// kernel's page-table walks, done on ctxlab's CPU time — at most Budget
// of the program's CPU time by skipping intervals, and says so. It sets
// the working set beside this host's caches and prices the indirect cost
// of the program's switches from this host's refill curve (reading.go).
//
// A Sampler is driven by whoever supervises the command (diagnose,
// diagnose --vary, watch): Start, Tick every interval, Stop. A nil
// Sampler (--wss off) does nothing, so the hooks stay one line each.
package wss

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Budget is the most of the program's CPU time the sampling may cost.
const Budget = 0.02

// firstPageNs is what a tick is assumed to cost per resident page before
// one has been measured (clear_refs and smaps_rollup each walk every page
// table entry): about 2× the 170 ns a steady tick cost per page of a
// 256 MiB set on a 2-vCPU x86 VM, so a first window is refused rather
// than the budget overrun.
const firstPageNs = 300

// firstTickNs is the part of a tick's cost that does not grow with RSS
// (opening and parsing the /proc files), assumed before one is measured:
// about 3× what it cost a small process on the same VM.
const firstTickNs = 600_000

// busyShare: a thread is busy in an interval when it ran at least
// 1/busyShare of the busiest thread's CPU time in it.
const busyShare = 100

// maxBackoff is the most ticks let pass between two readings of the
// program's CPU time while the budget refuses a window.
const maxBackoff = 64

// maxKept is how many per-interval figures a Reading keeps (the first
// ones); median and max cover all of them.
const maxKept = 1000

// Parse reads --wss: on or off.
func Parse(s string) (on bool, err error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("--wss %q: must be on or off", s)
}

// Sampler samples one process's working set, interval by interval.
type Sampler struct {
	root        procstat.Root
	pid         int
	start       time.Time
	unsupported string
	open        bool
	openedAt    time.Time
	openCPU     map[int]uint64 // each thread's CPU time when the window opened
	lastCost    uint64         // what a steady tick (a window closed, the next opened) last cost
	costNs      uint64         // all the sampling cost, ctxlab's CPU time
	progCPU     uint64         // the program's CPU time at the last tick
	windows     []window
	threadCPU   map[int]uint64 // each thread's CPU time within the windows
	names       map[int]string // each thread's name (comm), read once
	skipped     int
	idle        int // windows in which no thread of the process ran: left out
	wait        int // ticks to let pass before the next reading of the program's CPU time
	backoff     int
	maxRSS      int64
	lost        int // windows that could not be read back (the program exited)
}

type window struct {
	seconds    float64
	referenced int64
	busy       int
	perThread  int64 // referenced ÷ busy
}

// Start begins sampling pid; nil when off. Whether the process can be
// sampled is known at once (Unsupported).
func Start(root procstat.Root, pid int, on bool) *Sampler {
	if !on {
		return nil
	}
	s := &Sampler{root: root, pid: pid, start: time.Now(), threadCPU: map[int]uint64{}, names: map[int]string{}}
	runtime.LockOSThread() // the check's cost counts too
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	s.unsupported = s.check()
	s.costNs = threadCPU() - t0
	return s
}

// check says why pid's working set cannot be read here, "" when it can.
func (s *Sampler) check() string {
	dir := filepath.Join(string(s.root), strconv.Itoa(s.pid))
	_, errR := os.Stat(filepath.Join(dir, "smaps_rollup"))
	_, errS := os.Stat(filepath.Join(dir, "smaps"))
	if errors.Is(errR, os.ErrNotExist) && errors.Is(errS, os.ErrNotExist) {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Sprintf("PID %d: no such process", s.pid)
		}
		return "this kernel has neither /proc/PID/smaps_rollup nor /proc/PID/smaps (CONFIG_PROC_PAGE_MONITOR off)"
	}
	f, err := os.OpenFile(filepath.Join(dir, "clear_refs"), os.O_WRONLY, 0)
	if err != nil {
		return whyNot(s.pid, "clear_refs", err)
	}
	_ = f.Close()
	if _, _, err := s.root.ReadReferenced(s.pid); err != nil {
		return whyNot(s.pid, "smaps_rollup", err)
	}
	return ""
}

// whyNot is why a /proc file of pid cannot be used, in words.
func whyNot(pid int, file string, err error) string {
	if errors.Is(err, os.ErrPermission) {
		owner := ""
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/proc", strconv.Itoa(pid)), &st) == nil && int(st.Uid) != os.Geteuid() {
			owner = fmt.Sprintf(": another user's process (uid %d; ctxlab runs as uid %d)", st.Uid, os.Geteuid())
		}
		return fmt.Sprintf("/proc/%d/%s: permission denied%s — only the process's owner (or root) may clear and read its referenced bits", pid, file, owner)
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, procstat.ErrNoProcess) {
		return fmt.Sprintf("/proc/%d/%s: not there (the process exited, or this kernel lacks it)", pid, file)
	}
	return fmt.Sprintf("/proc/%d/%s: %v", pid, file, err)
}

// Unsupported is why the working set cannot be sampled, "" when it can.
func (s *Sampler) Unsupported() string {
	if s == nil {
		return "--wss off"
	}
	return s.unsupported
}

// Tick ends the open window (reads what was touched since it opened) and
// opens the next one (clears the referenced bits) when the budget allows.
// Call it every interval while the process runs.
func (s *Sampler) Tick() {
	if s == nil || s.unsupported != "" {
		return
	}
	if s.wait > 0 { // backing off: not even the program's CPU time is read
		s.wait--
		s.skipped++
		return
	}
	runtime.LockOSThread() // the cost is this thread's CPU time
	defer runtime.UnlockOSThread()
	t0 := threadCPU()
	if p, err := s.root.ReadProc(s.pid); err == nil {
		s.progCPU = uint64(p.UTicks+p.STicks) * (1e9 / procstat.UserHZ)
		s.maxRSS = max(s.maxRSS, p.RSSBytes)
	}
	closed := s.open
	if s.open {
		s.close()
	}
	opened := false
	if s.allowed() {
		opened = s.openWindow()
		s.backoff = 0
	} else {
		// Over budget: wait ever longer before reading the program's CPU
		// time again, so that an idle program costs next to nothing.
		s.skipped++
		s.backoff = min(max(1, 2*s.backoff), maxBackoff)
		s.wait = s.backoff
	}
	spent := threadCPU() - t0
	s.costNs += spent
	switch {
	case closed && opened: // a steady tick: one window's closing and the next one's opening
		s.lastCost = spent
	case opened && s.lastCost == 0: // the first opening: about half a steady tick
		s.lastCost = 2 * spent
	}
}

// allowed says whether one more window keeps the sampling within Budget
// of the program's CPU time so far.
func (s *Sampler) allowed() bool {
	return float64(s.costNs+s.estimate()) <= Budget*float64(s.progCPU)
}

// estimate is what the next window is expected to cost: the last steady
// tick's cost and a margin, or before one, a guess from the RSS.
func (s *Sampler) estimate() uint64 {
	if s.lastCost > 0 {
		return s.lastCost + s.lastCost/2 // the next tick may cost more
	}
	return firstTickNs + uint64(s.maxRSS/int64(os.Getpagesize()))*firstPageNs
}

// openWindow clears the referenced bits and notes each thread's CPU time.
func (s *Sampler) openWindow() bool {
	cpu, _ := s.root.ReadThreadsCPU(s.pid)
	f, err := os.OpenFile(filepath.Join(string(s.root), strconv.Itoa(s.pid), "clear_refs"), os.O_WRONLY, 0)
	if err != nil {
		if len(s.windows) == 0 && !errors.Is(err, os.ErrNotExist) {
			s.unsupported = whyNot(s.pid, "clear_refs", err)
		}
		return false
	}
	_, err = f.Write([]byte("1"))
	_ = f.Close()
	if err != nil {
		return false
	}
	s.open, s.openedAt, s.openCPU = true, time.Now(), cpu
	return true
}

// close reads what the process touched since the window opened.
func (s *Sampler) close() {
	s.open = false
	ref, rss, err := s.root.ReadReferenced(s.pid)
	cpu, _ := s.root.ReadThreadsCPU(s.pid)
	secs := time.Since(s.openedAt).Seconds()
	if err != nil || rss == 0 { // exited: a zombie has no memory left to read
		s.lost++
		return
	}
	s.maxRSS = max(s.maxRSS, rss)
	deltas := map[int]uint64{}
	for tid, c := range cpu {
		o := s.openCPU[tid] // 0 for a thread born in the window: all its CPU time is in it
		if c > o {
			deltas[tid] = c - o
			s.threadCPU[tid] += c - o
		}
	}
	for tid := range deltas {
		if _, ok := s.names[tid]; !ok {
			b, _ := os.ReadFile(filepath.Join(string(s.root), strconv.Itoa(s.pid), "task", strconv.Itoa(tid), "comm"))
			s.names[tid] = strings.TrimSpace(string(b))
		}
	}
	w := window{seconds: secs, referenced: ref, busy: busyCount(deltas)}
	if w.busy == 0 { // no thread ran (a machine that kept it from the CPU): it touched nothing to read
		s.idle++
		return
	}
	w.perThread = ref / int64(w.busy)
	s.windows = append(s.windows, w)
}

// busyCount is how many threads ran at least a hundredth of the busiest
// one's CPU time (busyShare): enough to touch much of their sets.
func busyCount(cpu map[int]uint64) int {
	var top uint64
	for _, c := range cpu {
		top = max(top, c)
	}
	n := 0
	for _, c := range cpu {
		if top > 0 && c*busyShare >= top {
			n++
		}
	}
	return n
}

// threadCPU is the calling thread's CPU time in ns.
func threadCPU() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// Stop ends the sampling (the open window, if any, is dropped: the
// process has exited or the watch ended) and returns what it found; nil
// when off.
func (s *Sampler) Stop() *Reading {
	if s == nil {
		return nil
	}
	r := &Reading{Kind: "wss", PID: s.pid, RSSBytes: s.maxRSS, CostNs: s.costNs, ProgramCPUNs: s.progCPU, Skipped: s.skipped, Idle: s.idle}
	if s.progCPU > 0 {
		r.CostShare = float64(s.costNs) / float64(s.progCPU)
	}
	switch {
	case s.unsupported != "":
		r.Unsupported = s.unsupported
		return r
	case len(s.windows) == 0:
		r.Unsupported = fmt.Sprintf("no interval was read: the process ran %s, too short to sample (the first interval opens one interval in, once its CPU time covers the sampling's cost)",
			time.Since(s.start).Round(time.Millisecond))
		switch {
		case s.idle > 0:
			r.Unsupported = fmt.Sprintf("no interval was read: the process did not run in any of the %d interval(s) sampled (the machine kept it from the CPU, or it slept)", s.idle)
		case s.lost > 0:
			r.Unsupported = "no interval was read: the process exited before its first interval ended"
		case s.skipped > 0:
			r.Unsupported = fmt.Sprintf("no interval was read: the process used %s of CPU time, too little for one reading within %s of it (one would cost about %s, its RSS being %s)",
				result.FormatNs(float64(s.progCPU)), price.Percent(Budget), result.FormatNs(float64(s.estimate())), result.FormatBytes(float64(s.maxRSS)))
		}
		return r
	}
	var refs []int64
	var busy []int
	var per []int64
	var secs float64
	for _, w := range s.windows {
		refs = append(refs, w.referenced)
		busy = append(busy, w.busy)
		if w.busy > 0 {
			per = append(per, w.perThread)
		}
		secs += w.seconds
	}
	r.Intervals, r.IntervalS = len(refs), secs/float64(len(refs))
	r.PerInterval = refs[:min(len(refs), maxKept)]
	slices.Sort(refs)
	slices.Sort(busy)
	r.MedianBytes, r.MaxBytes = median(refs), refs[len(refs)-1]
	r.BusyThreads = busy[len(busy)/2]
	if len(per) > 0 {
		slices.Sort(per)
		r.PerThreadBytes = median(per)
	}
	r.perThread(s.threadCPU, s.names)
	return r
}

// median of sorted values.
func median(v []int64) int64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
