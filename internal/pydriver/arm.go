package pydriver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// Arm is one arm open on an interpreter's driver, from Open to Close: the
// bench set up in the interpreter, which runs the batches and the timed
// repetitions it is asked for, sized by the runner. It holds the driver
// meanwhile; Close gives it back for the next arm.
type Arm struct {
	Hello Hello // the driver's hello
	// Unit is the ops one sample times (a ring's lap is its size); Sampled
	// says whether per-op latencies mean anything for the bench.
	Unit    int
	Sampled bool

	p    *pooled
	s    *Session
	mu   sync.Mutex // one message at a time; Close waits for the one in flight
	held bool       // the arm holds p
	open bool       // the driver holds the arm's bench
}

// Refused is the driver's answer that an arm cannot run here
// (Unsupported) or failed (its Reason, with the driver's Stderr meanwhile:
// the traceback). The driver itself goes on; the arm is over.
type Refused struct {
	Unsupported bool
	Reason      string
	Stderr      string
}

func (e *Refused) Error() string { return e.Reason }

// closeWait bounds the driver's teardown of an arm closed before its
// timed repetitions; a driver that takes longer is killed.
var closeWait = 5 * time.Second

// Open sets req's bench up on in's driver, starting the driver if none is
// running, and waiting (while ctx lasts) for an arm that holds it. A
// refusal is a *Refused.
func (in *Interpreter) Open(ctx context.Context, req Request) (*Arm, error) {
	p, err := acquire(ctx, in)
	if err != nil {
		return nil, err
	}
	a := &Arm{Hello: p.s.Hello, p: p, s: p.s, held: true}
	r, err := a.do(ctx, Message{Do: DoOpen, Request: &req}, false)
	if err != nil {
		return nil, err
	}
	a.open, a.Unit, a.Sampled = true, max(1, r.Unit), r.Sampled
	return a, nil
}

// Processes are the driver's process and its live descendants (a forked
// partner, a busy process): every thread of each does part of the arm's
// work. Where the descendants cannot be read, the driver's alone.
func (a *Arm) Processes() []int {
	pid := a.s.PID()
	kids, _ := procstat.DefaultRoot.DescendantsOf(pid)
	return append([]int{pid}, kids...)
}

// Batch runs about n ops of the arm's bench unsampled, for the runner's
// warm-up and sizing, and returns the ops done (a ring runs whole laps)
// and the ns they took by the driver's clock.
func (a *Arm) Batch(ctx context.Context, n int) (ops int, ns int64, err error) {
	r, err := a.do(ctx, Message{Do: DoBatch, N: n}, false)
	if err != nil {
		return 0, 0, err
	}
	if r.Batch[0] < 1 || r.Batch[1] < 0 {
		return 0, 0, a.broken(fmt.Errorf("%w: a batch of %d ops in %d ns, asked for %d ops", ErrProtocol, r.Batch[0], r.Batch[1], n))
	}
	return int(r.Batch[0]), r.Batch[1], nil
}

// Measure runs the arm's timed repetitions and closes the arm.
func (a *Arm) Measure(ctx context.Context, t Timed) (*Response, error) {
	// The driver tears the bench down after its repetitions.
	return a.do(ctx, Message{Do: DoTimed, Timed: &t}, true)
}

// Close ends the arm: the driver tears its bench down if it still holds
// it (it is killed if it does not answer within closeWait), and is given
// back. Safe to call twice, and from another goroutine than the arm's
// other calls: it waits for the one in flight.
func (a *Arm) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.held {
		return
	}
	if a.open {
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		r, err := a.s.Do(ctx, Message{Do: DoClose})
		cancel()
		if err != nil || !r.OK {
			a.s.Kill()
		}
		a.open = false
	}
	a.release()
}

// do sends m on the arm's driver. An answer to a message that ends the
// arm (last), and any error, gives the driver back: one that refuses has
// torn the bench down, and one that broke the protocol, exited or hung
// past ctx is dead.
func (a *Arm) do(ctx context.Context, m Message, last bool) (*Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.held {
		return nil, errors.New("python driver: the arm is closed")
	}
	r, err := a.s.Do(ctx, m)
	if err == nil && !r.OK {
		if r.Unsupported != "" {
			err = &Refused{Unsupported: true, Reason: r.Unsupported}
		} else {
			err = &Refused{Reason: r.Error, Stderr: r.Stderr}
		}
	}
	if err != nil || last {
		a.open = false
		a.release()
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// broken kills a driver whose answer made no sense, ends the arm, and
// returns err with the driver's stderr.
func (a *Arm) broken(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err = fmt.Errorf("%w%s", err, a.s.stderrTail())
	a.s.Kill()
	a.open = false
	if a.held {
		a.release()
	}
	return err
}

// release gives the driver back (a.mu held).
func (a *Arm) release() {
	if a.held {
		a.held = false
		a.p.release()
	}
}
