package experiments

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// The SQL benches hop and concurrency share: a lookup (sqlop) called on
// the caller's goroutine, through one or two hops to a worker, or by many
// callers through a pool of workers. Workers own a sqlop.Handle and answer
// requests over channels, as goroutines or locked threads.

// hopSource is the operation an arm opens: the user's, or a built-in one.
func hopSource(op string, u *sqlop.UserOp) (*sqlop.Source, error) {
	switch op {
	case userOpName:
		return sqlop.NewUserSource(u, sqlop.ConnApp), nil
	case userImmutableOpName:
		return sqlop.NewUserSource(u, sqlop.ConnImmutable), nil
	}
	src, err := sqlop.NewSource(op)
	if err != nil && errors.Is(err, sqlop.ErrUnsupported) {
		err = fmt.Errorf("%w: %v", exp.ErrUnsupported, err)
	}
	return src, err
}

// sqlBench is what every bench over a source shares. Close may come from
// another goroutine while Run is going (timeout, Ctrl-C): it sets closed,
// waits for Run to notice (runMu), then releases what the bench holds and
// the source (its temp dir).
type sqlBench struct {
	src    *sqlop.Source
	closed atomic.Bool
	runMu  sync.Mutex
	once   sync.Once
	err    error
}

// running runs f as the bench's Run: never after Close has begun.
func (s *sqlBench) running(f func() error) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.closed.Load() {
		return errHopClosed
	}
	return f()
}

// close is the bench's Close: release is what the bench itself holds.
func (s *sqlBench) close(release func() []error) error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.runMu.Lock()
		defer s.runMu.Unlock()
		s.err = errors.Join(append(release(), s.src.Close())...)
	})
	return s.err
}

// Participants: the whole process. The caller is a goroutine on any of
// the runtime's threads, and the worker threads' hand-offs go through it.
func (s *sqlBench) Participants() exp.Participants { return exp.WholeProcess() }

// directBench calls the operation on the caller's own goroutine.
type directBench struct {
	sqlBench
	h sqlop.Handle
}

func openDirect(src *sqlop.Source) (exp.Loop, error) {
	h, err := src.Open()
	if err != nil {
		src.Close()
		return nil, err
	}
	return &directBench{sqlBench: sqlBench{src: src}, h: h}, nil
}

func (d *directBench) Run(b *measure.B) error {
	return d.running(func() error { return directLoop(d.src, d.h, b.N, b.S, &d.closed) })
}

func (d *directBench) Close() error { return d.close(func() []error { return []error{d.h.Close()} }) }

// hopsBench makes each call hops hops (one, or two: execute, then fetch)
// to one worker.
type hopsBench struct {
	sqlBench
	workers *hopWorkers
	caller  *hopCaller
	hops    int
}

// openHops starts the one worker, a goroutine or a locked thread.
func openHops(ctx context.Context, src *sqlop.Source, hops int, locked bool) (exp.Loop, error) {
	w, err := startHopWorkers(ctx, src, 1, locked)
	if err != nil {
		src.Close()
		return nil, err
	}
	h := &hopsBench{sqlBench: sqlBench{src: src}, workers: w, hops: hops}
	h.caller = newHopCaller(src, w.reqs, 0, &h.closed)
	return h, nil
}

func (h *hopsBench) Run(b *measure.B) error {
	return h.running(func() error { return h.caller.loop(b.N, h.hops, b.S) })
}

func (h *hopsBench) Close() error {
	return h.close(func() []error { return []error{h.workers.stop()} })
}

// poolBench spreads the calls over callers, each on its own goroutine,
// that share a pool of workers.
type poolBench struct {
	sqlBench
	workers *hopWorkers
	callers []*hopCaller
}

// openPool starts pool workers (goroutines, or locked threads) for
// callers callers.
func openPool(ctx context.Context, src *sqlop.Source, callers, pool int, locked bool) (*poolBench, error) {
	w, err := startHopWorkers(ctx, src, pool, locked)
	if err != nil {
		src.Close()
		return nil, err
	}
	p := &poolBench{sqlBench: sqlBench{src: src}, workers: w}
	for k := 0; k < callers; k++ {
		p.callers = append(p.callers, newHopCaller(src, w.reqs, k*97, &p.closed))
	}
	return p, nil
}

func (p *poolBench) Run(b *measure.B) error {
	return p.running(func() error { return poolCalls(p.callers, b.N, b.S) })
}

func (p *poolBench) Close() error {
	return p.close(func() []error { return []error{p.workers.stop()} })
}

// errHopClosed is returned by a Run that Close stopped.
var errHopClosed = errors.New("closed while running")

// Steps a worker can be asked to do.
const (
	hopLookup = iota // the whole operation (one hop)
	hopExec          // execute, keep the cursor (first of two hops)
	hopFetch         // read the cursor's row (second of two hops)
)

// hopReq is one request to a worker; reply is the caller's own channel
// (capacity 1, so a worker never blocks on a caller that has gone).
type hopReq struct {
	id    int64
	step  int
	cur   sqlop.Cursor
	reply chan hopResp
}

type hopResp struct {
	v   int64
	cur sqlop.Cursor
	err error
}

// serveHop answers requests with h until reqs is closed.
func serveHop(h sqlop.Handle, reqs <-chan hopReq) {
	for r := range reqs {
		var out hopResp
		switch r.step {
		case hopLookup:
			out.v, out.err = h.Lookup(r.id)
		case hopExec:
			out.cur, out.err = h.Exec(r.id)
		case hopFetch:
			out.v, out.err = r.cur.Fetch()
		}
		r.reply <- out
	}
}

// hopWorkers are n workers sharing one request channel, each with its own
// handle (its own connection), on goroutines or locked threads (host).
type hopWorkers struct {
	reqs    chan hopReq
	handles []sqlop.Handle
	host    workerHost
}

// workerHost is where the workers run: goroutines, or mech.Threads —
// goroutines locked to their own OS thread, destroyed on stop.
type workerHost interface {
	run(f func()) error
	wait()
}

// startHopWorkers starts n workers; a cancelled ctx (timeout, Ctrl-C) stops
// a long start-up between two workers.
func startHopWorkers(ctx context.Context, src *sqlop.Source, n int, locked bool) (*hopWorkers, error) {
	w := &hopWorkers{reqs: make(chan hopReq), host: &goroutineHost{}}
	if locked {
		w.host = &threadHost{}
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			w.stop()
			return nil, err
		}
		h, err := src.Open()
		if err != nil {
			w.stop()
			return nil, err
		}
		w.handles = append(w.handles, h)
		if err := w.host.run(func() { serveHop(h, w.reqs) }); err != nil {
			w.stop()
			return nil, err
		}
	}
	return w, nil
}

// stop ends the workers (no caller may send after it), waits for them,
// destroys their threads and closes their handles.
func (w *hopWorkers) stop() error {
	close(w.reqs)
	w.host.wait()
	var errs []error
	for _, h := range w.handles {
		errs = append(errs, h.Close())
	}
	return errors.Join(errs...)
}

// goroutineHost runs each worker on a goroutine of its own.
type goroutineHost struct{ wg sync.WaitGroup }

func (g *goroutineHost) run(f func()) error {
	g.wg.Add(1)
	go func() { defer g.wg.Done(); f() }()
	return nil
}

func (g *goroutineHost) wait() { g.wg.Wait() }

// threadHost runs each worker on a locked thread of its own.
type threadHost struct {
	threads []*mech.Thread
	fins    []<-chan struct{}
}

func (t *threadHost) run(f func()) error {
	th, err := mech.StartThread(nil)
	if err != nil {
		return fmt.Errorf("start worker thread: %w", err)
	}
	t.threads = append(t.threads, th)
	fin, _ := th.Go(f) // th is new: never stopped here
	t.fins = append(t.fins, fin)
	return nil
}

func (t *threadHost) wait() {
	for _, f := range t.fins {
		<-f
	}
	for _, th := range t.threads {
		th.Stop()
	}
}

// hopCaller is one caller's side of the hops: its reply channel and, for
// pools, its key offset so concurrent callers read different rows.
type hopCaller struct {
	reqs   chan<- hopReq
	src    *sqlop.Source // checks each answer
	reply  chan hopResp
	offset int
	closed *atomic.Bool
}

func newHopCaller(src *sqlop.Source, reqs chan<- hopReq, offset int, closed *atomic.Bool) *hopCaller {
	return &hopCaller{reqs: reqs, src: src, reply: make(chan hopResp, 1), offset: offset, closed: closed}
}

// loop makes n calls, each one or two hops; s (nil-safe) samples latency.
func (c *hopCaller) loop(n, hops int, s *measure.Sampler) error {
	for i := 0; i < n; i++ {
		if i&63 == 0 && c.closed.Load() {
			return errHopClosed
		}
		id := sqlop.Key(i + c.offset)
		t := s.Start(i)
		var r hopResp
		if hops == 1 {
			c.reqs <- hopReq{id: id, step: hopLookup, reply: c.reply}
			r = <-c.reply
		} else {
			c.reqs <- hopReq{id: id, step: hopExec, reply: c.reply}
			r = <-c.reply
			if r.err == nil {
				c.reqs <- hopReq{step: hopFetch, cur: r.cur, reply: c.reply}
				r = <-c.reply
			}
		}
		s.Stop(t)
		if r.err != nil {
			return r.err
		}
		if err := c.src.Check(id, r.v); err != nil {
			return err
		}
	}
	return nil
}

// directLoop makes n calls on the caller's own goroutine.
func directLoop(src *sqlop.Source, h sqlop.Handle, n int, s *measure.Sampler, closed *atomic.Bool) error {
	for i := 0; i < n; i++ {
		if i&1023 == 0 && closed.Load() {
			return errHopClosed
		}
		id := sqlop.Key(i)
		t := s.Start(i)
		v, err := h.Lookup(id)
		s.Stop(t)
		if err != nil {
			return err
		}
		if err := src.Check(id, v); err != nil {
			return err
		}
	}
	return nil
}

// poolCalls spreads n calls over the callers, each on its own goroutine;
// only the first samples (the sampler is not shared between goroutines).
func poolCalls(callers []*hopCaller, n int, s *measure.Sampler) error {
	var wg sync.WaitGroup
	errs := make([]error, len(callers))
	for k, c := range callers {
		share := n / len(callers)
		if k < n%len(callers) {
			share++
		}
		var ks *measure.Sampler
		if k == 0 {
			ks = s
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = c.loop(share, 1, ks)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
