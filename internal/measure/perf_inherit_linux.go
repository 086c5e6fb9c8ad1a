package measure

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// OpenInherited opens ev on process pid with inherit set, so it also counts
// every thread and child process pid creates after the call (diagnose opens
// it while the command is stopped at exec, before it has run anything). It
// counts kernel and user mode where perf_event_paranoid allows; otherwise it
// retries user-only and says so with userOnly, because switch and migration
// events happen in the kernel and would read 0 user-only.
func OpenInherited(ev EventSpec, pid int) (fd int, userOnly bool, err error) {
	attr := unix.PerfEventAttr{
		Type:        ev.Type,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      ev.Config,
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING,
		Bits:        unix.PerfBitInherit | unix.PerfBitExcludeHv,
	}
	fd, err = unix.PerfEventOpen(&attr, pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		return fd, false, nil
	}
	if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
		return -1, false, err
	}
	attr.Bits |= unix.PerfBitExcludeKernel
	fd, err = unix.PerfEventOpen(&attr, pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, false, err
	}
	return fd, true, nil
}

// ReadCounter reads a counter opened with OpenEvent or OpenInherited: its
// value and the time it was enabled and running (they differ when the PMU
// multiplexed it; value × enabled/running estimates the full count).
func ReadCounter(fd int) (value, enabledNs, runningNs uint64, err error) {
	var buf [24]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return 0, 0, 0, err
	}
	var g GroupRead
	if err := ParseSingleRead(buf[:n], &g); err != nil {
		return 0, 0, 0, err
	}
	return g.Values[0], g.Enabled, g.Running, nil
}
