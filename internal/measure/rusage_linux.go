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
