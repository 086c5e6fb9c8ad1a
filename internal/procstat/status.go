package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// /proc/<pid>/status is parsed by prometheus/procfs (ReadTask, ReadRSS);
// ParseUmask reads the one line procfs skips.

// ParseUmask returns the Umask line of /proc/<pid>/status (Linux ≥ 4.7),
// an octal mode.
func ParseUmask(b []byte) (os.FileMode, error) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
			m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32)
			if err != nil || m > 0o777 {
				return 0, fmt.Errorf("%w: status Umask %q", ErrParse, v)
			}
			return os.FileMode(m), nil
		}
	}
	return 0, fmt.Errorf("status Umask: %w", ErrNoField)
}

// ReadUmask reads process pid's umask without changing it (unix.Umask
// would, for a moment, for every thread).
func (r Root) ReadUmask(pid int) (os.FileMode, error) {
	b, err := os.ReadFile(filepath.Join(string(r), strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, notExist(pid, err)
	}
	return ParseUmask(b)
}
