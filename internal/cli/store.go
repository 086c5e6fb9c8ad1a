package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/atomicfile"
	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// checkStore opens the store once the request is valid and before
// anything is measured, so a foreign file at the path is reported at once
// instead of after minutes of measuring.
func checkStore(ctx context.Context, o *RunOptions) error {
	if o.NoStore {
		return nil
	}
	s, err := openStore(ctx, o.DB, true)
	if err != nil {
		return fmt.Errorf("%w (or pass --no-store)", err)
	}
	return s.Close()
}

// precheckStore is checkStore for the moments before Python is asked
// (exp.Resolve): an existing file at the path is opened and must be a
// ctxlab history, as checkStore does, but a history that does not exist
// yet is not made, so a run refused by the interpreter leaves nothing
// behind. Its directory must be one ctxlab could make it in: the nearest
// existing ancestor is a directory it can write.
func precheckStore(ctx context.Context, o *RunOptions) error {
	if o.NoStore {
		return nil
	}
	path := o.DB
	if path == "" {
		p, err := store.DefaultPath()
		if err != nil {
			return &UsageError{err}
		}
		path = p
	}
	if _, err := os.Lstat(path); err == nil {
		return checkStore(ctx, o)
	}
	dir := filepath.Dir(path)
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return usagef("history database %s: cannot be used: %s is not a directory (or pass --no-store)", path, dir)
			}
			if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
				return usagef("history database %s: cannot be used: %s is not writable: %v (or pass --no-store)", path, dir, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return usagef("history database %s: cannot be used: %v (or pass --no-store)", path, pathCause(err))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// saveRun stores every finished run unless --no-store. An interrupted run
// is not stored: it would be a partial run in the history. A run that
// cannot be stored is not lost: its JSON goes to a file (named in the
// error) or, failing that, to stdout, and ctxlab exits 1.
func saveRun(ctx context.Context, o *RunOptions, run *result.Run) error {
	if o.NoStore {
		return nil
	}
	if run.Interrupted {
		fmt.Fprintln(o.Stderr, "ctxlab: the run was interrupted and is not stored in the history")
		return nil
	}
	if o.beforeSave != nil {
		if err := o.beforeSave(); err != nil {
			return err
		}
	}
	s, err := openStore(ctx, o.DB, true)
	if err == nil {
		defer s.Close()
		err = s.Save(ctx, run, store.SourceRun)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("run %s was not stored: %w", run.ID, errInterrupted)
		}
		return &saveError{fmt.Errorf("run %s was not stored: %v; %s", run.ID, err, keepRunJSON(o, run))}
	}
	for _, l := range textcol.Wrap(fmt.Sprintf("ctxlab: stored as run %s in %s", run.ID, s.Path()), termWidth(o.Stderr)) {
		fmt.Fprintln(o.Stderr, l)
	}
	return nil
}

// saveError is a finished run that could not be stored: exit 1, even when
// the cause was a bad --db (which is exit 2 only before anything ran).
type saveError struct{ err error }

func (e *saveError) Error() string { return e.err.Error() }

// keepRunJSON puts the run's JSON where the user can import it later and
// says where: the -o file when it holds JSON, else a file in the temporary
// directory, else stdout.
func keepRunJSON(o *RunOptions, run *result.Run) string {
	if o.Output != "" && o.Output != "-" && o.Format == "json" {
		return fmt.Sprintf("its JSON is in %s (ctxlab import %s stores it)", o.Output, o.Output)
	}
	p := filepath.Join(os.TempDir(), "ctxlab-run-"+run.ID+".json")
	err := atomicfile.Write(p, func(w io.Writer) error { return report.Write(w, run, "json") })
	if err == nil {
		return fmt.Sprintf("its JSON is in %s (ctxlab import %s stores it)", p, p)
	}
	report.Write(o.Stdout, run, "json")
	return fmt.Sprintf("writing it to %s failed too (%v), so its JSON is on stdout", p, err)
}

// openStore opens the store at path (the default when empty). With create
// false a missing file is an error that says no run was stored yet. A path
// that cannot hold a store is bad input (exit 2); waiting for another
// writer's lock ends when ctx does (exit 130).
func openStore(ctx context.Context, path string, create bool) (*store.Store, error) {
	if path == "" {
		p, err := store.DefaultPath()
		if err != nil {
			return nil, &UsageError{err}
		}
		path = p
		tightenDefaultDir(path)
	}
	if !create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, usagef("no runs stored yet: %s does not exist (ctxlab run stores every run; --db picks another file)", path)
		}
	}
	s, err := store.OpenContext(ctx, path)
	if errors.Is(err, store.ErrUnusable) || errors.Is(err, store.ErrNotStore) {
		return nil, &UsageError{err}
	}
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%v: %w", err, errInterrupted)
	}
	return s, err
}

// tightenDefaultDir makes ctxlab's own default data directory 0700 and its
// history 0600 when an older ctxlab left them readable by others. Only the
// default location: a --db path is the user's to arrange.
func tightenDefaultDir(path string) {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o077 != 0 {
		os.Chmod(dir, st.Mode().Perm()&0o700)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			os.Chmod(p, st.Mode().Perm()&0o600)
		}
	}
}

// loadRun reads a run from a JSON file when ref names one, else from the
// store (an id, a unique prefix, last or last~N). Anything at ref but a
// directory is taken as a file, so a FIFO named x is refused as one, never
// looked up as an id.
func loadRun(ctx context.Context, db, ref string) (*result.Run, error) {
	return loadRunKind(ctx, db, ref, result.AnyRun, nil)
}

// loadRunKind is loadRun where "last" and "last~N" count the runs of
// kind k only (compare, budget and report need the experiments' runs);
// when that passed over newer runs of other kinds it says on stderr which
// run it took.
func loadRunKind(ctx context.Context, db, ref string, k result.Kind, stderr io.Writer) (*result.Run, error) {
	if ref != "" && (strings.HasSuffix(ref, ".json") || strings.ContainsRune(ref, os.PathSeparator)) {
		return readRunFile(ctx, ref)
	}
	if st, err := os.Stat(ref); ref != "" && err == nil && !st.IsDir() {
		return readRunFile(ctx, ref)
	}
	s, err := openStore(ctx, db, false)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	run, err := s.GetKind(ctx, ref, k)
	if err == nil && stderr != nil && k != result.AnyRun && (ref == "" || ref == "last" || strings.HasPrefix(ref, "last~")) {
		if any, aerr := s.Resolve(ctx, ref); aerr == nil && any != run.ID {
			fmt.Fprintf(stderr, "ctxlab: %s is run %s, counting each %s only (newer diagnose and selfcheck runs are left out)\n", ref, run.ID, k)
		}
	}
	if errors.Is(err, store.ErrNotFound) || (err != nil && strings.Contains(err.Error(), "prefix matches")) || (err != nil && strings.Contains(err.Error(), "want an id")) {
		return nil, &UsageError{err}
	}
	return run, err
}

// readRunFile reads and validates the run file at path, the one reader
// of run files (show, export, compare, report, budget --run, import), so
// a bad file is refused in the same words everywhere (exit 2). Only a
// regular file is opened: opening a FIFO waits for a writer, for ever, and
// a device may do anything. The file is opened non-blocking and checked
// again, in case it was swapped after the first look, and the read gives
// way to SIGINT and SIGTERM.
func readRunFile(ctx context.Context, path string) (*result.Run, error) {
	name := termsafe.String(path) // a path may come from a listing of someone else's files
	st, err := os.Stat(path)
	if err != nil {
		return nil, usagef("run file %s: %v", name, pathCause(err))
	}
	if kind := notRegular(st.Mode()); kind != "" {
		return nil, usagef("%s is %s; want a run file (JSON)", name, kind)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, usagef("run file %s: %v", name, pathCause(err))
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, usagef("run file %s: %v", name, pathCause(err))
	}
	if kind := notRegular(st.Mode()); kind != "" {
		return nil, usagef("%s is %s; want a run file (JSON)", name, kind)
	}
	run, err := readRun(ctx, f)
	if errors.Is(err, errInterrupted) {
		return nil, fmt.Errorf("reading run file %s: %w", name, err)
	}
	if err != nil {
		return nil, usagef("run file %s: %w", name, err)
	}
	if err := run.Validate(); err != nil {
		return nil, usagef("run file %s: %w", name, err)
	}
	return run, nil
}

// readRun decodes one run from r, or gives up with errInterrupted when ctx
// ends first (SIGINT, SIGTERM): a read from a stalled file system must not
// hold ctxlab past a signal. A read given up on ends with the process.
func readRun(ctx context.Context, r io.Reader) (*result.Run, error) {
	type read struct {
		run *result.Run
		err error
	}
	done := make(chan read, 1)
	go func() {
		run, err := store.ReadRun(r) // older ctxlab's names mapped to today's
		done <- read{run, err}
	}()
	select {
	case <-ctx.Done():
		return nil, errInterrupted
	case got := <-done:
		return got.run, got.err
	}
}

// notRegular names what a file that cannot be a run file is ("a FIFO"),
// or returns "" for a regular file.
func notRegular(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// pathCause is the system's reason without the path it names, which the
// message already shows escaped.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func oneOf(flag, v string, allowed []string) error {
	for _, a := range allowed {
		if a == v {
			return nil
		}
	}
	return usagef("%s %q: must be one of %s", flag, v, strings.Join(allowed, ", "))
}

// addDBFlag defines --db, the history database, the one way every command
// that reads or writes the history names it; empty means store.DefaultPath.
func addDBFlag(f *pflag.FlagSet, path *string) {
	f.StringVar(path, "db", "", "history database (default $XDG_DATA_HOME/ctxlab/history.db)")
}
