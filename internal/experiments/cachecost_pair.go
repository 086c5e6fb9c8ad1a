package experiments

import (
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
)

// cachecost's two threads on one CPU (openPairBench, cachecost.go): thread
// A follows its array, hands the CPU to B over a futex, B follows its own
// array and hands it back. per-switch: each side follows its whole array
// per turn and one op is a round trip. slice: A's turn is ~every ns of its
// work, one op is one element of A's work, and B's turn is the same
// number of elements of its own array. And solo, the per-switch
// baseline: one thread, no switch.

// cachePair is what both variants are: the two threads, their arrays and
// the futex between them.
type cachePair struct {
	pair   *mech.Pair
	a, b   *mech.Thread
	ax, by []uint32
	apos   uint32
	echoed <-chan struct{}
	once   sync.Once
}

// open makes the futex pair, the two threads on CPU cpu and the arrays of
// wa and wb bytes, A's and B's.
func (p *cachePair) open(cpu []int, wa, wb int64) error {
	pair, err := mech.NewPair("futex")
	if err != nil {
		return err
	}
	p.pair, p.ax, p.by = pair, chaseCycle(int(wa/elemBytes), true, 1), chaseCycle(int(wb/elemBytes), true, 2)
	if p.a, err = mech.StartThread(cpu); err != nil {
		pair.Close()
		return err
	}
	if p.b, err = mech.StartThread(cpu); err != nil {
		p.a.Stop()
		pair.Close()
		return err
	}
	return nil
}

// startB starts B's side: each turn it follows turn() elements of its
// array, then hands the CPU back.
func (p *cachePair) startB(turn func() int) {
	pair, by := p.pair, p.by
	p.echoed, _ = p.b.Go(func() {
		var pos uint32
		for {
			if _, err := pair.B.Recv(); err != nil {
				return
			}
			pos = chase(by, pos, turn())
			if err := pair.B.Send(0); err != nil {
				return
			}
		}
	})
}

// handOver gives the CPU to B and waits for it back.
func (p *cachePair) handOver() error {
	if err := p.pair.A.Send(0); err != nil {
		return err
	}
	_, err := p.pair.A.Recv()
	return err
}

// Participants are A and B.
func (p *cachePair) Participants() exp.Participants { return exp.Threads(p.a.TID, p.b.TID) }

func (p *cachePair) Close() error {
	p.once.Do(func() {
		p.pair.Stop()
		<-p.echoed
		p.a.Stop()
		p.b.Stop()
		p.pair.Close()
	})
	return nil
}

// perSwitchBench: one op is a round trip, each side following its whole
// array per turn.
type perSwitchBench struct{ cachePair }

func (p *perSwitchBench) Run(b *measure.B) error {
	var err error
	p.a.Do(func() {
		b.ResetTimer() // the batch starts when thread A has it
		for i := 0; i < b.N && err == nil; i++ {
			t := b.S.Start(i)
			p.apos = chase(p.ax, p.apos, len(p.ax))
			err = p.handOver()
			b.S.Stop(t)
		}
	})
	return err
}

// Analyze adds the switch and migration rates.
func (p *perSwitchBench) Analyze(rec *exp.Record, r *result.Arm) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	addRates(r)
}

// sliceBench: one op is one element of A's fixed work, in turns of
// chunkA elements (~every ns of it); B's turn is as many of its own.
type sliceBench struct {
	cachePair
	chunkA int
	turn   atomic.Int64 // elements B follows this turn (A's last chunk)
}

func (p *sliceBench) Run(b *measure.B) error {
	var err error
	p.a.Do(func() {
		b.ResetTimer() // the batch starts when thread A has it
		for done := 0; done < b.N && err == nil; {
			c := min(p.chunkA, b.N-done)
			p.apos = chase(p.ax, p.apos, c)
			done += c
			p.turn.Store(int64(c)) // B's turn: as many elements of its own set
			err = p.handOver()
		}
	})
	return err
}

// Analyze adds A's on-CPU time per element, from the runner's record of
// A's thread, the turn length, and the switch and migration rates.
func (p *sliceBench) Analyze(rec *exp.Record, r *result.Arm) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if cpu, ok := rec.ThreadCPUNs[p.a.TID]; ok && rec.Ops > 0 {
		r.Metrics["worker-oncpu-ns/element"] = float64(cpu) / float64(rec.Ops)
		r.Metrics["turn-elements"] = float64(p.chunkA)
	}
	addRates(r)
}

// solo: one thread follows its warm array twice per op with no switch, the
// baseline per-switch subtracts.
type solo struct {
	t       *mech.Thread
	ax      []uint32
	pos     uint32
	stopped atomic.Bool
	once    sync.Once
}

func openSolo(cpu []int, w int64) (exp.Bench, error) {
	t, err := mech.StartThread(cpu)
	if err != nil {
		return nil, err
	}
	return &solo{t: t, ax: chaseCycle(int(w/elemBytes), true, 1)}, nil
}

func (s *solo) Run(b *measure.B) error {
	s.t.Do(func() {
		b.ResetTimer()
		for i := 0; i < b.N && !s.stopped.Load(); i++ {
			t := b.S.Start(i)
			s.pos = chase(s.ax, s.pos, 2*len(s.ax))
			b.S.Stop(t)
		}
	})
	if s.stopped.Load() {
		return mech.ErrStopped
	}
	return nil
}

// Participants are the one worker thread.
func (s *solo) Participants() exp.Participants { return exp.Threads(s.t.TID) }

func (s *solo) Close() error {
	s.stopped.Store(true)
	s.once.Do(s.t.Stop)
	return nil
}
