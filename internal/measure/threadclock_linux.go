package measure

import "golang.org/x/sys/unix"

// threadCPUClock is the clock id of thread tid's CPU clock, as the kernel
// builds it (include/linux/posix-timers_types.h, and glibc's
// pthread_getcpuclockid): MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) =
// (~tid << 3) | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2).
func threadCPUClock(tid int) int32 { return (^int32(tid))<<3 | 6 }

// ThreadCPUNs is the time thread tid of this process has spent on a CPU so
// far, in ns: its CPUCLOCK_SCHED clock, the sum_exec_runtime that
// schedstat's first field shows too, readable where schedstat is not
// (kernels without CONFIG_SCHED_INFO, some containers). The kernel refuses
// (EINVAL) a thread of another process.
func ThreadCPUNs(tid int) (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(threadCPUClock(tid), &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
