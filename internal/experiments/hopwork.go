package experiments

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// This file holds what hop and concurrency share: workers that own a
// sqlop.Handle and answer requests over channels (goroutines or locked
// threads), the callers' loops, and the --set option parsers.

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
// handle (its own connection). Locked workers are mech.Threads: goroutines
// locked to their own OS thread, destroyed on stop.
type hopWorkers struct {
	reqs    chan hopReq
	handles []sqlop.Handle
	threads []*mech.Thread
	fins    []<-chan struct{}
	wg      sync.WaitGroup
}

// startHopWorkers starts n workers; a cancelled ctx (timeout, Ctrl-C) stops
// a long start-up between two workers.
func startHopWorkers(ctx context.Context, src *sqlop.Source, n int, locked bool) (*hopWorkers, error) {
	w := &hopWorkers{reqs: make(chan hopReq)}
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
		if locked {
			t, err := mech.StartThread(nil)
			if err != nil {
				w.stop()
				return nil, fmt.Errorf("start worker thread: %w", err)
			}
			w.threads = append(w.threads, t)
			fin, _ := t.Go(func() { serveHop(h, w.reqs) }) // t is new: never stopped here
			w.fins = append(w.fins, fin)
		} else {
			w.wg.Add(1)
			go func() { defer w.wg.Done(); serveHop(h, w.reqs) }()
		}
	}
	return w, nil
}

// stop ends the workers (no caller may send after it), waits for them,
// destroys their threads and closes their handles.
func (w *hopWorkers) stop() error {
	close(w.reqs)
	w.wg.Wait()
	for _, f := range w.fins {
		<-f
	}
	for _, t := range w.threads {
		t.Stop()
	}
	var errs []error
	for _, h := range w.handles {
		errs = append(errs, h.Close())
	}
	return errors.Join(errs...)
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

// hopGomaxprocs is GOMAXPROCS 1 and all of the run's CPUs, or --gomaxprocs.
func hopGomaxprocs(p exp.Params) (vals []int, names []string) {
	if p.GOMAXPROCS != nil {
		for _, g := range p.GOMAXPROCS {
			vals, names = append(vals, g), append(names, strconv.Itoa(g))
		}
		return vals, names
	}
	return []int{1, len(p.CPUs)}, []string{"1", "all"}
}
