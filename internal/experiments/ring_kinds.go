package experiments

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/child"
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

// ---- links ----

// chanLinks are Go channels, one per link and one to the driver. The
// channels are never closed: a ring of channels is stopped by a Stop
// token, which each worker passes on.
type chanLinks struct{ chans []chan uint64 }

// chanLink is a Go channel as a ring link.
type chanLink struct{ c chan uint64 }

func (l chanLink) Send(v uint64) error { l.c <- v; return nil }
func (l chanLink) Recv() (uint64, error) {
	v, ok := <-l.c
	if !ok {
		return 0, mech.ErrStopped
	}
	return v, nil
}

func (l *chanLinks) wire(r *Ring) error {
	l.chans = make([]chan uint64, r.N+1)
	for i := range l.chans {
		l.chans[i] = make(chan uint64)
	}
	done := chanLink{l.chans[r.N]}
	for i := 0; i < r.N; i++ {
		r.in[i] = chanLink{l.chans[i]}
		r.out[i] = chanLink{l.chans[(i+1)%r.N]}
		r.done[i] = done
	}
	r.doneRecv = done
	return nil
}

func (l *chanLinks) unblock()           {}
func (l *chanLinks) release()           {}
func (l *chanLinks) forwardsStop() bool { return true }

// drained sends the Stop token around the idle ring.
func (l *chanLinks) drained(r *Ring) error {
	if l.chans == nil || r.N <= 1 {
		return nil
	}
	select {
	case l.chans[1] <- mech.Stop:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("ring: worker 1 did not take the stop token within 5s; %d workers abandoned", r.N-1)
	}
}

// futexLinks are futex pairs, one per link (A→B) and one to the driver.
type futexLinks struct {
	pairs    []*mech.Pair
	donePair *mech.Pair
}

func (l *futexLinks) wire(r *Ring) error {
	l.pairs = make([]*mech.Pair, r.N)
	for i := range l.pairs {
		p, err := mech.NewPair("futex")
		if err != nil {
			return err
		}
		l.pairs[i] = p // link i: worker i → worker i+1
	}
	dp, err := mech.NewPair("futex")
	if err != nil {
		return err
	}
	l.donePair = dp
	// A futex carries no value: each link gets a slot the sender fills
	// before the wake and the receiver reads after it.
	slots := make([]uint64, r.N+1)
	for i := 0; i < r.N; i++ {
		r.out[i] = slotLink{l.pairs[i].A, &slots[i]}
		r.in[(i+1)%r.N] = slotLink{l.pairs[i].B, &slots[i]}
		// dp.A's Send only touches the shared words: safe from any worker.
		r.done[i] = slotLink{dp.A, &slots[r.N]}
	}
	r.doneRecv = slotLink{dp.B, &slots[r.N]}
	return nil
}

// unblock stops every pair: a waiting worker sees ErrStopped.
func (l *futexLinks) unblock() {
	for _, p := range l.pairs {
		if p != nil {
			p.Stop()
		}
	}
	if l.donePair != nil {
		l.donePair.Stop()
	}
}

func (l *futexLinks) drained(*Ring) error { return nil }
func (l *futexLinks) release()            {}
func (l *futexLinks) forwardsStop() bool  { return false }

// slotLink adds a value to a futex link: Send stores it in the link's slot
// before waking the receiver, Recv loads it after waking (the futex word's
// atomic update orders the two).
type slotLink struct {
	ep   mech.Endpoint
	slot *uint64
}

func (l slotLink) Send(v uint64) error {
	atomic.StoreUint64(l.slot, v)
	return l.ep.Send(v)
}

func (l slotLink) Recv() (uint64, error) {
	if _, err := l.ep.Recv(); err != nil {
		return 0, err
	}
	return atomic.LoadUint64(l.slot), nil
}

// pipeLinks are pipes, one per link plus a done pipe; fds[2i], fds[2i+1]
// are pipe i's ends (worker i → worker i+1, the last the done pipe).
type pipeLinks struct {
	fds []int // every raw fd still held (-1: handed on)
}

// wire makes the pipes; each worker gets endpoints of its own.
func (l *pipeLinks) wire(r *Ring) error { return l.wireWith(r, mech.NewFDEnd) }

// wireWith is wire with the driver's reads made by recv.
func (l *pipeLinks) wireWith(r *Ring, recv func(in, out int) mech.Endpoint) error {
	rd := make([]int, r.N+1)
	wr := make([]int, r.N+1)
	for i := 0; i <= r.N; i++ {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return fmt.Errorf("ring: pipe %d of %d: %w", i+1, r.N+1, err)
		}
		rd[i], wr[i] = p[0], p[1]
		l.fds = append(l.fds, p[0], p[1])
	}
	for i := 0; i < r.N; i++ {
		if i == 0 {
			r.in[i] = recv(rd[r.N-1], -1)
		} else {
			r.in[i] = mech.NewFDEnd(rd[i-1], -1)
		}
		r.out[i] = mech.NewFDEnd(-1, wr[i])
		r.done[i] = mech.NewFDEnd(-1, wr[r.N])
	}
	r.doneRecv = recv(rd[r.N], -1)
	return nil
}

// unblock writes a Stop into every pipe.
func (l *pipeLinks) unblock() {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], mech.Stop)
	for i := 1; i < len(l.fds); i += 2 {
		unix.Write(l.fds[i], s[:])
	}
}

func (l *pipeLinks) drained(*Ring) error { return nil }
func (l *pipeLinks) forwardsStop() bool  { return false }

func (l *pipeLinks) release() {
	for _, fd := range l.fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// ---- workers ----

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
