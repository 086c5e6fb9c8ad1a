package mech

import (
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The hardware's floor: two locked threads hand a value through one cache
// line. Each side stores the next sequence number in the line and the
// other spins, loading it, until it sees it: no system call and no switch
// while both run, so a round trip is the line moving to the other core
// and back (published: tens of ns within a core complex, ~50–200 ns
// across). A side spins spinYieldAfter loads and then yields its CPU
// (sched_yield) before it spins again: a partner that is not running (on
// the same CPU, or preempted) gets the CPU, and a side never spins out a
// whole time slice. Both workers pinned to one CPU are refused
// (Row.Locked): there every handoff would wait for a yield.
func init() {
	register(Row{Name: "spin", Order: 90, Wait: WaitSpin, On: []string{SubThread}, Locked: true, Trip: TripSpins,
		Summary: "one cache line: each side stores the next sequence number, the other spins until it sees it (no system call, no switch)"},
		spinPair, nil)
}

// spinLine is the line the pair hands its value through, alone in a
// 128-byte block (an allocation of this size class is 128-byte aligned):
// no other data shares it, nor the neighbour an adjacent-line
// prefetcher pulls in with it.
type spinLine struct {
	word uint64 // the last sequence number posted, or Stop
	_    [120]byte
}

// spinYieldAfter is how many loads of the line a side spins through
// before it yields its CPU: ~10–30 µs here, far above a handoff between
// two running CPUs and far below a time slice (ms).
const spinYieldAfter = 1 << 14

func spinPair() (*Pair, error) {
	l := new(spinLine)
	stop := func() { atomic.StoreUint64(&l.word, Stop) }
	return &Pair{A: &spinEnd{l: l}, B: &spinEnd{l: l}, Stop: stop, Close: func() error { return nil }}, nil
}

// spinEnd is one side; seen is the last number it posted or saw.
type spinEnd struct {
	l    *spinLine
	seen uint64
}

// Send posts the next sequence number (the value carried is the
// sequence, as a futex's); it fails only once Stop has taken the line.
func (e *spinEnd) Send(uint64) error {
	if !spinPost(&e.l.word, &e.seen) {
		return ErrStopped
	}
	return nil
}

// Recv spins until the partner posts, yielding now and then. Outside a
// section (a race build, a lone Recv) it yields the CPU and then its P
// (Gosched): spinPoll and the system call have no point where the runtime
// preempts a goroutine of its own accord, so a partner goroutine waiting
// for a P would otherwise wait for an asynchronous preemption to land.
func (e *spinEnd) Recv() (uint64, error) {
	for {
		switch spinPoll(&e.l.word, &e.seen) {
		case spinMoved:
			return e.seen, nil
		case spinStopped:
			return 0, ErrStopped
		}
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		runtime.Gosched()
	}
}

// spinPost moves the line from what this side last saw to the next
// number; false when Stop is there instead.
//
//go:nosplit
//go:norace
func spinPost(word, seen *uint64) bool {
	if !atomic.CompareAndSwapUint64(word, *seen, *seen+1) {
		return false
	}
	*seen++
	return true
}

// What spinPoll saw.
const (
	spinStill   = iota // the line did not move in spinYieldAfter loads
	spinMoved          // the partner posted: *seen is its number
	spinStopped        // Stop
)

// spinPoll loads the line up to spinYieldAfter times until it moves past
// *seen.
//
//go:nosplit
//go:norace
func spinPoll(word, seen *uint64) int {
	for i := 0; i < spinYieldAfter; i++ {
		w := atomic.LoadUint64(word)
		if w == Stop {
			return spinStopped
		}
		if w != *seen {
			*seen = w
			return spinMoved
		}
	}
	return spinStill
}
