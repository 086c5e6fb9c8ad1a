package mech

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futex(2) operations (not all are exported by x/sys/unix).
const (
	futexWaitOp  = 0
	futexWakeOp  = 1
	futexPrivate = 128
)

func init() {
	register(Row{Name: "futex", Order: 30, Wait: WaitKernel, On: []string{SubThread}, Trip: TripBlocks,
		Summary: "a private futex word per side: FUTEX_WAKE, FUTEX_WAIT"},
		func() (*Pair, error) { return futexPair(new(futexWords), futexPrivate), nil }, nil)
	register(Row{Name: "shmfutex", Order: 70, Wait: WaitKernel, On: []string{SubProcess}, Trip: TripMayFindPosted,
		Summary: "a shared futex word per side on a memfd page mapped by both processes"},
		nil, processKindOf(shmParent, shmChild))
}

// futexWords is the shared state of a futex pair: one sequence word per
// direction and a stop flag. It lives in Go memory for threads and in a
// shared page (memfd) for processes.
type futexWords struct {
	seq  [2]uint32
	stop uint32
}

type futexEnd struct {
	w    *futexWords
	me   int
	seen uint32
	priv uintptr
}

func futexWait(addr *uint32, val uint32, priv uintptr) {
	// Blocking: the runtime-aware Syscall lets Go hand the P on.
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp|priv, uintptr(val), 0, 0, 0)
}

func futexWake(addr *uint32, priv uintptr) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp|priv, 1, 0, 0, 0)
}

// Send bumps the partner's sequence word and wakes it.
func (e *futexEnd) Send(v uint64) error {
	if atomic.LoadUint32(&e.w.stop) != 0 {
		return ErrStopped
	}
	addr := &e.w.seq[1-e.me]
	atomic.AddUint32(addr, 1)
	futexWake(addr, e.priv)
	return nil
}

// Recv sleeps in FUTEX_WAIT until our sequence word moves.
func (e *futexEnd) Recv() (uint64, error) {
	addr := &e.w.seq[e.me]
	for {
		if atomic.LoadUint32(&e.w.stop) != 0 {
			return 0, ErrStopped
		}
		cur := atomic.LoadUint32(addr)
		if cur != e.seen {
			e.seen = cur
			return uint64(cur), nil
		}
		futexWait(addr, cur, e.priv)
	}
}

func futexStop(w *futexWords, priv uintptr) func() {
	return func() {
		atomic.StoreUint32(&w.stop, 1)
		for i := range w.seq {
			atomic.AddUint32(&w.seq[i], 1)
			unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&w.seq[i])), futexWakeOp|priv, 1<<30, 0, 0, 0)
		}
	}
}

func futexPair(w *futexWords, priv uintptr) *Pair {
	return &Pair{
		A:     &futexEnd{w: w, me: 0, priv: priv},
		B:     &futexEnd{w: w, me: 1, priv: priv},
		Stop:  futexStop(w, priv),
		Close: func() error { return nil },
	}
}

// shmParent maps a shared page from a memfd; the child maps the same fd.
func shmParent() (Endpoint, func(), []*os.File, func() error, error) {
	fd, err := unix.MemfdCreate("ctxlab-shmfutex", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(os.Getpagesize())); err != nil {
		unix.Close(fd)
		return nil, nil, nil, nil, fmt.Errorf("ftruncate memfd: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, nil, nil, nil, fmt.Errorf("mmap memfd: %w", err)
	}
	w := (*futexWords)(unsafe.Pointer(&mem[0]))
	f := os.NewFile(uintptr(fd), "shmfutex")
	closeAll := func() error {
		f.Close()
		return unix.Munmap(mem)
	}
	return &futexEnd{w: w, me: 0}, futexStop(w, 0), []*os.File{f}, closeAll, nil
}

func shmChild(files []*os.File) (Endpoint, error) {
	if len(files) < 1 {
		return nil, fmt.Errorf("shmfutex child: no shared memory fd")
	}
	mem, err := unix.Mmap(int(files[0].Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shmfutex child: mmap: %w", err)
	}
	w := (*futexWords)(unsafe.Pointer(&mem[0]))
	// As fdChild's: the child only echoes, in one system-call section, so
	// its FUTEX_WAITs are raw and its own threads do not wake beside it.
	// seen 0: the page starts zeroed, and the parent may have sent already.
	return &futexEnd{w: w, me: 1}, nil
}
