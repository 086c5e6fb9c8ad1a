package mech

import (
	"encoding/binary"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	register(Row{Name: "eventfd", Order: 40, Wait: WaitKernel, On: []string{SubThread}, Trip: TripBlocks,
		Summary: "an eventfd counter per direction"},
		eventfdPair, nil)
	register(Row{Name: "pipe", Order: 50, Wait: WaitKernel, On: []string{SubThread, SubProcess}, Trip: TripBlocks, Value: true,
		Summary: "a pipe per direction, 8-byte messages"},
		fdThreadPair(pipe), processKindOf(fdParent(pipe), fdChild))
	register(Row{Name: "unixsock", Order: 60, Wait: WaitKernel, On: []string{SubThread, SubProcess}, Trip: TripBlocks, Value: true,
		Summary: "a Unix stream socketpair per direction, 8-byte messages"},
		fdThreadPair(socketpair), processKindOf(fdParent(socketpair), fdChild))
}

// fdEnd reads its partner's 8-byte messages from in and writes to out.
type fdEnd struct {
	in, out int
	buf     [8]byte
	rbuf    [8]byte
	// rawRecv makes Recv block in read(2) without telling the Go runtime
	// (see NewRawFDEnd); Echo and RoundTrips run in sections either way
	// (but in a race build, which has none).
	rawRecv bool
}

// Send writes 8 bytes; a pipe or socket with room never blocks, so it is a raw syscall.
func (e *fdEnd) Send(v uint64) error {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(e.out), uintptr(unsafe.Pointer(&e.buf[0])), 8)
	if errno != 0 {
		if errno == unix.EPIPE || errno == unix.EBADF {
			return ErrStopped
		}
		return fmt.Errorf("write: %w", errno)
	}
	if n != 8 {
		return fmt.Errorf("short write %d", n)
	}
	return nil
}

// Recv blocks in read(2) for the next 8-byte message; EOF means the partner is gone.
func (e *fdEnd) Recv() (uint64, error) {
	got := 0
	for got < 8 {
		var n uintptr
		var errno unix.Errno
		if e.rawRecv {
			n, _, errno = unix.RawSyscall(unix.SYS_READ, uintptr(e.in), uintptr(unsafe.Pointer(&e.rbuf[got])), uintptr(8-got))
		} else {
			n, _, errno = unix.Syscall(unix.SYS_READ, uintptr(e.in), uintptr(unsafe.Pointer(&e.rbuf[got])), uintptr(8-got))
		}
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			if errno == unix.EBADF {
				return 0, ErrStopped
			}
			return 0, fmt.Errorf("read: %w", errno)
		}
		if n == 0 {
			return 0, ErrStopped
		}
		got += int(n)
	}
	return binary.LittleEndian.Uint64(e.rbuf[:]), nil
}

type fdMaker func() (r, w int, err error)

func pipe() (int, int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, fmt.Errorf("pipe2: %w", err)
	}
	return p[0], p[1], nil
}

// socketpair returns the two ends of a stream socketpair; each end is both
// readable and writable, so a direction uses one end to read and the other to write.
func socketpair() (int, int, error) {
	p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, fmt.Errorf("socketpair: %w", err)
	}
	return p[0], p[1], nil
}

func fdThreadPair(mk fdMaker) func() (*Pair, error) {
	return func() (*Pair, error) {
		r1, w1, err := mk() // A -> B
		if err != nil {
			return nil, err
		}
		r2, w2, err := mk() // B -> A
		if err != nil {
			unix.Close(r1)
			unix.Close(w1)
			return nil, err
		}
		a, b := &fdEnd{in: r2, out: w1}, &fdEnd{in: r1, out: w2}
		stop := func() {
			var s [8]byte
			binary.LittleEndian.PutUint64(s[:], Stop)
			unix.Write(w1, s[:])
			unix.Write(w2, s[:])
		}
		closeAll := func() error {
			for _, fd := range []int{r1, w1, r2, w2} {
				unix.Close(fd)
			}
			return nil
		}
		return &Pair{A: a, B: b, Stop: stop, Close: closeAll}, nil
	}
}

func fdParent(mk fdMaker) func() (Endpoint, func(), []*os.File, func() error, error) {
	return func() (Endpoint, func(), []*os.File, func() error, error) {
		r1, w1, err := mk() // parent -> child
		if err != nil {
			return nil, nil, nil, nil, err
		}
		r2, w2, err := mk() // child -> parent
		if err != nil {
			unix.Close(r1)
			unix.Close(w1)
			return nil, nil, nil, nil, err
		}
		// The child gets fd 3 = its input, fd 4 = its output.
		files := []*os.File{os.NewFile(uintptr(r1), "child-in"), os.NewFile(uintptr(w2), "child-out")}
		a := &fdEnd{in: r2, out: w1}
		// Our reader is unblocked by the child's death (EOF once the
		// child's copy of w2 is gone and ours is closed after start).
		stop := func() {}
		closeAll := func() error {
			unix.Close(r2)
			unix.Close(w1)
			for _, f := range files {
				f.Close()
			}
			return nil
		}
		return a, stop, files, closeAll, nil
	}
}

func fdChild(files []*os.File) (Endpoint, error) {
	if len(files) < 2 {
		return nil, fmt.Errorf("child needs 2 fds, got %d", len(files))
	}
	// The child only echoes, in one system-call section (section_linux.go;
	// a race build has none and its child waits through the runtime):
	// its reads are raw, so its own runtime threads do not wake beside it
	// on the pinned CPU. Through the runtime on every read they did:
	// measured with --cpus 0, 24.5–26.1 µs and 2.18 switches per round trip
	// against 17.4–17.6 µs and 2.01 raw (perf bench sched pipe: 16.4 µs).
	return &fdEnd{in: int(files[0].Fd()), out: int(files[1].Fd())}, nil
}

// eventfdPair uses one eventfd per direction: a write adds to the counter,
// a read takes it (and blocks while it is 0).
func eventfdPair() (*Pair, error) {
	ab, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ba, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(ab)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	a, b := &eventEnd{in: ba, out: ab}, &eventEnd{in: ab, out: ba}
	stop := func() {
		var s [8]byte
		binary.LittleEndian.PutUint64(s[:], stopCount)
		unix.Write(ab, s[:])
		unix.Write(ba, s[:])
	}
	return &Pair{A: a, B: b, Stop: stop, Close: func() error { unix.Close(ab); unix.Close(ba); return nil }}, nil
}

// stopCount is added to an eventfd counter to mean "stop"; ordinary sends add 1.
const stopCount = 1 << 40

type eventEnd struct {
	in, out int
	one     [8]byte
	rbuf    [8]byte
}

func (e *eventEnd) Send(v uint64) error {
	binary.LittleEndian.PutUint64(e.one[:], 1)
	_, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(e.out), uintptr(unsafe.Pointer(&e.one[0])), 8)
	if errno != 0 {
		return fmt.Errorf("eventfd write: %w", errno)
	}
	return nil
}

func (e *eventEnd) Recv() (uint64, error) {
	for {
		_, _, errno := unix.Syscall(unix.SYS_READ, uintptr(e.in), uintptr(unsafe.Pointer(&e.rbuf[0])), 8)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, ErrStopped
		}
		v := binary.LittleEndian.Uint64(e.rbuf[:])
		if v >= stopCount {
			return 0, ErrStopped
		}
		return v, nil
	}
}
