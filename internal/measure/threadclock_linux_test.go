package measure

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// The clock id follows the kernel's encoding: pid/tid in the high bits,
// inverted, then the per-thread bit and CPUCLOCK_SCHED.
func TestThreadCPUClockEncoding(t *testing.T) {
	for _, tc := range []struct {
		tid  int
		want int32
	}{
		{0, -2}, // ~0 << 3 | 6: the calling thread
		{1, -10},
		{12345, ^int32(12345)<<3 | 6},
	} {
		if got := threadCPUClock(tc.tid); got != tc.want {
			t.Errorf("threadCPUClock(%d) = %d, want %d", tc.tid, got, tc.want)
		}
		// The kernel's own decoding: CPUCLOCK_PID = ~(clock >> 3),
		// CPUCLOCK_PERTHREAD = clock & 4, CPUCLOCK_WHICH = clock & 3.
		c := threadCPUClock(tc.tid)
		if pid := ^(c >> 3); int(pid) != tc.tid || c&4 == 0 || c&3 != 2 {
			t.Errorf("clock %d decodes to pid %d, per-thread %v, which %d", c, pid, c&4 != 0, c&3)
		}
	}
}

// A thread's CPU clock read by its tid is the thread's own
// CLOCK_THREAD_CPUTIME_ID: between two readings of that clock.
func TestThreadCPUNsIsTheThreadClock(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := Gettid()
	own := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano()
	}
	for i := 0; i < 5; i++ {
		before := own()
		got, err := ThreadCPUNs(tid)
		after := own()
		if err != nil {
			t.Fatal(err)
		}
		if got < before || got > after {
			t.Fatalf("ThreadCPUNs(%d) = %d, not between the thread's own clock readings %d and %d", tid, got, before, after)
		}
	}
	// Another process's thread: the kernel refuses it.
	if os.Getpid() != 1 {
		if _, err := ThreadCPUNs(1); err == nil {
			t.Error("read the CPU clock of PID 1, a thread of another process")
		}
	}
}
