package runner

import (
	"context"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// armContext is a context that ends at the arm's time limit like
// context.WithTimeout, without a Go runtime timer. A pending runtime timer
// makes the scheduler read the clock at every goroutine switch on its P,
// which added ~40 ns (15%) to a 300 ns goroutine round trip at
// GOMAXPROCS=1. The limit is a timerfd read through the netpoller instead:
// the kernel keeps the time, and the parked reader costs the scheduler
// nothing. (A thread sleeping in a syscall would hold the only P at
// GOMAXPROCS=1 until sysmon takes it back, stalling the arm up to 10 ms.)
type armContext struct {
	context.Context // the parent: values, and its cancellation
	deadline        time.Time
	done            chan struct{}
	once            sync.Once
	mu              sync.Mutex
	err             error
}

func withArmLimit(parent context.Context, limit time.Duration) (*armContext, func()) {
	c := &armContext{Context: parent, deadline: time.Now().Add(limit), done: make(chan struct{})}
	stopParent := context.AfterFunc(parent, func() { c.end(parent.Err()) })
	tf, err := newTimerFile(limit)
	if err != nil {
		// No timerfd (an odd sandbox): fall back to a runtime timer.
		t := time.AfterFunc(limit, func() { c.end(context.DeadlineExceeded) })
		return c, func() { stopParent(); t.Stop(); c.end(context.Canceled) }
	}
	go func() {
		var buf [8]byte
		if _, err := tf.Read(buf[:]); err == nil {
			c.end(context.DeadlineExceeded)
		}
	}()
	return c, func() {
		stopParent()
		c.end(context.Canceled)
		tf.Close() // wakes the parked reader with an error
	}
}

// newTimerFile returns a non-blocking timerfd that becomes readable after d,
// as an *os.File so reads park on the netpoller.
func newTimerFile(d time.Duration) (*os.File, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(d.Nanoseconds(), 1))}
	if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "ctxlab-arm-limit"), nil
}

func (c *armContext) end(err error) {
	c.once.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	})
}

func (c *armContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *armContext) Done() <-chan struct{}       { return c.done }
func (c *armContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
