package measure

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// PerfSettle is how long after ctxlab closed its last per-thread perf
// event the kernel's scheduler hooks for perf events should be off again.
// The kernel switches them off a second (HZ) after the last such event
// goes (kernel/events/core.c, unaccount_event), and until then every
// context switch on the machine pays them; thread round trips measured
// right after a perf probe read 0.7–1.6% slower, and not after a 1.5 s
// pause (docs/harness.md). The half second beyond the
// kernel's second is a margin for its workqueue.
const PerfSettle = 1500 * time.Millisecond

// perfEpoch and lastPerfClose keep when ctxlab last closed a per-thread
// perf event, in monotonic ns since perfEpoch (0: never), so a step of
// the wall clock cannot stretch the wait.
var (
	perfEpoch     = time.Now()
	lastPerfClose atomic.Int64
)

// closeEvent closes a per-thread perf event and notes when; of two
// closes at once the later time stays.
func closeEvent(fd int) error {
	err := unix.Close(fd)
	now := int64(time.Since(perfEpoch)) + 1 // never 0
	for {
		last := lastPerfClose.Load()
		if last >= now || lastPerfClose.CompareAndSwap(last, now) {
			return err
		}
	}
}

// PerfSettleLeft is how much of PerfSettle is still to run since ctxlab
// last closed a per-thread perf event: 0 when it never opened one, or
// closed its last long enough ago. Other processes' perf events are not
// seen: they keep the hooks on whatever this says.
func PerfSettleLeft() time.Duration {
	last := lastPerfClose.Load()
	if last == 0 {
		return 0
	}
	return min(PerfSettle, max(0, PerfSettle-(time.Since(perfEpoch)-time.Duration(last))))
}

// EventSpec names one perf event ctxlab may open.
type EventSpec struct {
	Name   string
	Kind   string // "hardware" or "software"
	Type   uint32
	Config uint64
}

// Events is the set of counters ctxlab knows, hardware first.
var Events = []EventSpec{
	{"instructions", "hardware", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_INSTRUCTIONS},
	{"cycles", "hardware", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES},
	{"branch-misses", "hardware", unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_BRANCH_MISSES},
	{"LLC-load-misses", "hardware", unix.PERF_TYPE_HW_CACHE, unix.PERF_COUNT_HW_CACHE_LL |
		unix.PERF_COUNT_HW_CACHE_OP_READ<<8 | unix.PERF_COUNT_HW_CACHE_RESULT_MISS<<16},
	{"dTLB-load-misses", "hardware", unix.PERF_TYPE_HW_CACHE, unix.PERF_COUNT_HW_CACHE_DTLB |
		unix.PERF_COUNT_HW_CACHE_OP_READ<<8 | unix.PERF_COUNT_HW_CACHE_RESULT_MISS<<16},
	{"context-switches", "software", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CONTEXT_SWITCHES},
	{"cpu-migrations", "software", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_CPU_MIGRATIONS},
	{"task-clock", "software", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_TASK_CLOCK},
	{"page-faults", "software", unix.PERF_TYPE_SOFTWARE, unix.PERF_COUNT_SW_PAGE_FAULTS},
}

// OpenEvent opens ev counting the thread tid (0 = calling thread) on any
// CPU, user space only so it works with perf_event_paranoid=2. The counter
// starts disabled when disabled is true.
func OpenEvent(ev EventSpec, tid int, disabled bool) (int, error) {
	return openAttr(ev, tid, -1, unix.PERF_FORMAT_TOTAL_TIME_ENABLED|unix.PERF_FORMAT_TOTAL_TIME_RUNNING, disabled)
}

// UnsupportedReason turns a perf_event_open error into the reason users see.
func UnsupportedReason(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Sprintf("not offered by this CPU or hypervisor (%v)", err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Sprintf("not permitted: perf_event_paranoid too high for this user (%v)", err)
	case errors.Is(err, unix.ENOSYS):
		return "perf_event_open not available in this kernel or sandbox"
	default:
		return err.Error()
	}
}

// ProbeEvent reports whether ev can be opened and read for the calling
// thread; if not, why (Count.Unsupported over a little work): a counter
// that opens but never counts is unsupported too, since a silent zero is
// not a measurement.
func ProbeEvent(ev EventSpec) (ok bool, reason string) { return probeEvent(PerfSource{}, ev) }

// probeEvent is ProbeEvent on src.
func probeEvent(src CounterSource, ev EventSpec) (ok bool, reason string) {
	fd, err := src.Open(ev, 0, -1, false)
	if err != nil {
		return false, Count{Event: ev, OpenErr: err}.Unsupported()
	}
	defer src.Close(fd)
	// Do a little work so a working counter moves.
	x := 0
	for i := 0; i < 200000; i++ {
		x += i ^ (x >> 3)
	}
	runtime.KeepAlive(x)
	c := Count{Event: ev, Work: true}
	var buf [24]byte
	var g GroupRead
	n, err := src.Read(fd, buf[:])
	if err == nil {
		err = ParseSingleRead(buf[:n], &g)
	}
	if err != nil {
		c.ReadErr = err
	} else {
		c.Running, c.Value = g.Running, float64(g.Values[0])
	}
	why := c.Unsupported()
	return why == "", why
}
