// Package rawloop holds the plainest Go ping-pongs there are: the
// references ctxlab's thread, process and channel arms are held to, by
// scripts/rawloop and by `ctxlab selfcheck` (which runs them as hidden
// child modes of its own binary, each in a process of its own).
//
// Two locked threads, the calling goroutine's and one more, both pinned to
// one CPU, hand a message back and forth n times in raw system calls (the
// Go runtime never sees them block). With viaRuntime their waits go through
// the runtime's entersyscall/exitsyscall, as a Go program's blocking calls
// do (ctxlab's arms wait raw, in system-call sections, and do not pay that
// per op). ProcessLoop's other side is a child process started from the
// pinned thread, so all its threads are on that CPU, echoing raw as
// ctxlab's children do. Nothing here needs cgo, so the threads are the Go
// runtime's own (clone(2)), as a CGO_ENABLED=0 ctxlab's are.
package rawloop

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	futexWait = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWake = 1 | 128
)

// Mechs are the thread loops' mechanisms.
var Mechs = []string{"futex", "eventfd", "pipe"}

// pair is the two sides' shared state. Its send and recv are direct calls
// with the mechanism and the wait chosen by plain branches: function
// values in the loop (an earlier rawloop) read ~3% slower than a loop
// written out by hand, which matched perf bench.
type pair struct {
	futex, viaRuntime bool
	w                 [2]uint32 // futex words: w[k] the sequence sent towards side k
	fds               [2][2]int // read end, write end of the direction towards side k
	one, buf          [2][8]byte
}

func (p *pair) send(k int, i uint32) {
	if p.futex {
		atomic.StoreUint32(&p.w[1-k], i)
		unix.RawSyscall(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&p.w[1-k])), futexWake, 1)
		return
	}
	unix.RawSyscall(unix.SYS_WRITE, uintptr(p.fds[1-k][1]), uintptr(unsafe.Pointer(&p.one[k][0])), 8)
}

func (p *pair) recv(k int, i uint32) {
	if p.futex {
		for atomic.LoadUint32(&p.w[k]) != i {
			if p.viaRuntime {
				unix.Syscall(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&p.w[k])), futexWait, uintptr(i-1))
			} else {
				unix.RawSyscall(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&p.w[k])), futexWait, uintptr(i-1))
			}
		}
		return
	}
	if p.viaRuntime {
		unix.Syscall(unix.SYS_READ, uintptr(p.fds[k][0]), uintptr(unsafe.Pointer(&p.buf[k][0])), 8)
	} else {
		unix.RawSyscall(unix.SYS_READ, uintptr(p.fds[k][0]), uintptr(unsafe.Pointer(&p.buf[k][0])), 8)
	}
}

// Loop runs n round trips of mech between the calling goroutine's thread
// and one more, both locked and pinned to cpu, and returns the time they
// took. The calling goroutine stays locked: call it from a goroutine of its
// own, whose thread ends with it.
func Loop(mech string, n uint32, cpu int, viaRuntime bool) (time.Duration, error) {
	p := &pair{futex: mech == "futex", viaRuntime: viaRuntime}
	p.one[0][0], p.one[1][0] = 1, 1
	switch mech {
	case "futex":
	case "eventfd", "pipe":
		for k := range 2 {
			var err error
			if mech == "eventfd" {
				var fd int
				fd, err = unix.Eventfd(0, unix.EFD_CLOEXEC)
				p.fds[k] = [2]int{fd, fd}
			} else {
				err = unix.Pipe2(p.fds[k][:], unix.O_CLOEXEC)
			}
			if err != nil {
				return 0, err
			}
			defer unix.Close(p.fds[k][0])
			if p.fds[k][1] != p.fds[k][0] {
				defer unix.Close(p.fds[k][1])
			}
		}
	default:
		return 0, fmt.Errorf("mechanism %q: want futex, eventfd or pipe", mech)
	}
	if !viaRuntime && runtime.GOMAXPROCS(0) < 3 {
		// Each raw waiter holds a P. Through the runtime it does not, and
		// an idle P can change what the runtime does around a wait, so
		// then GOMAXPROCS stays as ctxlab's thread arms run (2 here).
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	}
	// Nothing here allocates, and with the collector off nothing stops
	// the world while a raw waiter holds its P.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if err := pin(cpu); err != nil {
		return 0, err
	}
	pinned := make(chan error)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := pin(cpu)
		pinned <- err
		if err != nil {
			return
		}
		for i := uint32(1); i <= n; i++ {
			p.recv(1, i)
			p.send(1, i)
		}
	}()
	if err := <-pinned; err != nil {
		return 0, err
	}
	t0 := time.Now()
	for i := uint32(1); i <= n; i++ {
		p.send(0, i)
		p.recv(0, i)
	}
	d := time.Since(t0)
	<-done
	return d, nil
}

// pin locks the calling goroutine to its thread and the thread to cpu.
func pin(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %d: %w", cpu, err)
	}
	return nil
}

// Echo answers every 8 bytes on fd 3 with the same on fd 4, in raw system
// calls, until EOF: the child of ProcessLoop.
func Echo() {
	runtime.LockOSThread()
	var buf [8]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, 3, p, 8)
		if errno != 0 || n == 0 {
			return
		}
		unix.RawSyscall(unix.SYS_WRITE, 4, p, n)
	}
}

// warmUp is how many round trips ProcessLoop makes before its clock starts.
const warmUp = 1000

// ProcessLoop runs n pipe round trips between the calling goroutine's
// thread, pinned to cpu, and the child echo, a command that runs Echo
// (this program again, told so by its environment). The child is started
// from the pinned thread, so it inherits the CPU for all its threads:
// pinned whole, as ctxlab pins its children. Closing our end of its input
// ends it (EOF). The calling goroutine stays locked, as Loop's does.
func ProcessLoop(n uint32, cpu int, viaRuntime bool, echo *exec.Cmd) (time.Duration, error) {
	if err := pin(cpu); err != nil {
		return 0, err
	}
	var toChild, fromChild [2]int
	for _, p := range []*[2]int{&toChild, &fromChild} {
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return 0, err
		}
	}
	defer unix.Close(fromChild[0])
	in, out := os.NewFile(uintptr(toChild[0]), "child-in"), os.NewFile(uintptr(fromChild[1]), "child-out")
	echo.ExtraFiles = []*os.File{in, out}
	err := echo.Start()
	in.Close()
	out.Close()
	if err != nil {
		unix.Close(toChild[1])
		return 0, err
	}
	defer echo.Wait()
	defer unix.Close(toChild[1])
	// Our read's writer is another process, so a raw wait holds up a
	// stop-the-world for at most a round trip; the collector is off all
	// the same (the loop allocates nothing).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var msg [8]byte
	p := uintptr(unsafe.Pointer(&msg[0]))
	// The child's start (exec, its runtime's start) is no round trip: the
	// clock starts once it has answered warmUp of them.
	for range warmUp {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(toChild[1]), p, 8)
		unix.RawSyscall(unix.SYS_READ, uintptr(fromChild[0]), p, 8)
	}
	t0 := time.Now()
	for i := uint32(1); i <= n; i++ {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(toChild[1]), p, 8)
		if viaRuntime {
			unix.Syscall(unix.SYS_READ, uintptr(fromChild[0]), p, 8)
		} else {
			unix.RawSyscall(unix.SYS_READ, uintptr(fromChild[0]), p, 8)
		}
	}
	return time.Since(t0), nil
}
