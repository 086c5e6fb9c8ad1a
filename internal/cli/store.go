package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/atomicfile"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
)

// storeOptions are run's --db and --no-store.
type storeOptions struct {
	DB      string
	NoStore bool
}

func init() {
	runFlagHooks = append(runFlagHooks, addStoreFlags)
	runHooks = append(runHooks, saveRun)
}

// addStoreFlags adds --db and --no-store to run, and checks the store
// before anything is measured, so a foreign file at the path is reported
// at once instead of after minutes of measuring.
func addStoreFlags(c *cobra.Command, o *RunOptions) {
	so := &storeOptions{}
	if o.Extra == nil {
		o.Extra = map[string]any{}
	}
	o.Extra["store"] = so
	c.Flags().StringVar(&so.DB, "db", "", "history database (default $XDG_DATA_HOME/ctxlab/history.db)")
	c.Flags().BoolVar(&so.NoStore, "no-store", false, "do not save this run in the history database")
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if so.NoStore || testingWithoutStore(so) {
			return nil
		}
		s, err := openStore(so.DB, true)
		if err != nil {
			return fmt.Errorf("%w (or pass --no-store)", err)
		}
		return s.Close()
	}
}

// saveRun stores every finished run unless --no-store. An interrupted run
// is not stored: it would be a partial run in the history.
func saveRun(ctx context.Context, o *RunOptions, run *result.Run) error {
	so, _ := o.Extra["store"].(*storeOptions)
	if so == nil || so.NoStore || testingWithoutStore(so) {
		return nil
	}
	if run.Interrupted {
		fmt.Fprintln(o.Stderr, "ctxlab: the run was interrupted and is not stored in the history")
		return nil
	}
	s, err := openStore(so.DB, true)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Save(ctx, run, store.SourceRun); err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "ctxlab: stored as run %s in %s\n", run.ID, s.Path())
	return nil
}

// testingWithoutStore keeps go test runs of other packages' CLI tests out
// of the real home: under go test, run stores only where a test said to
// (--db, or XDG_DATA_HOME pointed at a temporary directory).
func testingWithoutStore(so *storeOptions) bool {
	return testing.Testing() && so.DB == "" && os.Getenv("XDG_DATA_HOME") == ""
}

// openStore opens the store at path (the default when empty). With create
// false a missing file is an error that says no run was stored yet.
func openStore(path string, create bool) (*store.Store, error) {
	if path == "" {
		p, err := store.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	if !create {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, usagef("no runs stored yet: %s does not exist (ctxlab run stores every run; --db picks another file)", path)
		}
	}
	return store.Open(path)
}

// loadRun reads a run from a JSON file when ref names one, else from the
// store (an id, a unique prefix, last or last~N).
func loadRun(ctx context.Context, db, ref string) (*result.Run, error) {
	if ref != "" && (strings.HasSuffix(ref, ".json") || strings.ContainsRune(ref, os.PathSeparator)) {
		return readRunFile(ref)
	}
	if st, err := os.Stat(ref); ref != "" && err == nil && !st.IsDir() {
		return readRunFile(ref)
	}
	s, err := openStore(db, false)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	run, err := s.Get(ctx, ref)
	if errors.Is(err, store.ErrNotFound) || (err != nil && strings.Contains(err.Error(), "prefix matches")) || (err != nil && strings.Contains(err.Error(), "want an id")) {
		return nil, &UsageError{err}
	}
	return run, err
}

func readRunFile(path string) (*result.Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("run file %s: %v", path, err)
	}
	defer f.Close()
	run, err := result.Read(f)
	if err != nil {
		return nil, usagef("run file %s: %v", path, err)
	}
	return run, nil
}

// writeOutput hands fill stdout, or, for -o FILE, a writer whose bytes
// replace FILE only when fill and every write succeeded (atomicfile).
func writeOutput(path string, stdout io.Writer, fill func(io.Writer) error) error {
	if path == "" || path == "-" {
		return fill(stdout)
	}
	return atomicfile.Write(path, fill)
}

// checkOutput probes -o FILE for writing before any work starts: a bad
// path is a usage error (exit 2), not a failure after minutes of work.
func checkOutput(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if err := atomicfile.Probe(path); err != nil {
		return usagef("%s %s: %v", flag, path, err)
	}
	return nil
}

func oneOf(flag, v string, allowed []string) error {
	for _, a := range allowed {
		if a == v {
			return nil
		}
	}
	return usagef("%s %q: must be one of %s", flag, v, strings.Join(allowed, ", "))
}
