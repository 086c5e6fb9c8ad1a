package mech

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A POSIX message queue per direction between two threads: mq_timedsend
// posts an 8-byte message, mq_timedreceive sleeps in the kernel until
// one is there. x/sys/unix has the system call numbers but no wrappers,
// so the calls are made raw, as glibc's mq_send and mq_receive make them
// (no timeout). Each queue is created under a name of this process's own
// and unlinked at once: nothing is left in /dev/mqueue, which need not be
// mounted (mq_open reaches the kernel's own mount).
func init() {
	register(Row{Name: "mq", Order: 80, Wait: WaitKernel, On: []string{SubThread}, Trip: TripBlocks, Value: true,
		Summary: "a POSIX message queue per direction (mq_timedsend, mq_timedreceive), 8-byte messages"},
		mqPair, nil)
}

// mqAttr is struct mq_attr (four longs and four reserved).
type mqAttr struct {
	Flags, Maxmsg, Msgsize, Curmsgs int
	_                               [4]int
}

// mqDepth is how many messages a queue holds: one in flight each way and
// Stop, with room to spare, so a send never blocks.
const mqDepth = 4

var mqSeq atomic.Uint64

// mqOpen creates a queue of 8-byte messages and unlinks its name.
func mqOpen() (int, error) {
	name, err := unix.BytePtrFromString(fmt.Sprintf("ctxlab-%d-%d", os.Getpid(), mqSeq.Add(1)))
	if err != nil {
		return -1, err
	}
	attr := mqAttr{Maxmsg: mqDepth, Msgsize: 8}
	fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)),
		unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600, uintptr(unsafe.Pointer(&attr)), 0, 0)
	if errno != 0 {
		return -1, mqError(errno)
	}
	unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(name)), 0, 0)
	return int(fd), nil
}

// mqError says why mq_open failed; a kernel without POSIX message queues
// (ENOSYS) or a sandbox that refuses the call (EPERM) is unsupported here.
func mqError(errno unix.Errno) error {
	switch errno {
	case unix.ENOSYS:
		return fmt.Errorf("%w: mq_open: this kernel has no POSIX message queues (CONFIG_POSIX_MQUEUE): %v", ErrUnsupported, errno)
	case unix.EPERM, unix.EACCES:
		return fmt.Errorf("%w: mq_open refused here (a seccomp filter or a security module): %v", ErrUnsupported, errno)
	}
	return fmt.Errorf("mq_open: %w", errno)
}

func mqPair() (*Pair, error) {
	ab, err := mqOpen()
	if err != nil {
		return nil, err
	}
	ba, err := mqOpen()
	if err != nil {
		unix.Close(ab)
		return nil, err
	}
	a, b := &mqEnd{in: ba, out: ab}, &mqEnd{in: ab, out: ba}
	stop := func() {
		var s [8]byte
		binary.LittleEndian.PutUint64(s[:], Stop)
		// A timeout in the past: never block, whatever the queue holds.
		var past unix.Timespec
		for _, q := range []int{ab, ba} {
			unix.Syscall6(unix.SYS_MQ_TIMEDSEND, uintptr(q), uintptr(unsafe.Pointer(&s[0])), 8, 0, uintptr(unsafe.Pointer(&past)), 0)
		}
	}
	return &Pair{A: a, B: b, Stop: stop, Close: func() error { unix.Close(ab); unix.Close(ba); return nil }}, nil
}

// mqEnd receives from queue in and sends to queue out.
type mqEnd struct {
	in, out int
	buf     [8]byte
	rbuf    [8]byte
}

// Send posts 8 bytes; a queue with room never blocks, so it is a raw call.
func (e *mqEnd) Send(v uint64) error {
	binary.LittleEndian.PutUint64(e.buf[:], v)
	_, _, errno := unix.RawSyscall6(unix.SYS_MQ_TIMEDSEND, uintptr(e.out), uintptr(unsafe.Pointer(&e.buf[0])), 8, 0, 0, 0)
	switch {
	case errno == unix.EBADF:
		return ErrStopped
	case errno != 0:
		return fmt.Errorf("mq_timedsend: %w", errno)
	}
	return nil
}

// Recv sleeps in mq_timedreceive for the next message.
func (e *mqEnd) Recv() (uint64, error) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_MQ_TIMEDRECEIVE, uintptr(e.in), uintptr(unsafe.Pointer(&e.rbuf[0])), 8, 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EBADF:
			return 0, ErrStopped
		case errno != 0:
			return 0, fmt.Errorf("mq_timedreceive: %w", errno)
		case n != 8:
			return 0, errors.New("mq_timedreceive: short message")
		}
		return binary.LittleEndian.Uint64(e.rbuf[:]), nil
	}
}
