package experiments

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ctxlab/ctxlab/internal/mech"
	"golang.org/x/sys/unix"
)

// A ring's links (ringLinks): Go channels, futex pairs, pipes.

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
