package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Syscall is what a thread is doing, from /proc/<pid>/task/<tid>/syscall:
// the number of the system call it is blocked in, -1 when it is blocked
// outside one, or Running.
type Syscall struct {
	Nr      int64
	Running bool
}

// ParseSyscall parses /proc/…/syscall: "running", or the system call
// number (-1 for none) followed by its arguments, stack and program counter.
func ParseSyscall(b []byte) (Syscall, error) {
	f := bytes.Fields(b)
	if len(f) == 0 {
		return Syscall{}, fmt.Errorf("%w: syscall is empty", ErrParse)
	}
	if string(f[0]) == "running" {
		return Syscall{Nr: -1, Running: true}, nil
	}
	nr, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || nr < -1 {
		return Syscall{}, fmt.Errorf("%w: syscall number %q", ErrParse, f[0])
	}
	return Syscall{Nr: nr}, nil
}

// ReadSyscall reads and parses /proc/<pid>/task/<tid>/syscall.
func (r Root) ReadSyscall(pid, tid int) (Syscall, error) {
	b, err := os.ReadFile(filepath.Join(string(r), strconv.Itoa(pid), "task", strconv.Itoa(tid), "syscall"))
	if err != nil {
		return Syscall{}, notExist(pid, err)
	}
	return ParseSyscall(b)
}
