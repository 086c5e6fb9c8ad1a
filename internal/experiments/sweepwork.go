package experiments

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// SweepWork is cachecost's sweep as a program of its own, the workload
// ctxlab's hidden `workload` command runs for diagnose --vary: threads
// locked OS threads, each following its own working set of wsBytes (a
// sequential or random cycle, as the sweep's arms do), elements steps in
// all split evenly between them — the same total work at any thread
// count. GOMAXPROCS is set to threads, so the kernel, not Go's scheduler,
// decides which threads run: with more threads than CPUs they preempt
// each other. It returns the elements followed, fewer when ctx ended.
func SweepWork(ctx context.Context, threads int, wsBytes, elements int64, random bool) (int64, error) {
	if threads < 1 || wsBytes < elemBytes || elements < 0 {
		return 0, fmt.Errorf("sweep work: %d threads, %d bytes, %d elements: want threads ≥ 1, bytes ≥ %d, elements ≥ 0", threads, wsBytes, elements, elemBytes)
	}
	runtime.GOMAXPROCS(threads)
	n := int(wsBytes / elemBytes)
	cycle := chaseCycle(n, random, 0x9e3779b97f4a7c15)
	var stopped atomic.Bool
	go func() {
		<-ctx.Done()
		stopped.Store(true)
	}()
	var done atomic.Int64
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	per, rem := elements/int64(threads), elements%int64(threads)
	for i := 0; i < threads; i++ {
		steps := per
		if int64(i) < rem {
			steps++
		}
		next := make([]uint32, n)
		copy(next, cycle) // touches every page before the work starts
		ready.Add(1)
		wg.Add(1)
		go func(next []uint32, steps int64) {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			ready.Done()
			<-start
			var pos uint32
			const slice = 1 << 16
			for steps > 0 && !stopped.Load() {
				c := min(steps, slice)
				pos = chase(next, pos, int(c))
				steps -= c
				done.Add(c)
			}
			sinkPos.Add(uint64(pos))
		}(next, steps)
	}
	ready.Wait()
	close(start)
	wg.Wait()
	return done.Load(), ctx.Err()
}

// sinkPos keeps the chase's last positions live.
var sinkPos atomic.Uint64
