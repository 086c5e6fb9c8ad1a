package atomicfile

import (
	"bytes"
	"os"
	"strconv"
)

// umask reads the process umask from /proc/self/status (Linux ≥ 4.7)
// without changing it, as unix.Umask would for a moment for every thread;
// 022 when it cannot be read.
func umask() os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
				if m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022
}
