// Command rawloop is the plainest Go ping-pong there is: the reference
// scripts/harness-compare.sh holds ctxlab's thread and process arms to.
//
//	go run ./scripts/rawloop -mech futex -n 200000
//
// Two locked threads, the calling goroutine's and one more, both pinned
// to CPU 0, hand a message back and forth n times in raw system calls (the
// Go runtime never sees them block) and it prints ns per round trip. With
// -runtime their waits go through the runtime's entersyscall/exitsyscall,
// as a Go program's blocking calls do (ctxlab's arms wait raw, in
// system-call sections, and do not pay that per op). With -proc (pipe only) the other side
// is a child process, rawloop again, started from the pinned thread so all
// its threads are on CPU 0, echoing raw as ctxlab's children do: the
// reference for the process arm between ctxlab and perf bench. It imports
// nothing that needs cgo, so its threads are the Go runtime's own
// (clone(2)), whatever CGO_ENABLED says, as a CGO_ENABLED=0 ctxlab's are.
//
// The same loops as benchmarks in a test binary
// (BenchmarkRaw{Futex,Eventfd,Pipe,ProcessPipe}RoundTripCPU0, since
// removed) read 5-8% (threads) and 6-10% (processes) slower than this on
// the VM the README was measured on, so the script uses this one.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
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

func main() {
	if os.Getenv(echoEnv) != "" {
		echo()
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: 0 when the loop ran, 2 for bad arguments, 1 when
// the machine could not run it.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rawloop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mech := fs.String("mech", "pipe", "futex, eventfd or pipe")
	n := fs.Int("n", 200000, "round trips, 1.."+strconv.Itoa(math.MaxInt32))
	viaRuntime := fs.Bool("runtime", false, "wait through the Go runtime (unix.Syscall), not raw")
	proc := fs.Bool("proc", false, "the other side is a child process (this program again), pinned whole to CPU 0; -mech pipe only")
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
	case *proc && *mech != "pipe":
		fmt.Fprintf(stderr, "rawloop: -proc with -mech %q: processes hand over through a pipe only\n", *mech)
		return 2
	}
	var d time.Duration
	var err error
	if *proc {
		d, err = processPingPong(uint32(*n), *viaRuntime)
	} else {
		d, err = pingPong(*mech, uint32(*n), *viaRuntime)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rawloop:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%.1f ns/op\n", float64(d.Nanoseconds())/float64(*n))
	return 0
}

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

// pin locks the calling goroutine to its thread and the thread to CPU 0.
func pin() error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU 0: %w", err)
	}
	return nil
}

// echoEnv makes rawloop the child of -proc (echo).
const echoEnv = "RAWLOOP_ECHO"

// echo answers every 8 bytes on fd 3 with the same on fd 4, in raw system
// calls, until EOF: the child of processPingPong.
func echo() {
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

// processPingPong runs n pipe round trips between the calling goroutine's
// thread, pinned to CPU 0, and a child process (this program again). The
// child is started from the pinned thread, so it inherits CPU 0 for all
// its threads: pinned whole, as ctxlab pins its children. Closing our end
// of its input ends it (EOF).
func processPingPong(n uint32, viaRuntime bool) (time.Duration, error) {
	if err := pin(); err != nil {
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
	exe, err := os.Executable()
	if err != nil {
		unix.Close(toChild[1])
		in.Close()
		out.Close()
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), echoEnv+"=1")
	cmd.ExtraFiles = []*os.File{in, out}
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	in.Close()
	out.Close()
	if err != nil {
		unix.Close(toChild[1])
		return 0, err
	}
	defer cmd.Wait()
	defer unix.Close(toChild[1])
	// Our read's writer is another process, so a raw wait holds up a
	// stop-the-world for at most a round trip; the collector is off all
	// the same (the loop allocates nothing).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var msg [8]byte
	p := uintptr(unsafe.Pointer(&msg[0]))
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
