//go:build !race

package mech

import (
	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// spin's loops in a system-call section (section_linux.go): the runtime
// neither preempts a spinning side (a locked goroutine preempted would
// hand its P on and sleep) nor waits for it in a stop-the-world.

// spinTrips does n round trips in one section, timing the ones s
// samples; false once stopped.
//
//go:nosplit
//go:noinline
//go:norace
func spinTrips(word, seen *uint64, n int, s *measure.Sampler) (ok bool) {
	ok = true
	entersyscall()
	for i := 0; i < n && ok; {
		k := s.Unsampled(n - i)
		for j := 0; j < k && ok; j++ {
			ok = spinPost(word, seen) && spinAwait(word, seen)
		}
		if i += k; i < n && ok && s.Take() {
			t0 := s.SectionNow()
			ok = spinPost(word, seen) && spinAwait(word, seen)
			s.Record(s.SectionNow() - t0)
			i++
		}
	}
	exitsyscall()
	return ok
}

// spinEcho answers every post until Stop, in one section.
//
//go:nosplit
//go:noinline
//go:norace
func spinEcho(word, seen *uint64) {
	entersyscall()
	for spinAwait(word, seen) && spinPost(word, seen) {
	}
	exitsyscall()
}

func (e *spinEnd) roundTrips(n int, s *measure.Sampler) error {
	return sectionTrips(e, n, s)
}

func (e *spinEnd) trips(n int, s *measure.Sampler) error {
	if !spinTrips(&e.l.word, &e.seen, n, s) {
		return ErrStopped
	}
	return nil
}

func (e *spinEnd) echo() error {
	spinEcho(&e.l.word, &e.seen)
	return nil
}

// spinAwait spins until the line moves past *seen, yielding the CPU
// after every spinYieldAfter loads; false on Stop. Only in a section: it
// has no point where the runtime could preempt it.
//
//go:nosplit
//go:norace
func spinAwait(word, seen *uint64) bool {
	for {
		switch spinPoll(word, seen) {
		case spinMoved:
			return true
		case spinStopped:
			return false
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}
