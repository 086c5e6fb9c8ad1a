package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// tap wraps one probe run's bench, between the arm and the runner:
//   - one op runs before the runner sees the bench: a partner process or
//     thread that is still starting would otherwise make the first warm-up
//     op look like milliseconds, and the runner, sizing repetitions from the
//     warm-up, would time a single op. A first op that hangs is abandoned
//     when the arm's time limit ends, and timedOut says so;
//   - it keeps the sampler of the timed repetitions, so the summary's _sum
//     and _count are the very samples its quantiles come from;
//   - it reads the run-queue wait of the probe's threads and children
//     after the first op and before teardown (a partner gone after Close
//     has taken its figures with it).
type tap struct {
	procRoot string
	timedOut atomic.Bool

	mu      sync.Mutex
	sampler *measure.Sampler
	runq0   runq
	runq    runqDelta
}

func (t *tap) wrap(open func(ctx context.Context) (exp.Bench, error)) func(ctx context.Context) (exp.Bench, error) {
	return func(ctx context.Context) (exp.Bench, error) {
		b, err := open(ctx)
		if err != nil {
			return nil, err
		}
		done := make(chan error, 1)
		go func() {
			pb := measure.NewB(ctx, 1, nil, nil)
			pb.StartTimer()
			done <- b.Run(pb)
		}()
		select {
		case err := <-done:
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("first op: %w", err)
			}
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.timedOut.Store(true)
			}
			b.Close() // must unblock the stuck op (exp.Bench's contract)
			select {
			case <-done:
			case <-time.After(shutdownGrace):
			}
			return nil, fmt.Errorf("first op: %w", ctx.Err())
		}
		tb := &tappedBench{Bench: b, t: t}
		t.mu.Lock()
		t.runq0 = readRunq(t.procRoot, tb.pids())
		t.mu.Unlock()
		if th, ok := b.(exp.Threads); ok {
			return &tappedThreads{tb, th}, nil
		}
		return tb, nil
	}
}

// samples sums the timed repetitions' samples (zero if none were taken).
func (t *tap) samples() Sampled {
	t.mu.Lock()
	s := t.sampler
	t.mu.Unlock()
	if s == nil {
		return Sampled{}
	}
	var out Sampled
	for _, ns := range s.Sorted() {
		out.Count++
		out.SumNs += float64(ns)
	}
	return out
}

// runqWaitPerSwitch is seconds waited runnable per switch-in over the
// run, or -1 when unknown.
func (t *tap) runqWaitPerSwitch() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runq.slices == 0 {
		return -1
	}
	return float64(t.runq.waitNs) / float64(t.runq.slices) / 1e9
}

// tappedBench is the bench the runner sees.
type tappedBench struct {
	exp.Bench
	t    *tap
	once sync.Once
}

func (b *tappedBench) Run(mb *measure.B) error {
	if mb.S != nil {
		b.t.mu.Lock()
		b.t.sampler = mb.S // the runner's sampler of the timed repetitions
		b.t.mu.Unlock()
	}
	return b.Bench.Run(mb)
}

func (b *tappedBench) Close() error {
	b.once.Do(func() {
		end := readRunq(b.t.procRoot, b.pids())
		b.t.mu.Lock()
		b.t.runq = end.since(b.t.runq0)
		b.t.mu.Unlock()
	})
	return b.Bench.Close()
}

// Children passes the partner processes on to the runner.
func (b *tappedBench) Children() []int {
	if c, ok := b.Bench.(exp.Children); ok {
		return c.Children()
	}
	return nil
}

// Annotate passes the bench's own figures on to the runner.
func (b *tappedBench) Annotate(a *result.Arm) {
	if an, ok := b.Bench.(exp.Annotator); ok {
		an.Annotate(a)
	}
}

// tappedThreads keeps exp.Threads visible: the runner opens perf counters
// on exactly the bench's threads when it says which they are.
type tappedThreads struct {
	*tappedBench
	th exp.Threads
}

func (b *tappedThreads) Threads() []int { return b.th.Threads() }

// pids are this process and the bench's partner processes.
func (b *tappedBench) pids() []int {
	return append([]int{selfPID}, b.Children()...)
}
