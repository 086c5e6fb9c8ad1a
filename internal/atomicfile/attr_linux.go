package atomicfile

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The inode flags of chattr(1) that forbid replacing a file (linux/fs.h).
const (
	fsImmutable = 0x00000010 // FS_IMMUTABLE_FL, chattr +i
	fsAppend    = 0x00000020 // FS_APPEND_FL, chattr +a
)

// replaceable refuses a target that a rename cannot replace although its
// directory takes new files: the target (when it exists) or the directory
// is immutable or append-only. Without this the refusal came from the
// final rename, after the work and the history save. A file system
// without inode flags passes.
func replaceable(path string, exists bool) error {
	if exists {
		if fl, ok := inodeFlags(path); ok && fl&(fsImmutable|fsAppend) != 0 {
			return fmt.Errorf("cannot replace %s: it is %s (lsattr shows it; chattr -%s allows it)", path, flagWord(fl), flagLetter(fl))
		}
	}
	dir := filepath.Dir(path)
	if fl, ok := inodeFlags(dir); ok && fl&(fsImmutable|fsAppend) != 0 {
		return fmt.Errorf("cannot write %s: its directory %s is %s", path, dir, flagWord(fl))
	}
	return nil
}

// inodeFlags reads chattr's flags of path; ok is false where the file
// system has none (tmpfs before 6.0, proc) or it cannot be opened.
func inodeFlags(path string) (uint32, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	fl, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	return fl, err == nil
}

func flagWord(fl uint32) string {
	if fl&fsImmutable != 0 {
		return "immutable"
	}
	return "append-only"
}

func flagLetter(fl uint32) string {
	if fl&fsImmutable != 0 {
		return "i"
	}
	return "a"
}
