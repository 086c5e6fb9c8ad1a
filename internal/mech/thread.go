package mech

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Thread is a goroutine locked to its own OS thread — ctxlab's "thread"
// substrate. Work is sent to it with Do. When stopped, the goroutine exits
// still locked, so the Go runtime destroys the OS thread and nothing pinned
// or otherwise changed on it outlives the arm.
type Thread struct {
	TID  int
	reqs chan func()
	done chan struct{}
	err  error
}

// StartThread starts a locked thread pinned to cpus (nil = not pinned).
func StartThread(cpus []int) (*Thread, error) {
	t := &Thread{reqs: make(chan func()), done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: exiting locked makes the runtime kill the thread.
		defer close(t.done)
		t.TID = unix.Gettid()
		if len(cpus) > 0 {
			var set unix.CPUSet
			for _, c := range cpus {
				set.Set(c)
			}
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				ready <- err
				return
			}
		}
		ready <- nil
		for f := range t.reqs {
			f()
		}
	}()
	if err := <-ready; err != nil {
		<-t.done
		return nil, err
	}
	return t, nil
}

// Do runs f on the thread and waits for it.
func (t *Thread) Do(f func()) {
	fin := make(chan struct{})
	t.reqs <- func() { f(); close(fin) }
	<-fin
}

// Go runs f on the thread without waiting; the returned channel closes when f returns.
func (t *Thread) Go(f func()) <-chan struct{} {
	fin := make(chan struct{})
	t.reqs <- func() { f(); close(fin) }
	return fin
}

// Stop ends the thread after its current work and waits for it to exit.
func (t *Thread) Stop() {
	close(t.reqs)
	<-t.done
}
