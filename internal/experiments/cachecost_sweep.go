package experiments

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
	"golang.org/x/sys/unix"
)

// cachecost's sweep: T locked threads, each following its own working set.

// sweepWorker is one locked thread with its own working set. Its on-CPU
// time and run-queue wait come from the runner's probes (it is a declared
// participant), over exactly the timed repetitions.
type sweepWorker struct {
	next []uint32
	pos  uint32
	tid  int
	work chan int
	exit chan struct{}
}

type sweep struct {
	workers []*sweepWorker
	done    chan struct{}
	stop    chan struct{}
	stopped atomic.Bool
	once    sync.Once
}

// chaseUntil is chase in slices of 64 Ki elements that gives up once
// stopped is set, so Close never waits on a long batch.
func chaseUntil(next []uint32, pos uint32, steps int, stopped *atomic.Bool) uint32 {
	const slice = 1 << 16
	for steps > 0 && !stopped.Load() {
		c := min(steps, slice)
		pos = chase(next, pos, c)
		steps -= c
	}
	return pos
}

func openSweep(ctx context.Context, t int, w int64, random bool) (exp.Bench, error) {
	n := int(w / elemBytes)
	cycle := chaseCycle(n, random, 0x9e3779b97f4a7c15)
	s := &sweep{done: make(chan struct{}, t), stop: make(chan struct{})}
	for i := 0; i < t; i++ {
		if ctx.Err() != nil {
			s.Close()
			return nil, ctx.Err()
		}
		wk := &sweepWorker{next: make([]uint32, n), work: make(chan int), exit: make(chan struct{})}
		copy(wk.next, cycle) // touches every page now, outside the clock
		ready := make(chan struct{})
		go wk.loop(s, ready)
		<-ready
		s.workers = append(s.workers, wk)
	}
	return s, nil
}

func (wk *sweepWorker) loop(s *sweep, ready chan<- struct{}) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer close(wk.exit)
	wk.tid = unix.Gettid()
	close(ready)
	for {
		select {
		case steps := <-wk.work:
			wk.pos = chaseUntil(wk.next, wk.pos, steps, &s.stopped)
			s.done <- struct{}{}
		case <-s.stop:
			return
		}
	}
}

// Run splits b.N elements over the workers and waits for all of them.
func (s *sweep) Run(b *measure.B) error {
	t := len(s.workers)
	per, rem := b.N/t, b.N%t
	sent := 0
	for i, wk := range s.workers {
		steps := per
		if i < rem {
			steps++
		}
		select {
		case wk.work <- steps:
			sent++
		case <-s.stop:
			return mech.ErrStopped
		}
	}
	for k := 0; k < sent; k++ {
		select {
		case <-s.done:
		case <-s.stop:
			return mech.ErrStopped
		}
	}
	return nil
}

// Participants are the worker threads.
func (s *sweep) Participants() exp.Participants {
	var tids []int
	for _, wk := range s.workers {
		tids = append(tids, wk.tid)
	}
	return exp.Threads(tids...)
}

// Analyze adds on-CPU time and run-queue wait per element, from the
// runner's record of the workers, and switch and migration rates per ms
// of wall time.
func (s *sweep) Analyze(rec *exp.Record, r *result.Arm) {
	if rec.Ops == 0 {
		return
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if rec.CPUNs >= 0 {
		r.Metrics["oncpu-ns/element"] = float64(rec.CPUNs) / float64(rec.Ops)
	}
	if rec.RunqNs < 0 {
		r.Notes = append(r.Notes, "run-queue wait unsupported: /proc/<pid>/task/<tid>/schedstat not readable (CONFIG_SCHEDSTATS)")
	} else {
		r.Metrics["runq-wait-ns/element"] = float64(rec.RunqNs) / float64(rec.Ops)
	}
	addRates(r)
}

// addRates turns per-op switch and migration counts into rates per ms of
// wall time, which compare across arms whatever the op.
func addRates(r *result.Arm) {
	if r.Median <= 0 {
		return
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if r.Switches != nil {
		r.Metrics["voluntary-switches/ms"] = r.Switches.Voluntary / r.Median * 1e6
		r.Metrics["involuntary-switches/ms"] = r.Switches.Involuntary / r.Median * 1e6
	}
	if r.Migrations != nil {
		r.Metrics["migrations/ms"] = *r.Migrations / r.Median * 1e6
	}
}

func (s *sweep) Close() error {
	s.once.Do(func() {
		s.stopped.Store(true)
		close(s.stop)
		for _, wk := range s.workers {
			<-wk.exit
			wk.next = nil
		}
		// Give the working sets back now, so the next arm's fit.
		debug.FreeOSMemory()
	})
	return nil
}
