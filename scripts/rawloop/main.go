// Command rawloop is the plainest Go thread ping-pong there is: the
// reference scripts/harness-compare.sh holds ctxlab's thread arms to.
//
//	go run ./scripts/rawloop -mech futex -n 200000
//
// Two locked threads, the calling goroutine's and one more, both pinned
// to CPU 0, hand a message back and forth n times in raw system calls (the
// Go runtime never sees them block) and it prints ns per round trip. With
// -runtime their waits go through the runtime's entersyscall/exitsyscall,
// as ctxlab's thread arms' waits do. It imports nothing that needs cgo, so
// its threads are the Go runtime's own (clone(2)), whatever CGO_ENABLED
// says, as a CGO_ENABLED=0 ctxlab's are.
//
// The same loops as benchmarks in a test binary
// (BenchmarkRaw{Futex,Eventfd,Pipe}RoundTripCPU0, since removed) read
// 5-8% slower than this on the VM the README was measured on, so the
// script uses this one.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	futexWait = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWake = 1 | 128
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: 0 when the loop ran, 2 for bad arguments, 1 when
// the machine could not run it.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rawloop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mech := fs.String("mech", "pipe", "futex, eventfd or pipe")
	n := fs.Int("n", 200000, "round trips, 1.."+strconv.Itoa(math.MaxInt32))
	viaRuntime := fs.Bool("runtime", false, "wait through the Go runtime (unix.Syscall), not raw")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "rawloop: unexpected argument %q (the mechanism is -mech)\n", fs.Arg(0))
		return 2
	case *n < 1 || *n > math.MaxInt32:
		fmt.Fprintf(stderr, "rawloop: -n %d: want 1..%d round trips\n", *n, math.MaxInt32)
		return 2
	case *mech != "futex" && *mech != "eventfd" && *mech != "pipe":
		fmt.Fprintf(stderr, "rawloop: -mech %q: want futex, eventfd or pipe\n", *mech)
		return 2
	}
	d, err := pingPong(*mech, uint32(*n), *viaRuntime)
	if err != nil {
		fmt.Fprintln(stderr, "rawloop:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%.1f ns/op\n", float64(d.Nanoseconds())/float64(*n))
	return 0
}

// pair is the two sides' shared state. Its send and recv are direct calls
// with the mechanism and the wait chosen by plain branches: function
// values in the loop (an earlier rawloop) read ~2% slower than a loop
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

// pingPong runs n round trips of mech between the calling goroutine's
// thread and one more, both locked and pinned to CPU 0, and returns the
// time they took. The calling goroutine stays locked: its thread ends
// with it.
func pingPong(mech string, n uint32, viaRuntime bool) (time.Duration, error) {
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
		return 0, fmt.Errorf("-mech %q: want futex, eventfd or pipe", mech)
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
	pin := func() error {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pin to CPU 0: %w", err)
		}
		return nil
	}
	if err := pin(); err != nil {
		return 0, err
	}
	pinned := make(chan error)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := pin()
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
