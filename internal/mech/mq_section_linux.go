//go:build !race

package mech

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// mq's loops in system-call sections (section_linux.go), as a pipe's.

// mqSendMsg posts the 8 bytes of w on queue out.
//
//go:nosplit
//go:norace
func mqSendMsg(out uintptr, w *[8]byte) (outcome int, errno unix.Errno) {
	_, _, e := unix.RawSyscall6(unix.SYS_MQ_TIMEDSEND, out, uintptr(unsafe.Pointer(w)), 8, 0, 0, 0)
	switch {
	case e == unix.EBADF:
		return tripsStopped, 0
	case e != 0:
		return tripsWriteErr, e
	}
	return tripsDone, 0
}

// mqRecvMsg sleeps until a message is on queue in and takes it into r.
//
//go:nosplit
//go:norace
func mqRecvMsg(in uintptr, r *[8]byte) (outcome int, errno unix.Errno) {
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_MQ_TIMEDRECEIVE, in, uintptr(unsafe.Pointer(r)), 8, 0, 0, 0)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EBADF:
			return tripsStopped, 0
		case e != 0:
			return tripsReadErr, e
		case n != 8:
			return tripsReadErr, unix.EMSGSIZE
		}
		if le64(r) == Stop {
			return tripsStopped, 0
		}
		return tripsDone, 0
	}
}

// mqTrip is one round trip: post w, take the reply into r.
//
//go:nosplit
//go:norace
func mqTrip(in, out uintptr, w, r *[8]byte) (outcome int, errno unix.Errno) {
	if outcome, errno = mqSendMsg(out, w); outcome != tripsDone {
		return outcome, errno
	}
	return mqRecvMsg(in, r)
}

// mqTrips does n round trips in one section, timing the ones s samples.
//
//go:nosplit
//go:noinline
//go:norace
func mqTrips(in, out uintptr, w, r *[8]byte, n int, s *measure.Sampler) (outcome int, errno unix.Errno) {
	entersyscall()
	for i := 0; i < n && outcome == tripsDone; {
		k := s.Unsampled(n - i)
		for j := 0; j < k && outcome == tripsDone; j++ {
			outcome, errno = mqTrip(in, out, w, r)
		}
		if i += k; i < n && outcome == tripsDone && s.Take() {
			t0 := s.SectionNow()
			outcome, errno = mqTrip(in, out, w, r)
			s.Record(s.SectionNow() - t0)
			i++
		}
	}
	exitsyscall()
	return outcome, errno
}

// mqEcho answers every message until Stop or an error, in one section.
//
//go:nosplit
//go:noinline
//go:norace
func mqEcho(in, out uintptr, r *[8]byte) (outcome int, errno unix.Errno) {
	entersyscall()
	for {
		if outcome, errno = mqRecvMsg(in, r); outcome != tripsDone {
			break
		}
		if outcome, errno = mqSendMsg(out, r); outcome != tripsDone {
			break
		}
	}
	exitsyscall()
	return outcome, errno
}

func (e *mqEnd) roundTrips(n int, s *measure.Sampler) error {
	e.buf = [8]byte{} // every round trip sends 0, never Stop
	return sectionTrips(e, n, s)
}

func (e *mqEnd) trips(n int, s *measure.Sampler) error {
	outcome, errno := mqTrips(uintptr(e.in), uintptr(e.out), &e.buf, &e.rbuf, n, s)
	return tripsErr("mq", outcome, errno)
}

func (e *mqEnd) echo() error {
	outcome, errno := mqEcho(uintptr(e.in), uintptr(e.out), &e.rbuf)
	return echoErr("mq", outcome, errno)
}
