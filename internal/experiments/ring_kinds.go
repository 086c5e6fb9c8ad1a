package experiments

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
)

// A ring arm's kinds. Every ring passes one token over links between its
// workers; what the links are (Go channels, futex pairs, pipes, pipes to
// child processes) and who the workers are (goroutines, locked threads,
// child processes) is each a small type of its own, and a ring kind is one
// of each: Ring drives and counts, its kind builds, unblocks and tears
// down.

// ringKind is a ring's links and workers.
type ringKind interface {
	ringLinks
	ringWorkers
}

// ringLinks is how the token travels.
type ringLinks interface {
	// wire makes the links and gives every worker of r its endpoints.
	wire(r *Ring) error
	// unblock wakes every worker waiting on a link, once Close has begun.
	unblock()
	// drained runs once the driver is back: nothing is in flight.
	drained(r *Ring) error
	// release frees the links once every worker is gone.
	release()
	// forwardsStop says whether a worker passes a Stop token on.
	forwardsStop() bool
}

// ringWorkers are who forward the token: workers 1…N-1 and the thread
// the driver (worker 0) runs on.
type ringWorkers interface {
	// start starts workers 1…N-1 and the driver's thread.
	start(ctx context.Context, r *Ring) error
	// driver is the driver's locked thread, nil for the runner's goroutine.
	driver() *mech.Thread
	// kill ends workers no link can reach (processes), as Close begins.
	kill()
	// wait waits for every worker, whose threads are then destroyed.
	wait()
	participants() exp.Participants
	// tids are the driver's and the workers' OS threads; children the
	// worker processes.
	tids() []int
	children() []int
}

// ringKindOf is the kind of a ring of sub over m.
func ringKindOf(sub, m string) (ringKind, error) {
	switch {
	case sub == "goroutine" && m == "chan":
		return &struct {
			chanLinks
			goroutineWorkers
		}{}, nil
	case sub == "thread" && m == "chan":
		return &struct {
			chanLinks
			threadWorkers
		}{}, nil
	case sub == "thread" && m == "futex":
		return &struct {
			futexLinks
			threadWorkers
		}{}, nil
	case sub == "thread" && m == "pipe":
		return &struct {
			pipeLinks
			threadWorkers
		}{}, nil
	case sub == "process" && m == "pipe":
		return &processRing{}, nil
	}
	return nil, fmt.Errorf("ring: no %s×%s ring", sub, m)
}

// ringCount is one worker's count of tokens received, padded to its own
// cache line; only that worker writes it, others read it after Close.
type ringCount struct {
	hops int64
	_    [56]byte
}

// Ring is an opened ring arm. Counts are valid after Close.
type Ring struct {
	N    int // workers, the driver included
	sub  string
	kind ringKind

	// Links: in[i] is how worker i receives, out[i] how it sends; done[i]
	// is how worker i tells the driver the batch finished at it.
	in, out, done []mech.Endpoint
	doneRecv      mech.Endpoint

	counts []ringCount

	stop    atomic.Bool // set by Close; the driver checks it once a lap
	mu      sync.Mutex
	closed  bool
	running int
	once    sync.Once
	nodeErr error
}

// OpenRing builds a ring of n workers of substrate sub over mechanism m and
// starts every worker but the driver, which Run drives.
func OpenRing(ctx context.Context, sub, m string, n int) (*Ring, error) {
	if n < ringMinWorkers {
		return nil, fmt.Errorf("ring: %d workers: need at least %d", n, ringMinWorkers)
	}
	kind, err := ringKindOf(sub, m)
	if err != nil {
		return nil, err
	}
	r := &Ring{N: n, sub: sub, kind: kind, counts: make([]ringCount, n)}
	r.in, r.out, r.done = make([]mech.Endpoint, n), make([]mech.Endpoint, n), make([]mech.Endpoint, n)
	if err := kind.wire(r); err != nil {
		r.Close()
		return nil, err
	}
	if err := kind.start(ctx, r); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// fail keeps a worker's first error for Close to return.
func (r *Ring) fail(err error) {
	r.mu.Lock()
	if r.nodeErr == nil {
		r.nodeErr = err
	}
	r.mu.Unlock()
}

// node is worker i's loop (i ≥ 1): forward the token with one hop fewer to
// go, or tell the driver when none is left.
func (r *Ring) node(i int) {
	// Channels carry the Stop token on around the ring; other links are
	// each stopped by Close.
	forwardStop := r.kind.forwardsStop() && i < r.N-1
	err := ringForward(r.in[i], r.out[i], r.done[i], &r.counts[i].hops, forwardStop)
	if err != nil && !errors.Is(err, mech.ErrStopped) {
		r.fail(fmt.Errorf("ring worker %d: %w", i, err))
	}
}

// ringForward is a non-driver worker: it runs in goroutines, threads and
// child processes alike.
func ringForward(in, out, done mech.Endpoint, hops *int64, forwardStop bool) error {
	for {
		v, err := in.Recv()
		if err != nil {
			return err
		}
		if v == mech.Stop {
			if forwardStop {
				return out.Send(mech.Stop)
			}
			return nil
		}
		*hops++
		if v == 0 {
			err = done.Send(0)
		} else {
			err = out.Send(v - 1)
		}
		if err != nil {
			return err
		}
	}
}

// Run makes b.N hops, the driver being worker 0.
func (r *Ring) Run(b *measure.B) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return mech.ErrStopped
	}
	r.running++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	d := r.kind.driver()
	if d == nil {
		return r.drive(b)
	}
	var err error
	d.Do(func() {
		b.ResetTimer() // the batch starts when the driver thread has it
		err = r.drive(b)
	})
	return err
}

func (r *Ring) drive(b *measure.B) error {
	return ringDrive(r.N, b.N, r.in[0], r.out[0], r.doneRecv, &r.counts[0].hops, b.S, &r.stop)
}

// ringDrive is worker 0: it starts a token good for hops hops and takes it
// back after each full lap, checking that the lap made exactly n hops.
// Per-lap times ÷ n go to the sampler, about once every s.Every() hops.
func ringDrive(n, hops int, in, out, done mech.Endpoint, count *int64, s *measure.Sampler, stop *atomic.Bool) error {
	if hops <= 0 {
		return nil
	}
	every := s.Every() // 0 without a sampler
	made, sampleAt := 0, 0
	var t0 int64
	left := uint64(hops - 1) // hops still to make after this send
	for {
		if every > 0 && made >= sampleAt && left >= uint64(n-1) {
			t0 = s.Stamp() // time this (full) lap
			sampleAt = made + every
		}
		if err := out.Send(left); err != nil {
			return err
		}
		if left < uint64(n-1) {
			// The token runs out at worker left+1, before it is back here.
			v, err := done.Recv()
			if err != nil {
				return err
			}
			if v == mech.Stop {
				return mech.ErrStopped
			}
			return nil
		}
		v, err := in.Recv()
		if err != nil {
			return err
		}
		if t0 != 0 {
			s.StopPer(t0, n)
			t0 = 0
		}
		if v == mech.Stop || stop.Load() {
			return mech.ErrStopped // Close was called: stop with the token here
		}
		*count++
		made += n
		if want := left - uint64(n-1); v != want {
			return fmt.Errorf("ring: the token came back as %d after a lap, want %d: a hop was lost or doubled", v, want)
		}
		if v == 0 {
			return nil
		}
		left = v - 1
	}
}

// Children are the process ring's workers 1…N-1.
func (r *Ring) Children() []int { return r.kind.children() }

// Participants: a goroutine ring is the whole process (its workers run on
// the runtime's threads); a thread ring is its driver and worker threads;
// a process ring its driver thread and child processes.
func (r *Ring) Participants() exp.Participants { return r.kind.participants() }

// TIDs are the OS threads of a thread or process ring's driver and (for
// thread rings) workers, so tests can check none outlives Close.
func (r *Ring) TIDs() []int { return r.kind.tids() }

// Hops returns each worker's count of tokens received (valid after Close).
func (r *Ring) Hops() []int64 {
	out := make([]int64, r.N)
	for i := range r.counts {
		out[i] = r.counts[i].hops
	}
	return out
}

// Close stops every worker and waits for it, and is safe from another
// goroutine while Run is stuck, and idempotent. Child processes are
// killed and the links unblocked (futex links stopped, a Stop written
// into every pipe): that frees any worker at once. Channels are never
// closed under a sender (that would race): the driver sees the stop flag
// after its current lap and returns, then a Stop token goes once around
// the idle ring.
func (r *Ring) Close() error {
	var closeErr error
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.stop.Store(true)
		r.kind.kill()
		r.kind.unblock()
		// The driver returns within a lap (or at once, its links stopped);
		// wait for it before its fds may be closed and their numbers reused.
		if !r.waitDriver(5 * time.Second) {
			closeErr = fmt.Errorf("ring: the driver did not stop within 5s; %d workers abandoned", r.N-1)
			return
		}
		if closeErr = r.kind.drained(r); closeErr != nil {
			return
		}
		r.kind.wait()
		r.kind.release()
	})
	if closeErr != nil {
		return closeErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodeErr
}

// waitDriver waits until no Run is in progress, up to d.
func (r *Ring) waitDriver(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		running := r.running
		r.mu.Unlock()
		if running == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// Analyze says what the percentiles are.
func (r *Ring) Analyze(rec *exp.Record, a *result.Arm) {
	a.Notes = append(a.Notes, fmt.Sprintf("percentiles are one lap's time ÷ %d (the mean hop of a lap)", r.N))
}
