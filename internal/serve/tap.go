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
//     when the arm's time limit ends, and timedOut says so (the runner
//     reports it as a failed set-up);
//   - it keeps the samples the runner recorded, which the exporter's
//     ctxlab_op_seconds summary observes one by one.
type tap struct {
	timedOut atomic.Bool

	mu      sync.Mutex
	sampled Sampled
}

func (t *tap) wrap(open func(ctx context.Context) (exp.Bench, error)) func(ctx context.Context) (exp.Bench, error) {
	return func(ctx context.Context) (exp.Bench, error) {
		b, err := open(ctx)
		if err != nil {
			return nil, err
		}
		lb, ok := b.(exp.Loop)
		if !ok {
			return b, nil // self-timed or a gauge: no op to prime, no samples of ours
		}
		done := make(chan error, 1)
		go func() {
			pb := measure.NewB(ctx, 1, nil, nil)
			pb.StartTimer()
			done <- lb.Run(pb)
		}()
		select {
		case err := <-done:
			if err != nil {
				b.Close()
				return nil, fmt.Errorf("first op: %w", err)
			}
			return &tappedLoop{Loop: lb, t: t}, nil
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
	}
}

// samples is the run's sampled op times (none if it had none).
func (t *tap) samples() Sampled {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sampled
}

// tappedLoop is the bench the runner sees: the arm's own, plus an
// Analyzer that reads the runner's record before passing it on.
type tappedLoop struct {
	exp.Loop
	t *tap
}

// StartTimed passes the runner's "timing begins" on to an arm that needs
// it (the starve shape starts its hog then): embedding exp.Loop alone
// would hide it.
func (b *tappedLoop) StartTimed(opsPerRep int) {
	if tp, ok := b.Loop.(exp.TimedPhase); ok {
		tp.StartTimed(opsPerRep)
	}
}

func (b *tappedLoop) Analyze(rec *exp.Record, a *result.Arm) {
	s := Sampled{Ns: append([]int64(nil), rec.Samples...)} // the record is the runner's
	b.t.mu.Lock()
	b.t.sampled = s
	b.t.mu.Unlock()
	if an, ok := b.Loop.(exp.Analyzer); ok {
		an.Analyze(rec, a)
	}
}
