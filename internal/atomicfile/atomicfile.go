// Package atomicfile writes output files so that a reader sees the old file
// or the whole new one, never a half-written or empty one: the bytes go to
// a temporary file in the same directory, which is synced and renamed over
// the target only once everything was written. A full disk or a crash
// leaves the target as it was.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Probe checks, before any work starts, that path can be written: its
// directory exists and takes a new file, and path is not a directory. It
// creates and removes a temporary file beside path and leaves path alone.
func Probe(path string) error {
	path = resolve(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; want a file name", path)
	} else if err == nil && !st.Mode().IsRegular() {
		// A device or FIFO (-o /dev/stdout): written in place, never
		// replaced; it only has to open for writing.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil && !errors.Is(err, syscall.ENXIO) { // ENXIO: a FIFO nobody reads yet
			return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
		}
		if f != nil {
			f.Close()
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".probe-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Write calls fill with a writer and, if fill and every write succeed,
// puts the bytes at path in one rename. On any error path is untouched
// and the temporary file is removed. A new file gets mode 0666 less the
// umask, as os.Create would give it; an existing file keeps its mode. A
// symbolic link keeps pointing at the file it named, which is replaced; a
// device or FIFO (-o /dev/stdout) is written in place.
func Write(path string, fill func(io.Writer) error) (err error) {
	path = resolve(path)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory; want a file name", path)
	} else if err == nil && !st.Mode().IsRegular() {
		return writeInPlace(path, fill)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	mode := os.FileMode(0o666 &^ umask())
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, unwrapPath(err))
	}
	return nil
}

// resolve follows a symbolic link to the file it names, so the link stays
// and its target is what gets replaced.
func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

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
