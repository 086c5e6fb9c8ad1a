package mech

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/ctxlab/ctxlab/internal/measure"
	"golang.org/x/sys/unix"
)

// rawEchoEnv makes the test binary a raw echo child (TestMain).
const rawEchoEnv = "CTXLAB_MECH_RAW_ECHO"

func TestMain(m *testing.M) {
	if os.Getenv(rawEchoEnv) != "" {
		os.Exit(rawEcho())
	}
	os.Exit(m.Run())
}

// rawEcho is the child of BenchmarkRawProcessPipeRoundTripCPU0: pinned
// whole to CPU 0, it answers every 8 bytes on fd 3 with the same on fd 4
// in raw system calls until EOF.
func rawEcho() int {
	runtime.LockOSThread()
	if err := measure.PinProcess([]int{0}); err != nil {
		return 2
	}
	var buf [8]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, 3, p, 8)
		if errno != 0 || n == 0 {
			return 0
		}
		unix.RawSyscall(unix.SYS_WRITE, 4, p, n)
	}
}

// BenchmarkRawProcessPipeRoundTripCPU0 is a pipe ping-pong between a
// locked thread and a child process (this test binary again, Go too),
// both on CPU 0, in raw system calls: the floor Go processes reach for
// what `taskset -c 0 perf bench sched pipe` measures in C, and the
// reference `ctxlab run pingpong/process/pipe/unpinned --cpus 0` is held
// to beside it.
func BenchmarkRawProcessPipeRoundTripCPU0(b *testing.B) {
	var toChild, fromChild [2]int
	for _, p := range []*[2]int{&toChild, &fromChild} {
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
	}
	in, out := os.NewFile(uintptr(toChild[0]), "in"), os.NewFile(uintptr(fromChild[1]), "out")
	defer unix.Close(fromChild[0])
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), rawEchoEnv+"=1", "GODEBUG=asyncpreemptoff=1")
	cmd.ExtraFiles = []*os.File{in, out}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	in.Close()
	out.Close()
	defer cmd.Wait()
	defer unix.Close(toChild[1]) // EOF ends the child
	t, err := StartThread([]int{0})
	if err != nil {
		b.Skip("cannot pin to CPU 0:", err)
	}
	defer t.Stop()
	// The parent's read is raw too: its writer is another process, so a
	// stop-the-world waits at most a round trip; the collector is off
	// while it runs all the same (the loop allocates nothing).
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var buf [8]byte
	p := uintptr(unsafe.Pointer(&buf[0]))
	w, r := uintptr(toChild[1]), uintptr(fromChild[0])
	round := func() bool {
		unix.RawSyscall(unix.SYS_WRITE, w, p, 8)
		n, _, errno := unix.RawSyscall(unix.SYS_READ, r, p, 8)
		return errno == 0 && n == 8
	}
	var ok bool
	t.Do(func() {
		for i := 0; i < 1000; i++ { // the child's start-up
			round()
		}
		b.ResetTimer()
		ok = true
		for i := 0; i < b.N && ok; i++ {
			ok = round()
		}
		b.StopTimer()
	})
	if !ok {
		b.Error("the echo child stopped answering")
	}
}
