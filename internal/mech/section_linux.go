package mech

import (
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
// read whose writer it has already stopped. Inside a section the thread
// has given up its P, so a stop-the-world takes the P and never waits for
// the thread; the round trips themselves are plain system calls, as in C.
//
// The rules are those of code in a system call: every function called
// between entersyscall and exitsyscall is //go:nosplit (a stack check there
// throws), nothing in a section allocates or stores a pointer (without a P
// there is no write barrier), and both calls are made from one frame.

//go:linkname entersyscall runtime.entersyscall
func entersyscall()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// A section's outcome: how the run of round trips ended.
const (
	tripsDone    = iota // all n round trips, or the echo's natural end
	tripsStopped        // Stop, EOF, or a closed descriptor: the pair is torn down
	tripsWriteErr
	tripsReadErr
)

// tripper runs k round trips in one section.
type tripper interface {
	trips(k int) error
}

// sectionTrips is RoundTrips for an endpoint that runs its round trips in
// sections: the ops the sampler skips in one section each run, a sampled
// op in a section of its own, timed from outside it (a section cannot read
// the clock), so a sampled op pays one entersyscall/exitsyscall, as a wait
// through unix.Syscall did.
func sectionTrips(e tripper, n int, s *measure.Sampler) error {
	for i := 0; i < n; {
		if k := s.Unsampled(n - i); k > 0 {
			if err := e.trips(k); err != nil {
				return err
			}
			i += k
			continue
		}
		t := s.Start(i)
		if err := e.trips(1); err != nil {
			return err
		}
		s.Stop(t)
		i++
	}
	return nil
}

// tripsErr turns a section's outcome into RoundTrips' error.
func tripsErr(what string, outcome int, errno unix.Errno) error {
	switch outcome {
	case tripsDone:
		return nil
	case tripsStopped:
		return ErrStopped
	case tripsWriteErr:
		return &sectionError{what + " write", errno}
	default:
		return &sectionError{what + " read", errno}
	}
}

// echoErr is tripsErr for Echo, which ends without error when stopped.
func echoErr(what string, outcome int, errno unix.Errno) error {
	if outcome == tripsStopped {
		return nil
	}
	return tripsErr(what, outcome, errno)
}

type sectionError struct {
	op    string
	errno unix.Errno
}

func (e *sectionError) Error() string { return e.op + ": " + e.errno.Error() }
func (e *sectionError) Unwrap() error { return e.errno }

// le64 is binary.LittleEndian.Uint64 without the call.
//
//go:nosplit
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
	_, _, e := unix.RawSyscall(unix.SYS_WRITE, out, uintptr(unsafe.Pointer(w)), 8)
	switch e {
	case 0:
		return tripsDone, 0
	case unix.EPIPE, unix.EBADF:
		return tripsStopped, 0
	}
	return tripsWriteErr, e
}

// fdTrips does n round trips in one section: write w to out, read the
// reply from in into r.
//
//go:nosplit
//go:noinline
//go:norace
func fdTrips(in, out uintptr, w, r *[8]byte, limit uint64, n int) (outcome int, errno unix.Errno) {
	entersyscall()
	for i := 0; i < n; i++ {
		if outcome, errno = writeMsg(out, w); outcome != tripsDone {
			break
		}
		if outcome, errno = readMsg(in, r, limit); outcome != tripsDone {
			break
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

// futexTrips does n round trips over a futex pair in one section.
//
//go:nosplit
//go:noinline
//go:norace
func futexTrips(mine, theirs, seen, stop *uint32, priv uintptr, n int) (outcome int) {
	entersyscall()
	for i := 0; i < n; i++ {
		if !futexSignal(theirs, stop, priv) || !futexAwait(mine, seen, stop, priv) {
			outcome = tripsStopped
			break
		}
	}
	exitsyscall()
	return outcome
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
