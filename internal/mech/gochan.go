package mech

import (
	"sync"

	"github.com/ctxlab/ctxlab/internal/measure"
)

func init() {
	register(Row{Name: "chan", Order: 10, Wait: WaitGo, On: []string{SubGoroutine, SubThread}, Value: true,
		Summary: "two unbuffered Go channels, one each way"},
		func() (*Pair, error) { return chanPair(0), nil }, nil)
	register(Row{Name: "chan-buffered", Order: 15, Wait: WaitGo, On: []string{SubGoroutine}, Value: true,
		Summary: "two Go channels of capacity 1"},
		func() (*Pair, error) { return chanPair(1), nil }, nil)
	register(Row{Name: "cond", Order: 20, Wait: WaitGo, On: []string{SubGoroutine, SubThread}, Value: true,
		Summary: "a sync.Mutex and one sync.Cond per side"},
		func() (*Pair, error) { return condPair(), nil }, nil)
}

type chanEnd struct {
	in  chan uint64
	out chan uint64
}

func (e *chanEnd) Send(v uint64) error { e.out <- v; return nil }
func (e *chanEnd) Recv() (uint64, error) {
	return <-e.in, nil
}

// echo is Echo's loop on the channels themselves (see looper).
func (e *chanEnd) echo() error {
	in, out := e.in, e.out
	for {
		v := <-in
		if v == Stop {
			return nil
		}
		out <- v
	}
}

// roundTrips is RoundTrips' loop on the channels themselves (see looper).
func (e *chanEnd) roundTrips(n int, s *measure.Sampler) error {
	in, out := e.in, e.out
	for i := 0; i < n; i++ {
		t := s.Start(i)
		out <- uint64(i)
		if <-in == Stop { // the pair is being torn down (Pair.Stop)
			return ErrStopped
		}
		s.Stop(t)
	}
	return nil
}

// chanPair connects two goroutines with two Go channels of capacity buf.
func chanPair(buf int) *Pair {
	ab, ba := make(chan uint64, buf), make(chan uint64, buf)
	a, b := &chanEnd{in: ba, out: ab}, &chanEnd{in: ab, out: ba}
	// Stop pumps both channels until Close: each side blocked in a send
	// has it taken, each side blocked in a receive gets Stop. Plain channel
	// operations stay in the timed path; the teardown pays instead.
	quit := make(chan struct{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			go func() {
				for {
					select {
					case ab <- Stop:
					case ba <- Stop:
					case <-ab:
					case <-ba:
					case <-quit:
						return
					}
				}
			}()
		})
	}
	closeOnce := sync.Once{}
	closeAll := func() error {
		stop() // a pump that never started still has to end
		closeOnce.Do(func() { close(quit) })
		return nil
	}
	return &Pair{A: a, B: b, Stop: stop, Close: closeAll}
}

// condSide is one direction of a mutex+condition-variable handoff.
type condShared struct {
	mu   sync.Mutex
	cond [2]*sync.Cond
	seq  [2]uint64 // seq[i]: values sent to side i
	val  [2]uint64
	stop bool
}

type condEnd struct {
	s    *condShared
	me   int
	seen uint64
}

func (e *condEnd) Send(v uint64) error {
	s, other := e.s, 1-e.me
	s.mu.Lock()
	s.val[other] = v
	s.seq[other]++
	s.mu.Unlock()
	s.cond[other].Signal()
	return nil
}

func (e *condEnd) Recv() (uint64, error) {
	s := e.s
	s.mu.Lock()
	for s.seq[e.me] == e.seen && !s.stop {
		s.cond[e.me].Wait()
	}
	if s.stop {
		s.mu.Unlock()
		return 0, ErrStopped
	}
	e.seen = s.seq[e.me]
	v := s.val[e.me]
	s.mu.Unlock()
	return v, nil
}

func condPair() *Pair {
	s := &condShared{}
	s.cond[0] = sync.NewCond(&s.mu)
	s.cond[1] = sync.NewCond(&s.mu)
	stop := func() {
		s.mu.Lock()
		s.stop = true
		s.mu.Unlock()
		s.cond[0].Broadcast()
		s.cond[1].Broadcast()
	}
	return &Pair{A: &condEnd{s: s, me: 0}, B: &condEnd{s: s, me: 1}, Stop: stop, Close: func() error { return nil }}
}
