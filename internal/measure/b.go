package measure

import "context"

// B is what an arm sees while it runs: how many ops to do, the sampler for
// per-op latencies, and the timer. Like testing.B, the harness owns the
// clock; the arm only does the work. Its methods do not allocate.
type B struct {
	// N is the number of ops to run in this call.
	N int
	// S samples per-op latencies; sampled ops are timed with S.Start/S.Stop.
	S *Sampler

	ctx     context.Context
	snap    func(begin bool)
	running bool
	start   int64
	elapsed int64
}

// NewB prepares a batch of n ops. snap, if not nil, is called just outside
// the clock when the timer starts (begin=true) and stops (begin=false): the
// runner reads switch counts there, so only the timed region is counted.
func NewB(ctx context.Context, n int, s *Sampler, snap func(begin bool)) *B {
	return &B{N: n, S: s, ctx: ctx, snap: snap}
}

// StartTimer starts timing (the runner starts it before the arm runs).
func (b *B) StartTimer() {
	if b.running {
		return
	}
	if b.snap != nil {
		b.snap(true)
	}
	b.running = true
	b.start = Now()
}

// StopTimer stops timing; ops after it are not counted in the time.
func (b *B) StopTimer() {
	if !b.running {
		return
	}
	b.elapsed += Now() - b.start
	b.running = false
	if b.snap != nil {
		b.snap(false)
	}
}

// ResetTimer discards time and counts measured so far (for setup inside
// Run, or for a bench that hands the batch to another thread first).
func (b *B) ResetTimer() {
	b.elapsed = 0
	if b.running {
		if b.snap != nil {
			b.snap(true)
		}
		b.start = Now()
	}
}

// Elapsed is the timed duration so far in ns.
func (b *B) Elapsed() int64 {
	if b.running {
		return b.elapsed + Now() - b.start
	}
	return b.elapsed
}

// Context is cancelled when the arm times out or the run is interrupted.
func (b *B) Context() context.Context {
	if b.ctx == nil {
		return context.Background()
	}
	return b.ctx
}

// Running reports whether the timer runs.
func (b *B) Running() bool { return b.running }
