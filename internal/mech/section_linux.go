//go:build !race

package mech

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// A system-call section is a run of raw system calls, and the few plain
// loads and stores between them, that the Go runtime sees as one blocking
// system call: entersyscall before it, exitsyscall after, as
// syscall.Syscall brackets one call and cgo a C function.
//
// Why: through unix.Syscall every wait pays the runtime's system-call
// bookkeeping (~3% of a thread pipe round trip: scripts/rawloop -runtime
// against raw, over random layouts), and a raw wait outside a section can
// hang the process: a stop-the-world waits for a thread blocked in a raw
// read whose writer it has already stopped. Inside a section the thread's
// P can be taken without waiting for the thread, so a stop-the-world never
// waits on it; the round trips themselves are plain system calls, as in C.
//
// The rules are those of code in a system call: every function called
// between entersyscall and exitsyscall is //go:nosplit (a stack check there
// throws), nothing in a section allocates or stores a pointer (without a P
// there is no write barrier), and both calls are made from one frame. A
// race build has no sections (section_race.go): the race detector's
// atomics need a P.
//
// A sampled op is the last of its section, timed inside it with the
// sampler's section clock, so it pays what the ops around it pay.

const sections = true

//go:linkname entersyscall runtime.entersyscall
func entersyscall()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// A section's outcome: how its run of round trips ended.
const (
	tripsDone     = iota // every round trip asked for
	tripsStopped         // Stop, EOF, or a closed descriptor: the pair is torn down
	tripsWriteErr        // a write failed (errno says why) or was short
	tripsReadErr         // a read failed
)

// sectionTrips is RoundTrips for an endpoint that runs its round trips in
// sections: one section for each run of ops the sampler skips together with
// the sampled op after it, so a sampled op costs what an unsampled one does
// and the runtime is entered once per sampling period.
//
// At most every reschedEvery the goroutine goes through the scheduler
// (runtime.Gosched): a locked worker that only ever leaves and re-enters
// sections never ticks its P's schedtick, so after 10 ms (the runtime's
// forcePreemptNS) sysmon takes that P at every tick, as a goroutine that
// will not yield, and each section's exit then pays for getting a P back
// and waking sysmon: a futex wake per sampling period, with sysmon's
// nanosleeps beside it, ~8 000 and ~5 000 a second on a process pipe round
// trip (issue 32). A pass through the scheduler hands the locked thread's
// P off and back (two futex calls and two switches of that thread, a few
// µs); every 5 ms that is ~0.1%.
func sectionTrips(e tripper, n int, s *measure.Sampler) error {
	last := s.SectionNow()
	for i := 0; i < n; {
		k := s.Unsampled(n - i)
		timed := i+k < n && s.Take()
		lat, err := e.trips(k, s, timed)
		if err != nil {
			return err
		}
		if timed {
			s.Record(lat)
			k++
		}
		i += k
		if now := s.SectionNow(); now-last > reschedEvery {
			runtime.Gosched()
			last = now
		}
	}
	return nil
}

// reschedEvery is how long, in ns, a round-trip loop runs sections before
// it passes through the scheduler (sectionTrips): half of the runtime's
// 10 ms before sysmon takes the P of a goroutine that does not yield.
const reschedEvery = 5_000_000

// tripsErr turns a section's outcome into RoundTrips' error.
func tripsErr(what string, outcome int, errno unix.Errno) error {
	switch outcome {
	case tripsDone:
		return nil
	case tripsStopped:
		return ErrStopped
	case tripsWriteErr:
		if errno == 0 {
			return &sectionError{what + " write", "short write"}
		}
		return &sectionError{what + " write", errno.Error()}
	default:
		return &sectionError{what + " read", errno.Error()}
	}
}

// echoErr is tripsErr for Echo, which ends without error when stopped.
func echoErr(what string, outcome int, errno unix.Errno) error {
	if outcome == tripsStopped {
		return nil
	}
	return tripsErr(what, outcome, errno)
}

type sectionError struct{ op, why string }

func (e *sectionError) Error() string { return e.op + ": " + e.why }

// le64 is binary.LittleEndian.Uint64 without the call.
//
//go:nosplit
//go:norace
func le64(b *[8]byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// readMsg reads one 8-byte message from fd in into r (for a pipe, socket
// or eventfd); limit is the first value that means "stop" (Stop for a
// message, stopCount for an eventfd count).
//
//go:nosplit
//go:norace
func readMsg(in uintptr, r *[8]byte, limit uint64) (outcome int, errno unix.Errno) {
	for got := uintptr(0); got < 8; {
		n, _, e := unix.RawSyscall(unix.SYS_READ, in, uintptr(unsafe.Pointer(r))+got, 8-got)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EBADF:
			return tripsStopped, 0
		case e != 0:
			return tripsReadErr, e
		case n == 0:
			return tripsStopped, 0 // EOF: the writer is gone
		}
		got += n
	}
	if le64(r) >= limit {
		return tripsStopped, 0
	}
	return tripsDone, 0
}

// writeMsg writes the 8 bytes of w to fd out; with room in the pipe,
// socket or eventfd counter it never blocks.
//
//go:nosplit
//go:norace
func writeMsg(out uintptr, w *[8]byte) (outcome int, errno unix.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, out, uintptr(unsafe.Pointer(w)), 8)
	switch {
	case e == unix.EPIPE || e == unix.EBADF:
		return tripsStopped, 0
	case e != 0:
		return tripsWriteErr, e
	case n != 8:
		return tripsWriteErr, 0
	}
	return tripsDone, 0
}

// fdTrip is one round trip: write w to out, read the reply from in into r.
//
//go:nosplit
//go:norace
func fdTrip(in, out uintptr, w, r *[8]byte, limit uint64) (outcome int, errno unix.Errno) {
	if outcome, errno = writeMsg(out, w); outcome != tripsDone {
		return outcome, errno
	}
	return readMsg(in, r, limit)
}

// fdTrips does k round trips and, if timed, one more timed, in one section.
//
//go:nosplit
//go:noinline
//go:norace
func fdTrips(in, out uintptr, w, r *[8]byte, limit uint64, k int, s *measure.Sampler, timed bool) (outcome int, errno unix.Errno, lat int64) {
	entersyscall()
	for i := 0; i < k && outcome == tripsDone; i++ {
		outcome, errno = fdTrip(in, out, w, r, limit)
	}
	if timed && outcome == tripsDone {
		t0 := s.SectionNow()
		outcome, errno = fdTrip(in, out, w, r, limit)
		lat = s.SectionNow() - t0
	}
	exitsyscall()
	return outcome, errno, lat
}

// fdEcho answers every message from in on out, in one section, until a
// stop value, EOF or an error. An eventfd echo (reply non-nil) answers
// each count with reply; a message echo sends back what it read.
//
//go:nosplit
//go:noinline
//go:norace
func fdEcho(in, out uintptr, r, reply *[8]byte, limit uint64) (outcome int, errno unix.Errno) {
	if reply == nil {
		reply = r
	}
	entersyscall()
	for {
		if outcome, errno = readMsg(in, r, limit); outcome != tripsDone {
			break
		}
		if outcome, errno = writeMsg(out, reply); outcome != tripsDone {
			break
		}
	}
	exitsyscall()
	return outcome, errno
}

// futexSignal bumps the partner's word and wakes it; false once stopped.
//
//go:nosplit
//go:norace
func futexSignal(theirs, stop *uint32, priv uintptr) bool {
	if atomic.LoadUint32(stop) != 0 {
		return false
	}
	atomic.AddUint32(theirs, 1)
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(theirs)), futexWakeOp|priv, 1, 0, 0, 0)
	return true
}

// futexAwait sleeps until our word moves past *seen; false once stopped.
//
//go:nosplit
//go:norace
func futexAwait(mine, seen, stop *uint32, priv uintptr) bool {
	for {
		if atomic.LoadUint32(stop) != 0 {
			return false
		}
		cur := atomic.LoadUint32(mine)
		if cur != *seen {
			*seen = cur
			return true
		}
		unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(mine)), futexWaitOp|priv, uintptr(cur), 0, 0, 0)
	}
}

// futexTrips does k round trips over a futex pair and, if timed, one more
// timed, in one section; false once stopped.
//
//go:nosplit
//go:noinline
//go:norace
func futexTrips(mine, theirs, seen, stop *uint32, priv uintptr, k int, s *measure.Sampler, timed bool) (ok bool, lat int64) {
	ok = true
	entersyscall()
	for i := 0; i < k && ok; i++ {
		ok = futexSignal(theirs, stop, priv) && futexAwait(mine, seen, stop, priv)
	}
	if timed && ok {
		t0 := s.SectionNow()
		ok = futexSignal(theirs, stop, priv) && futexAwait(mine, seen, stop, priv)
		lat = s.SectionNow() - t0
	}
	exitsyscall()
	return ok, lat
}

// futexEcho answers every wake until stopped, in one section.
//
//go:nosplit
//go:noinline
//go:norace
func futexEcho(mine, theirs, seen, stop *uint32, priv uintptr) {
	entersyscall()
	for futexAwait(mine, seen, stop, priv) && futexSignal(theirs, stop, priv) {
	}
	exitsyscall()
}

// The endpoints' loops (looper) run in sections. what names the kind in
// an error: a pipe and a socketpair share fdEnd.

func (e *fdEnd) roundTrips(n int, s *measure.Sampler) error {
	e.buf = [8]byte{} // every round trip sends 0, never Stop
	return sectionTrips(e, n, s)
}

func (e *fdEnd) trips(k int, s *measure.Sampler, timed bool) (int64, error) {
	outcome, errno, lat := fdTrips(uintptr(e.in), uintptr(e.out), &e.buf, &e.rbuf, Stop, k, s, timed)
	return lat, tripsErr("fd", outcome, errno)
}

func (e *fdEnd) echo() error {
	outcome, errno := fdEcho(uintptr(e.in), uintptr(e.out), &e.rbuf, nil, Stop)
	return echoErr("fd", outcome, errno)
}

func (e *eventEnd) roundTrips(n int, s *measure.Sampler) error {
	binary.LittleEndian.PutUint64(e.one[:], 1)
	return sectionTrips(e, n, s)
}

func (e *eventEnd) trips(k int, s *measure.Sampler, timed bool) (int64, error) {
	outcome, errno, lat := fdTrips(uintptr(e.in), uintptr(e.out), &e.one, &e.rbuf, stopCount, k, s, timed)
	return lat, tripsErr("eventfd", outcome, errno)
}

func (e *eventEnd) echo() error {
	binary.LittleEndian.PutUint64(e.one[:], 1)
	outcome, errno := fdEcho(uintptr(e.in), uintptr(e.out), &e.rbuf, &e.one, stopCount)
	return echoErr("eventfd", outcome, errno)
}

func (e *futexEnd) roundTrips(n int, s *measure.Sampler) error {
	return sectionTrips(e, n, s)
}

func (e *futexEnd) trips(k int, s *measure.Sampler, timed bool) (int64, error) {
	ok, lat := futexTrips(&e.w.seq[e.me], &e.w.seq[1-e.me], &e.seen, &e.w.stop, e.priv, k, s, timed)
	if !ok {
		return lat, ErrStopped
	}
	return lat, nil
}

func (e *futexEnd) echo() error {
	futexEcho(&e.w.seq[e.me], &e.w.seq[1-e.me], &e.seen, &e.w.stop, e.priv)
	return nil
}
