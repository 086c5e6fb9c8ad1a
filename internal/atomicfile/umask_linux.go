package atomicfile

import (
	"os"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// umask reads the process umask from /proc/<pid>/status (procstat) without
// changing it, as unix.Umask would for a moment for every thread; 022 when
// it cannot be read.
func umask() os.FileMode {
	if m, err := procstat.DefaultRoot.ReadUmask(os.Getpid()); err == nil {
		return m
	}
	return 0o022
}
