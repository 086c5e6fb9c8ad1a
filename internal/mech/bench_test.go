package mech

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BenchmarkPlainChanRoundTrip is the plain testing.B loop of a goroutine
// channel round trip. ctxlab's pingpong/goroutine/chan arm must agree with
// it (the harness's own overhead is small): compare
//
//	go test ./internal/mech -bench PlainChan -cpu 1,2
//	ctxlab run 'pingpong/goroutine/chan/*'
func BenchmarkPlainChanRoundTrip(b *testing.B) {
	ab, ba := make(chan uint64), make(chan uint64)
	go func() {
		for v := range ab {
			ba <- v
		}
		close(ba)
	}()
	for i := 0; i < b.N; i++ {
		ab <- uint64(i)
		<-ba
	}
	b.StopTimer()
	close(ab)
	<-ba
}

// BenchmarkEndpointChanRoundTrip is the same loop through mech's
// RoundTrips and Echo, as pingpong's goroutine arm runs it: a channel pair
// runs its own loops (looper), so this now matches the plain loop; through
// the Endpoint interface it read ~8% more.
func BenchmarkEndpointChanRoundTrip(b *testing.B) {
	p, _ := NewPair("chan")
	go Echo(p.B)
	b.ResetTimer()
	RoundTrips(p.A, b.N, nil)
	b.StopTimer()
	p.A.Send(Stop)
}

// BenchmarkThreadPipeRoundTripCPU0 is the pipe round trip between two
// locked threads pinned to CPU 0 through ctxlab's Endpoint and its
// runtime-aware blocking read, without ctxlab's runner: between
// BenchmarkRawPipeRoundTripCPU0 (raw system calls) and
// `ctxlab run pingpong/thread/pipe/unpinned --cpus 0`, it splits their
// gap into the Go runtime's system-call path and the runner.
func BenchmarkThreadPipeRoundTripCPU0(b *testing.B) { endpointRoundTripsCPU0(b, "pipe") }

// BenchmarkEndpointFutexRoundTripCPU0 is BenchmarkThreadPipeRoundTripCPU0
// for the futex pair (against BenchmarkRawFutexRoundTripCPU0).
func BenchmarkEndpointFutexRoundTripCPU0(b *testing.B) { endpointRoundTripsCPU0(b, "futex") }

// BenchmarkEndpointEventfdRoundTripCPU0 is BenchmarkThreadPipeRoundTripCPU0
// for the eventfd pair (against BenchmarkRawEventfdRoundTripCPU0).
func BenchmarkEndpointEventfdRoundTripCPU0(b *testing.B) { endpointRoundTripsCPU0(b, "eventfd") }

// endpointRoundTripsCPU0 runs b.N round trips of mechanism kind between
// two locked threads on CPU 0, as pingpong's thread arms do, minus the runner.
func endpointRoundTripsCPU0(b *testing.B, kind string) {
	p, err := NewPair(kind)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ta, err := StartThread([]int{0})
	if err != nil {
		b.Skip("cannot pin to CPU 0:", err)
	}
	defer ta.Stop()
	tb, err := StartThread([]int{0})
	if err != nil {
		b.Skip("cannot pin to CPU 0:", err)
	}
	defer tb.Stop()
	echoed, _ := tb.Go(func() { Echo(p.B) })
	ta.Do(func() {
		b.ResetTimer()
		if err := RoundTrips(p.A, b.N, nil); err != nil {
			b.Error(err) // no ns/op a script could take for a reference
		}
		b.StopTimer()
	})
	p.Stop()
	<-echoed
}

// rawPingPong runs b.N round trips between two locked threads on cpus,
// each side a plain loop of raw system calls (RawSyscall6: no entersyscall
// / exitsyscall, no Endpoint interface, no stop checks): the floor a Go
// program can reach, to hold ctxlab's futex and eventfd arms against.
// send and recv are side i's halves of one round trip.
//
// A thread blocked in a raw system call holds its P and cannot be
// preempted, so a stop-the-world would wait on it for ever: the garbage
// collector is off while the loop runs (it allocates nothing), and the
// timer calls, which stop the world, run while B is outside its loop.
func rawPingPong(b *testing.B, cpus []int, send, recv [2]func(i uint32)) {
	if runtime.GOMAXPROCS(0) < 3 {
		// Each blocked thread holds its P: B and the test need one more.
		b.Skip("raw blocking system calls hold their P: run with -cpu 4")
	}
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ta, err := StartThread(cpus)
	if err != nil {
		b.Skip("cannot pin:", err)
	}
	defer ta.Stop()
	tb, err := StartThread(cpus)
	if err != nil {
		b.Skip("cannot pin:", err)
	}
	defer tb.Stop()
	n := uint32(b.N)
	// B starts only after ResetTimer, and StopTimer waits until B is out
	// of its loop: both read memory statistics, which stops the world.
	gate := make(chan struct{})
	echoed, _ := tb.Go(func() {
		<-gate
		for i := uint32(1); i <= n; i++ {
			recv[1](i)
			send[1](i)
		}
	})
	ta.Do(func() {
		b.ResetTimer()
		close(gate)
		for i := uint32(1); i <= n; i++ {
			send[0](i)
			recv[0](i)
		}
		<-echoed
		b.StopTimer()
	})
}

// BenchmarkRawFutexRoundTripCPU0 is a futex ping-pong of two locked
// threads on CPU 0, in raw system calls: the reference for
// `ctxlab run pingpong/thread/futex/unpinned --cpus 0`.
func BenchmarkRawFutexRoundTripCPU0(b *testing.B) {
	var w [2]uint32 // w[0]: A's sequence to B, w[1]: B's to A
	wait := func(k int, i uint32) {
		for atomic.LoadUint32(&w[k]) != i {
			unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&w[k])), futexWaitOp|futexPrivate, uintptr(i-1), 0, 0, 0)
		}
	}
	wake := func(k int, i uint32) {
		atomic.StoreUint32(&w[k], i)
		unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&w[k])), futexWakeOp|futexPrivate, 1, 0, 0, 0)
	}
	rawPingPong(b, []int{0},
		[2]func(uint32){func(i uint32) { wake(0, i) }, func(i uint32) { wake(1, i) }},
		[2]func(uint32){func(i uint32) { wait(1, i) }, func(i uint32) { wait(0, i) }})
}

// BenchmarkRawEventfdRoundTripCPU0 is an eventfd ping-pong (one eventfd
// per direction) of two locked threads on CPU 0, in raw system calls: the
// reference for `ctxlab run pingpong/thread/eventfd/unpinned --cpus 0`.
func BenchmarkRawEventfdRoundTripCPU0(b *testing.B) {
	var fd [2]int
	for k := range fd {
		f, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Close(f)
		fd[k] = f
	}
	one := [8]byte{1}
	var buf [2][8]byte
	write := func(k int) {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(fd[k]), uintptr(unsafe.Pointer(&one[0])), 8)
	}
	read := func(k int) {
		unix.RawSyscall(unix.SYS_READ, uintptr(fd[k]), uintptr(unsafe.Pointer(&buf[k][0])), 8)
	}
	rawPingPong(b, []int{0},
		[2]func(uint32){func(uint32) { write(0) }, func(uint32) { write(1) }},
		[2]func(uint32){func(uint32) { read(1) }, func(uint32) { read(0) }})
}

// BenchmarkRawPipeRoundTripCPU0 is a pipe ping-pong (one pipe per
// direction, 8-byte messages) of two locked threads on CPU 0, in raw
// system calls: the floor a Go program reaches for what
// `taskset -c 0 perf bench sched pipe -T` measures in C. Its ratio to
// perf bench is the cost of being a Go process, which no harness removes;
// ctxlab's thread pipe arm is held to both.
func BenchmarkRawPipeRoundTripCPU0(b *testing.B) {
	var rd, wr [2]int // direction k: wr[k] → rd[k]
	for k := range rd {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		rd[k], wr[k] = p[0], p[1]
	}
	var buf [2][8]byte
	write := func(k int) {
		unix.RawSyscall(unix.SYS_WRITE, uintptr(wr[k]), uintptr(unsafe.Pointer(&buf[k][0])), 8)
	}
	read := func(k int) {
		unix.RawSyscall(unix.SYS_READ, uintptr(rd[k]), uintptr(unsafe.Pointer(&buf[k][0])), 8)
	}
	rawPingPong(b, []int{0},
		[2]func(uint32){func(uint32) { write(0) }, func(uint32) { write(1) }},
		[2]func(uint32){func(uint32) { read(1) }, func(uint32) { read(0) }})
}
