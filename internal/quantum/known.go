package quantum

import "fmt"

// GoPreemptNs is sysmon's forcePreemptNS: a goroutine that has run this
// long without yielding is preempted (asynchronously, by signal, since Go 1.14).
const GoPreemptNs = 10_000_000

// GoPreemption is Go's preemption quantum. A goroutine made runnable while
// a hog holds the only P waits until sysmon sees the hog has run a full
// 10 ms and preempts it; an idle sysmon sleeps up to 10 ms between looks,
// so waits pile at whole multiples of the period (10, 20 ms …), not
// tightly: the tolerance is ±25 %.
func GoPreemption() Quantum {
	return Quantum{
		Name: "Go preemption", PeriodNs: GoPreemptNs, MaxMultiple: 6, Tol: 0.25,
		Cause: "the woken goroutine waited for Go to preempt a hog", Unit: "sysmon period",
	}
}

// KernelSlice is the kernel scheduler's time slice: a thread woken on a
// CPU that a hog is using may wait for the hog's slice to end. source says
// where the figure came from ("read from the kernel", "EEVDF default").
func KernelSlice(sliceNs int64, scheduler, source string) Quantum {
	if scheduler == "" {
		scheduler = "kernel"
	}
	return Quantum{
		Name: scheduler + " slice", PeriodNs: sliceNs, MaxMultiple: 4, Tol: 0.1,
		Cause: fmt.Sprintf("the woken thread waited for a hog's %s time slice to end (%s)", scheduler, source),
		Unit:  "slice",
	}
}

// Tick is the timer tick (CONFIG_HZ): without a tick-less wake-up, a
// preemption or a timer is only noticed at the next tick.
func Tick(hz int) Quantum {
	return Quantum{
		Name: fmt.Sprintf("timer tick (CONFIG_HZ=%d)", hz), PeriodNs: 1_000_000_000 / int64(hz),
		MaxMultiple: 4, Tol: 0.1,
		Cause: "the wait ended on a timer tick (CONFIG_HZ)", Unit: "tick",
	}
}

// DefaultSliceNs is the slice a scheduler uses when the kernel does not
// expose it: EEVDF's base_slice (0.75 ms) and CFS's sched_min_granularity
// (0.75 ms) are both scaled by 1+log2(CPUs), capped at 8 CPUs.
func DefaultSliceNs(cpus int) int64 {
	if cpus < 1 {
		cpus = 1
	}
	if cpus > 8 {
		cpus = 8
	}
	f := int64(1)
	for n := cpus; n > 1; n >>= 1 {
		f++
	}
	return 750_000 * f
}
