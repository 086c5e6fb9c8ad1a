//go:build race

package mech

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A race build has no system-call sections (section_linux.go): the race
// detector's atomics need a P, which code in a section has given up. Its
// thread and process arms wait through the runtime, one system call at a time.
const sections = false

// Yields is the section's Yields through the runtime, one system call at
// a time.
func Yields(n int, stop *uint32) int {
	i := 0
	for i < n {
		unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		i++
		if i&63 == 0 && atomic.LoadUint32(stop) != 0 {
			break
		}
	}
	return i
}
