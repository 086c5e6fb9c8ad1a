package measure

import "golang.org/x/sys/unix"

// SelfSwitches returns the voluntary and involuntary context switches of
// every thread of this process, including threads that have exited
// (getrusage(RUSAGE_SELF) sums them), so no participating thread is missed.
func SelfSwitches() (vol, invol int64, err error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	return ru.Nvcsw, ru.Nivcsw, nil
}

// ThreadSwitches returns the calling OS thread's own switch counts
// (getrusage(RUSAGE_THREAD)); the caller should be locked to its thread.
func ThreadSwitches() (vol, invol int64, err error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0, err
	}
	return ru.Nvcsw, ru.Nivcsw, nil
}

// Gettid is the calling thread's kernel id.
func Gettid() int { return unix.Gettid() }

// ProcessCPUNs is the CPU time of every thread of this process so far,
// exited threads included (CLOCK_PROCESS_CPUTIME_ID), in ns.
func ProcessCPUNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// Usage is a getrusage reading: switches and user+system CPU time.
type Usage struct {
	Voluntary, Involuntary int64
	CPUNs                  int64
}

// ChildrenUsage is getrusage(RUSAGE_CHILDREN): every child process this
// process has reaped, and their reaped descendants.
func ChildrenUsage() (Usage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		return Usage{}, err
	}
	return Usage{Voluntary: ru.Nvcsw, Involuntary: ru.Nivcsw, CPUNs: ru.Utime.Nano() + ru.Stime.Nano()}, nil
}
