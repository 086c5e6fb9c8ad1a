package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/mech"
)

// A ring's workers (ringWorkers): goroutines, locked threads, and the
// process ring's child processes with the pipes to them.

// goroutineWorkers are goroutines; the runner's goroutine drives.
type goroutineWorkers struct{ wg sync.WaitGroup }

func (w *goroutineWorkers) start(_ context.Context, r *Ring) error {
	for i := 1; i < r.N; i++ {
		w.wg.Add(1)
		go func(i int) {
			defer w.wg.Done()
			r.node(i)
		}(i)
	}
	return nil
}

func (w *goroutineWorkers) driver() *mech.Thread           { return nil }
func (w *goroutineWorkers) kill()                          {}
func (w *goroutineWorkers) wait()                          { w.wg.Wait() }
func (w *goroutineWorkers) participants() exp.Participants { return exp.WholeProcess() }
func (w *goroutineWorkers) tids() []int                    { return nil }
func (w *goroutineWorkers) children() []int                { return nil }

// threadWorkers are locked threads, the driver one more.
type threadWorkers struct {
	drv           *mech.Thread
	threads       []*mech.Thread // workers 1…N-1
	fins          []<-chan struct{}
	restoreMaxThr func()
}

func (w *threadWorkers) start(ctx context.Context, r *Ring) error {
	w.restoreMaxThr = raiseMaxThreads(r.N)
	var err error
	if w.drv, err = mech.StartThread(nil); err != nil {
		return fmt.Errorf("ring: start driver thread: %w", err)
	}
	for i := 1; i < r.N; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := mech.StartThread(nil)
		if err != nil {
			return fmt.Errorf("ring: start thread %d of %d: %w", i, r.N, err)
		}
		w.threads = append(w.threads, t)
		fin, _ := t.Go(func() { r.node(i) }) // t is new: never stopped here
		w.fins = append(w.fins, fin)
	}
	return nil
}

func (w *threadWorkers) driver() *mech.Thread { return w.drv }
func (w *threadWorkers) kill()                {}

func (w *threadWorkers) wait() {
	for _, f := range w.fins {
		<-f
	}
	for _, t := range w.threads {
		t.Stop()
	}
	if w.drv != nil {
		w.drv.Stop()
	}
	if w.restoreMaxThr != nil {
		w.restoreMaxThr()
	}
}

func (w *threadWorkers) participants() exp.Participants { return exp.Participants{TIDs: w.tids()} }
func (w *threadWorkers) children() []int                { return nil }

func (w *threadWorkers) tids() []int {
	var out []int
	if w.drv != nil {
		out = append(out, w.drv.TID)
	}
	for _, t := range w.threads {
		out = append(out, t.TID)
	}
	return out
}

// processRing is a ring of ctxlab child processes over pipes, driven from
// a locked thread here. The driver's reads are raw system calls
// (mech.NewRawFDEnd) where the arm has a second P: its wait lasts a lap of
// child processes, and through the Go runtime such waits cost ~2 µs a hop
// (n=10 same-cpu 14.7–15.3 µs against 13.0 raw; unpinned 16.9–17.4 against
// 14.7–14.9, a plain Python ring 14.2–14.8). Its writers are other
// processes and Close kills them (EOF), so nothing can leave it blocked;
// the arm's second P (GOMAXPROCS ≥ 2) is where Close runs meanwhile.
type processRing struct {
	pipeLinks
	drv   *mech.Thread
	files []*os.File // fds wrapped for children; Close is idempotent
	procs []*child.Proc
	kills sync.WaitGroup
}

func (k *processRing) wire(r *Ring) error {
	if runtime.GOMAXPROCS(0) >= 2 {
		return k.wireWith(r, mech.NewRawFDEnd)
	}
	return k.wireWith(r, mech.NewFDEnd)
}

// unblock has nothing to write: killing the children (kill) ends every
// read with EOF.
func (k *processRing) unblock() {}

func (k *processRing) start(ctx context.Context, r *Ring) error {
	var err error
	if k.drv, err = mech.StartThread(nil); err != nil {
		return fmt.Errorf("ring: start driver thread: %w", err)
	}
	if err := k.startChildren(ctx, r.N); err != nil {
		return err
	}
	return r.prime(ctx, k.drv)
}

// startChildren starts workers 1…N-1 as ctxlab child processes: fd 3 is the
// pipe from the previous worker, fd 4 the pipe to the next, fd 5 the done
// pipe. Afterwards the parent keeps only the driver's ends, so a child's
// death shows as EOF.
func (k *processRing) startChildren(ctx context.Context, n int) error {
	// k.fds is [rd0, wr0, rd1, wr1, …, rdN, wrN]. Each fd handed to a child
	// is wrapped in one *os.File (and dropped from k.fds) so it is closed
	// exactly once, by us, as soon as the child has its copy.
	wrap := func(idx int, name string) *os.File {
		f := os.NewFile(uintptr(k.fds[idx]), name)
		k.fds[idx] = -1
		k.files = append(k.files, f)
		return f
	}
	doneW := wrap(2*n+1, "ring-done")
	for i := 1; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		in, out := wrap(2*(i-1), "ring-in"), wrap(2*i+1, "ring-out")
		p, err := child.Start(ctx, child.Options{Role: "ring-node", Files: []*os.File{in, out, doneW}, Env: rawReaderEnv})
		in.Close()
		out.Close()
		if err != nil {
			return fmt.Errorf("ring: start process %d of %d: %w", i, n, err)
		}
		k.procs = append(k.procs, p)
	}
	doneW.Close()
	return nil
}

func (k *processRing) driver() *mech.Thread { return k.drv }

// kill kills every child, in parallel; wait reaps them.
func (k *processRing) kill() {
	for _, p := range k.procs {
		k.kills.Add(1)
		go func() { defer k.kills.Done(); p.Kill() }()
	}
}

func (k *processRing) wait() {
	k.kills.Wait()
	if k.drv != nil {
		k.drv.Stop()
	}
}

func (k *processRing) release() {
	k.pipeLinks.release()
	for _, f := range k.files {
		f.Close()
	}
}

func (k *processRing) participants() exp.Participants {
	return exp.Participants{TIDs: k.tids(), PIDs: k.children()}
}

func (k *processRing) tids() []int {
	if k.drv == nil {
		return nil
	}
	return []int{k.drv.TID}
}

func (k *processRing) children() []int {
	var out []int
	for _, p := range k.procs {
		out = append(out, p.PID())
	}
	return out
}

// prime sends one token once around a process ring before timing starts,
// on the driver's thread d: each child's start-up (an exec and a Go
// runtime, ~ms) is set-up, not the first op's cost.
func (r *Ring) prime(ctx context.Context, d *mech.Thread) error {
	r.mu.Lock()
	r.running++ // Close waits for the lap like for a Run
	r.mu.Unlock()
	fin, err := d.Go(func() {
		defer func() {
			r.mu.Lock()
			r.running--
			r.mu.Unlock()
		}()
		err := ringDrive(r.N, r.N, r.in[0], r.out[0], r.doneRecv, &r.counts[0].hops, nil, &r.stop)
		r.counts[0].hops = 0 // set-up: not a hop of any batch
		if err != nil {
			r.fail(err)
		}
	})
	if err != nil {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
		return err
	}
	select {
	case <-fin:
	case <-ctx.Done():
		r.stop.Store(true)
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return fmt.Errorf("ring: the first lap through %d child processes did not finish within 30s", r.N-1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodeErr != nil {
		return fmt.Errorf("ring: first lap: %w", r.nodeErr)
	}
	return nil
}

// ringNodeChild is a process ring's worker: fd 3 from the previous worker,
// fd 4 to the next, fd 5 to the driver when the batch ends here.
func ringNodeChild(args []string, files []*os.File) int {
	if len(files) < 3 {
		fmt.Fprintf(os.Stderr, "ring-node child: want fds 3, 4, 5; got %d\n", len(files))
		return 2
	}
	runtime.LockOSThread()
	in := mech.NewRawFDEnd(int(files[0].Fd()), -1)
	out := mech.NewFDEnd(-1, int(files[1].Fd()))
	done := mech.NewFDEnd(-1, int(files[2].Fd()))
	var hops int64
	if err := ringForward(in, out, done, &hops, false); err != nil && !errors.Is(err, mech.ErrStopped) {
		fmt.Fprintln(os.Stderr, "ring-node child:", err)
		return 1
	}
	return 0
}
