package mech

import (
	"errors"
	"runtime"
	"sync"

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

	// mu orders Do/Go against Stop: work handed over after Stop is refused,
	// never sent on a closed channel (Stop may come from the runner's
	// timeout while a Run is about to start).
	mu      sync.Mutex
	stopped bool
}

// ErrThreadStopped is returned by Do and Go once the thread is stopped.
var ErrThreadStopped = errors.New("mech: thread stopped")

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

// Do runs f on the thread and waits for it; after Stop it runs nothing
// and returns ErrThreadStopped.
func (t *Thread) Do(f func()) error {
	fin, err := t.hand(f)
	if err != nil {
		return err
	}
	<-fin
	return nil
}

// Go runs f on the thread without waiting; the returned channel closes
// when f returns (at once, with ErrThreadStopped, after Stop).
func (t *Thread) Go(f func()) (<-chan struct{}, error) {
	return t.hand(f)
}

func (t *Thread) hand(f func()) (chan struct{}, error) {
	fin := make(chan struct{})
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		close(fin)
		return fin, ErrThreadStopped
	}
	// The thread is idle between calls (Do waits, Go is used for the one
	// long-running loop), so this send does not wait long under the lock.
	t.reqs <- func() { f(); close(fin) }
	return fin, nil
}

// Stop ends the thread after its current work and waits for it to exit.
// It is safe to call more than once and concurrently with Do.
func (t *Thread) Stop() {
	t.mu.Lock()
	if !t.stopped {
		t.stopped = true
		close(t.reqs)
	}
	t.mu.Unlock()
	<-t.done
}
