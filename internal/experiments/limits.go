package experiments

import (
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Limits on how many workers an arm may start (SPEC §5.2, §3): ring,
// yield and spawn check against them, here and nowhere else.
const (
	// MaxRingGoroutines is the most goroutines a ring may have.
	MaxRingGoroutines = 100000
	ringMinWorkers    = 2
	// Per-worker memory estimates the memory check uses (generous: a Go
	// child process re-executing ctxlab is a few MiB resident).
	goroutineBytesEst = 16 << 10
	threadBytesEst    = 128 << 10
	processBytesEst   = 16 << 20
	threadsPerChild   = 8  // a Go child runs a handful of threads
	threadMargin      = 64 // threads the runtime and the rest of ctxlab may need
	fdMargin          = 64
)

// workerLimit checks n workers of substrate sub (mechanism m) against the
// machine's limits for experiment what (named in the error).
func workerLimit(what, sub, m string, n int, h *sysinfo.Host) error {
	memAvail := int64(0)
	if h != nil {
		memAvail = h.MemAvailableB
	}
	memCheck := func(per int64, kind string) error {
		if memAvail > 0 && int64(n)*per > memAvail/2 {
			return fmt.Errorf("%s: --workers %d: %d %s need about %s, more than half of available memory (MemAvailable %s); at most %d here",
				what, n, n, kind, result.FormatBytes(float64(int64(n)*per)), result.FormatBytes(float64(memAvail)), memAvail/2/per)
		}
		return nil
	}
	tasksMax := int64(-1) // the fewer of threads-max and RLIMIT_NPROC
	tasksWhat := ""
	if h != nil && h.ThreadsMax > 0 {
		tasksMax, tasksWhat = h.ThreadsMax, fmt.Sprintf("/proc/sys/kernel/threads-max (%d)", h.ThreadsMax)
	}
	if h != nil && h.NprocLimit > 0 && (tasksMax < 0 || h.NprocLimit < tasksMax) {
		tasksMax, tasksWhat = h.NprocLimit, fmt.Sprintf("RLIMIT_NPROC (%d)", h.NprocLimit)
	}
	var nofile unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &nofile)
	fdCheck := func(fds int64) error {
		if nofile.Cur > 0 && nofile.Cur != unix.RLIM_INFINITY && fds+fdMargin > int64(nofile.Cur) {
			return fmt.Errorf("%s: --workers %d: %d workers over %s need %d file descriptors, over RLIMIT_NOFILE (%d); at most %d workers here",
				what, n, n, m, fds, nofile.Cur, (int64(nofile.Cur)-fdMargin-2)/2)
		}
		return nil
	}
	switch sub {
	case "goroutine":
		if n > MaxRingGoroutines {
			return fmt.Errorf("%s: --workers %d: goroutines are limited to %d", what, n, MaxRingGoroutines)
		}
		return memCheck(goroutineBytesEst, "goroutines")
	case "thread":
		// Thread arms run at GOMAXPROCS n+1: besides the n locked threads
		// the runtime may start up to about one more per P (GC workers,
		// spinning Ms), so count 2n.
		if tasksMax > 0 && 2*int64(n)+threadMargin > tasksMax {
			return fmt.Errorf("%s: --workers %d: %d threads (and up to as many runtime threads at GOMAXPROCS %d) exceed %s less %d; at most %d threads here",
				what, n, n, n+1, tasksWhat, threadMargin, (tasksMax-threadMargin)/2)
		}
		if m == "pipe" {
			if err := fdCheck(2*int64(n) + 2); err != nil {
				return err
			}
		}
		return memCheck(threadBytesEst, "threads")
	case "process":
		need := int64(n-1) * threadsPerChild
		if tasksMax > 0 && need+threadMargin > tasksMax {
			return fmt.Errorf("%s: --workers %d: %d processes (about %d threads) exceed %s; at most %d processes here",
				what, n, n, need, tasksWhat, (tasksMax-threadMargin)/threadsPerChild)
		}
		if err := fdCheck(2*int64(n) + 2); err != nil {
			return err
		}
		return memCheck(processBytesEst, "processes")
	}
	return fmt.Errorf("%s: unknown substrate %q", what, sub)
}

// raiseMaxThreads lifts Go's own thread limit (debug.SetMaxThreads, 10 000
// by default; past it the runtime aborts) for a run of n locked threads at
// GOMAXPROCS about n, which may need up to 2n threads; the returned func
// restores it (nil if nothing changed).
func raiseMaxThreads(n int) func() {
	need := 2*n + threadMargin + 2000
	if need <= 9000 {
		return nil
	}
	prev := debug.SetMaxThreads(need)
	if prev >= need {
		debug.SetMaxThreads(prev)
		return nil
	}
	return func() { debug.SetMaxThreads(prev) }
}
