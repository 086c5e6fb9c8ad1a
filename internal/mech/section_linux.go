//go:build !race

package mech

import (
	"encoding/binary"
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
// a system-call section: all n in one section, the sampled ones among
// them timed with the sampler's section clock and recorded in place, so a
// sampled op costs what an unsampled one does and the runtime is entered
// once per call.
//
// Why one section and not one per sampled op (as before issue 32): each
// exit from a section found the thread's P taken by sysmon (a locked
// worker that only leaves and re-enters sections never ticks its P's
// schedtick, so after the runtime's 10 ms forcePreemptNS sysmon takes
// that P at every tick), and paid a futex wake of sysmon to get it back:
// ~8 000 futex calls a second on a process pipe round trip. A pass
// through the scheduler every 5 ms cured the churn but its handoffs left
// the CPU idle ~0.8% of the time. In one section sysmon takes the P once
// and the section's one exit gets an idle P back.
func sectionTrips(e tripper, n int, s *measure.Sampler) error {
	return e.trips(n, s)
}

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

// fdTrips does n round trips in one section, timing the ones s samples.
//
//go:nosplit
//go:noinline
//go:norace
func fdTrips(in, out uintptr, w, r *[8]byte, limit uint64, n int, s *measure.Sampler) (outcome int, errno unix.Errno) {
	entersyscall()
	for i := 0; i < n && outcome == tripsDone; {
		k := s.Unsampled(n - i)
		for j := 0; j < k && outcome == tripsDone; j++ {
			outcome, errno = fdTrip(in, out, w, r, limit)
		}
		if i += k; i < n && outcome == tripsDone && s.Take() {
			t0 := s.SectionNow()
			outcome, errno = fdTrip(in, out, w, r, limit)
			s.Record(s.SectionNow() - t0)
			i++
		}
	}
	exitsyscall()
	return outcome, errno
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

// futexTrips does n round trips over a futex pair in one section, timing
// the ones s samples; false once stopped.
//
//go:nosplit
//go:noinline
//go:norace
func futexTrips(mine, theirs, seen, stop *uint32, priv uintptr, n int, s *measure.Sampler) (ok bool) {
	ok = true
	entersyscall()
	for i := 0; i < n && ok; {
		k := s.Unsampled(n - i)
		for j := 0; j < k && ok; j++ {
			ok = futexSignal(theirs, stop, priv) && futexAwait(mine, seen, stop, priv)
		}
		if i += k; i < n && ok && s.Take() {
			t0 := s.SectionNow()
			ok = futexSignal(theirs, stop, priv) && futexAwait(mine, seen, stop, priv)
			s.Record(s.SectionNow() - t0)
			i++
		}
	}
	exitsyscall()
	return ok
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

func (e *fdEnd) trips(n int, s *measure.Sampler) error {
	outcome, errno := fdTrips(uintptr(e.in), uintptr(e.out), &e.buf, &e.rbuf, Stop, n, s)
	return tripsErr("fd", outcome, errno)
}

func (e *fdEnd) echo() error {
	outcome, errno := fdEcho(uintptr(e.in), uintptr(e.out), &e.rbuf, nil, Stop)
	return echoErr("fd", outcome, errno)
}

func (e *eventEnd) roundTrips(n int, s *measure.Sampler) error {
	binary.LittleEndian.PutUint64(e.one[:], 1)
	return sectionTrips(e, n, s)
}

func (e *eventEnd) trips(n int, s *measure.Sampler) error {
	outcome, errno := fdTrips(uintptr(e.in), uintptr(e.out), &e.one, &e.rbuf, stopCount, n, s)
	return tripsErr("eventfd", outcome, errno)
}

func (e *eventEnd) echo() error {
	binary.LittleEndian.PutUint64(e.one[:], 1)
	outcome, errno := fdEcho(uintptr(e.in), uintptr(e.out), &e.rbuf, &e.one, stopCount)
	return echoErr("eventfd", outcome, errno)
}

func (e *futexEnd) roundTrips(n int, s *measure.Sampler) error {
	return sectionTrips(e, n, s)
}

func (e *futexEnd) trips(n int, s *measure.Sampler) error {
	if !futexTrips(&e.w.seq[e.me], &e.w.seq[1-e.me], &e.seen, &e.w.stop, e.priv, n, s) {
		return ErrStopped
	}
	return nil
}

func (e *futexEnd) echo() error {
	futexEcho(&e.w.seq[e.me], &e.w.seq[1-e.me], &e.seen, &e.w.stop, e.priv)
	return nil
}

// Yields makes up to n sched_yield(2) calls from the calling (locked)
// thread in one system-call section, and returns how many it made: fewer
// once *stop is non-zero, which it reads every 64 calls. Made through the
// runtime one at a time the calls would pay its bookkeeping each; made raw
// outside a section they would keep the thread's P, where a
// stop-the-world cannot take it (a signal to preempt the thread lands on
// a system call's return, no point the runtime can stop at), so a garbage
// collection, and every timer with it, would wait for the whole batch:
// minutes, when other work gets the CPU at each yield.
//
//go:nosplit
//go:noinline
//go:norace
func Yields(n int, stop *uint32) int {
	entersyscall()
	i := 0
	for i < n {
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		i++
		if i&63 == 0 && atomic.LoadUint32(stop) != 0 {
			break
		}
	}
	exitsyscall()
	return i
}
