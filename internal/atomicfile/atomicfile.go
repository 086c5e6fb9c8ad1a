// Package atomicfile writes output files so that a reader sees the old file
// or the whole new one, never a half-written or empty one: the bytes go to
// a temporary file in the same directory, which is synced and renamed over
// the target only once everything was written. A full disk or a crash
// leaves the target as it was.
//
// Create makes that temporary file before any work starts, so a target
// that cannot be written or replaced is known while the request is still
// being checked, not after minutes of measuring.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// File is an output prepared by Create: its temporary file exists beside
// the target until Commit renames it over the target or Abort removes it.
type File struct {
	path    string   // the target, symbolic links followed
	tmp     *os.File // nil for a target written in place, and once done
	inPlace bool     // a device or FIFO: written in place, never replaced
}

// Create checks that path can be written and replaced, and creates the
// temporary file that Commit will rename over it: its directory exists and
// takes a new file, path is not a directory, and neither path nor its
// directory is immutable or append-only. A device or FIFO (-o
// /dev/stdout) only has to open for writing. The target is left alone.
func Create(path string) (*File, error) {
	path = resolve(path)
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("%s is a directory; want a file name", path)
	case err == nil && !st.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil && !errors.Is(err, syscall.ENXIO) { // ENXIO: a FIFO nobody reads yet
			return nil, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
		}
		if f != nil {
			f.Close()
		}
		return &File{path: path, inPlace: true}, nil
	}
	if err := replaceable(path, err == nil); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	mode := os.FileMode(0o666 &^ umask())
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &File{path: path, tmp: tmp}, nil
}

// Path is the target, with symbolic links followed.
func (f *File) Path() string { return f.path }

// Commit calls fill with a writer and, if fill and every write succeed,
// puts the bytes at the target in one rename. On any error the target is
// untouched and the temporary file is removed. A new file gets mode 0666
// less the umask, as os.Create would give it; an existing file keeps its
// mode. Commit may be called once.
func (f *File) Commit(fill func(io.Writer) error) (err error) {
	if f.inPlace {
		return writeInPlace(f.path, fill)
	}
	if f.tmp == nil {
		return fmt.Errorf("write %s: already written or aborted", f.path)
	}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	if err := fill(f.tmp); err != nil {
		return err
	}
	if err := f.tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	if err := f.tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write %s: %w", f.path, unwrapPath(err))
	}
	f.tmp = nil
	return nil
}

// TempPath is the temporary file's path, "" for a target written in
// place and once committed or aborted: a caller may have it removed
// should the process die before either.
func (f *File) TempPath() string {
	if f == nil || f.tmp == nil {
		return ""
	}
	return f.tmp.Name()
}

// Abort removes the temporary file and leaves the target as it was. It is
// safe to call more than once, and after Commit.
func (f *File) Abort() {
	if f == nil || f.tmp == nil {
		return
	}
	f.tmp.Close()
	os.Remove(f.tmp.Name())
	f.tmp = nil
}

// Probe checks, before any work starts, that path can be written and
// replaced (see Create). It leaves nothing behind.
func Probe(path string) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	f.Abort()
	return nil
}

// Write is Create and Commit in one: a symbolic link keeps pointing at the
// file it named, which is replaced; a device or FIFO is written in place.
func Write(path string, fill func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	return f.Commit(fill)
}

// Resolve is path absolute and clean with every symbolic link followed,
// a link to a file not made yet (a dangling link) included: the file the
// link names is what Write replaces or creates, and the link stays. Where
// the directory does not exist the path is returned as far as it could
// be resolved.
func Resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	for range 40 { // the kernel's own limit on links in a path
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		st, err := os.Lstat(abs)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			break // not made yet: resolve its directory
		}
		target, err := os.Readlink(abs)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(abs), target)
		}
		abs = target
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(d, filepath.Base(abs))
	}
	return abs
}

func resolve(path string) string { return Resolve(path) }

// writeInPlace writes to a target that is not a regular file (a device, a
// FIFO): there is nothing to replace atomically, and replacing /dev/null
// with a file would be harm.
func writeInPlace(path string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// unwrapPath drops the temporary name from a *PathError: the user named
// the target, and the temporary file is gone.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
