package serve

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// migrationCounter is one perf cpu-migrations software counter per CPU,
// counting every task (pid -1). The kernel allows that only with
// perf_event_paranoid ≤ 0 or CAP_PERFMON; /proc/stat has no migration
// count and /proc/schedstat's per-CPU lines have none either.
type migrationCounter struct{ fds []int }

func openMigrationCounter(cpus []int) (*migrationCounter, error) {
	m := &migrationCounter{}
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_MIGRATIONS,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("system-wide perf cpu-migrations on CPU %d: %s", cpu, measure.UnsupportedReason(err))
		}
		m.fds = append(m.fds, fd)
	}
	return m, nil
}

func (m *migrationCounter) read() (uint64, error) {
	var total uint64
	var buf [8]byte
	for _, fd := range m.fds {
		if _, err := unix.Read(fd, buf[:]); err != nil {
			return 0, err
		}
		total += binary.NativeEndian.Uint64(buf[:])
	}
	return total, nil
}

func (m *migrationCounter) close() {
	for _, fd := range m.fds {
		unix.Close(fd)
	}
	m.fds = nil
}
