package measure

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// PinThread restricts the calling OS thread to cpus. The caller must hold
// runtime.LockOSThread, or the pin lands on whatever thread it runs on now.
func PinThread(cpus []int) error { return PinTask(0, cpus) }

// PinTask restricts thread tid (0: the calling thread) to cpus.
func PinTask(tid int, cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("pin thread to cpus %v: %w", cpus, err)
	}
	return nil
}

// PinProcess restricts every current thread of this process to cpus; threads
// created later inherit the mask of the thread that creates them.
func PinProcess(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return setAll(&set)
}

// Affinity returns the CPU set of the calling thread.
func Affinity() ([]int, error) { return TaskAffinity(0) }

// TaskAffinity returns the CPU set of thread or process tid (0 = the
// calling thread): the CPUs it may run on.
func TaskAffinity(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func setAll(set *unix.CPUSet) error {
	tids, err := procstat.DefaultRoot.TIDs(os.Getpid())
	if err != nil {
		return err
	}
	var first error
	for _, tid := range tids {
		// A thread may exit between listing and pinning: ESRCH is fine.
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH && first == nil {
			first = fmt.Errorf("set affinity of thread %d: %w", tid, err)
		}
	}
	return first
}
