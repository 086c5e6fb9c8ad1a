package cli

import (
	"context"
	"fmt"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
)

// applyServeStore makes serve --db save every probe cycle as a run in the
// history database, so `ctxlab history` and `ctxlab compare` see what the
// exporter measured. Off unless asked for: an exporter should not grow a
// file by default.
func applyServeStore(o *ServeOptions) error {
	path := o.DB
	if path == "" {
		return nil
	}
	// Check the file now: a foreign file at the path is a clear error
	// before the server starts, not a warning every cycle.
	s, err := openStore(context.Background(), path, true)
	if err != nil {
		return usagef("--db %s: %v", path, err)
	}
	s.Close()
	o.Serve.Save = func(run *result.Run) error {
		s, err := store.Open(path)
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.Save(context.Background(), run, store.SourceRun); err != nil {
			return fmt.Errorf("save probe cycle: %w", err)
		}
		return nil
	}
	return nil
}
