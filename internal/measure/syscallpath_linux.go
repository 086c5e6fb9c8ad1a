package measure

import (
	"sort"

	"golang.org/x/sys/unix"
)

// SyscallPath measures one system call (getppid) made raw and made
// through Go's runtime-aware path (entersyscall/exitsyscall, which lets
// the runtime hand the P on while the thread is in the kernel). It returns
// the raw call's cost and what the runtime's path adds, in ns, each the
// median over interleaved batches so drift and a preempted batch cancel.
//
// A Go program pays it on every blocking call through os or syscall: a
// raw wait would hold its P, and a stop-the-world would then wait for a
// thread whose partner it had stopped. A C program pays no such cost, so
// the figure is what a Go worker adds to a handoff, named in the output.
// ring's futex and pipe thread rings and cachecost's futex pair pay it on
// every wait; pingpong's (and interference's) thread and process arms wait
// in system-call sections (mech), so they pay it once per section, never
// inside a timed op. It is a short
// call's: a wait that blocks can pay more (the P may be handed on). Each
// batch is 5 000 calls (ms on a VM whose calls cost ~1 µs, as an arm's
// repetitions are long; 200-call batches read less there).
func SyscallPath() (rawNs, extraNs float64) {
	const batch, rounds = 5000, 11
	raws := make([]float64, 0, rounds)
	extras := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		var raw, rt float64
		if r%2 == 0 { // alternate which goes first
			raw, rt = rawBatch(batch), runtimeBatch(batch)
		} else {
			rt, raw = runtimeBatch(batch), rawBatch(batch)
		}
		raws = append(raws, raw)
		extras = append(extras, rt-raw)
	}
	sort.Float64s(raws)
	sort.Float64s(extras)
	return raws[rounds/2], max(extras[rounds/2], 0)
}

// rawBatch and runtimeBatch time n getppid calls each, in ns per call.
// They are two loops with direct calls, not one taking the call as a
// function value: an indirect call after each system call read ~3% of a
// pipe round trip on the VM this was measured on.
func rawBatch(n int) float64 {
	t0 := Now()
	for i := 0; i < n; i++ {
		unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	}
	return float64(Now()-t0) / float64(n)
}

func runtimeBatch(n int) float64 {
	t0 := Now()
	for i := 0; i < n; i++ {
		unix.Syscall(unix.SYS_GETPPID, 0, 0, 0)
	}
	return float64(Now()-t0) / float64(n)
}
