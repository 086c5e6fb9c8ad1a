package mech

import (
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
	quit chan struct{} // closed by Stop; Do and Go may race with it safely
	once sync.Once
	done chan struct{}
	err  error
}

// StartThread starts a locked thread pinned to cpus (nil = not pinned).
func StartThread(cpus []int) (*Thread, error) {
	t := &Thread{reqs: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
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
		for {
			select {
			case f := <-t.reqs:
				f()
			case <-t.quit:
				return
			}
		}
	}()
	if err := <-ready; err != nil {
		<-t.done
		return nil, err
	}
	return t, nil
}

// Do runs f on the thread and waits for it. On a stopped thread f does not
// run and Do returns at once: a bench's Close (which stops its threads) may
// run concurrently with its Run, as exp.Bench requires.
func (t *Thread) Do(f func()) {
	fin := make(chan struct{})
	select {
	case t.reqs <- func() { f(); close(fin) }:
		<-fin
	case <-t.quit:
	}
}

// Go runs f on the thread without waiting; the returned channel closes when
// f returns, or at once if the thread is stopped and f did not run.
func (t *Thread) Go(f func()) <-chan struct{} {
	fin := make(chan struct{})
	select {
	case t.reqs <- func() { f(); close(fin) }:
	case <-t.quit:
		close(fin)
	}
	return fin
}

// Stop ends the thread after its current work and waits for it to exit.
// It may be called more than once, and concurrently with Do and Go.
func (t *Thread) Stop() {
	t.once.Do(func() { close(t.quit) })
	<-t.done
}
