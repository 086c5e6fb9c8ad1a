package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/common/model"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/serve"
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
	o.Serve.Save = func(run *result.Run) (serve.Saved, error) {
		var saved serve.Saved
		s, err := store.Open(path)
		if err != nil {
			return saved, err
		}
		// Old cycles go first, so that a full disk frees room for this one.
		if o.DBRetention > 0 {
			n, err := s.Prune(context.Background(), run.Suite, store.SourceRun, run.Time.Add(-o.DBRetention))
			saved.Pruned = n
			if err != nil {
				s.Close()
				return saved, fmt.Errorf("delete cycles older than %s (--db-retention): %w", formatRetention(o.DBRetention), err)
			}
		}
		if err := s.Save(context.Background(), run, store.SourceRun); err != nil {
			s.Close()
			return saved, fmt.Errorf("save probe cycle: %w", err)
		}
		// Sized once closed: the last connection's close folds the
		// write-ahead log back into the file (unless another process
		// holds the file open; dbBytes counts what is left). The cycle
		// is committed by now, so a failed close does not make the save
		// a failure (it is logged): its log and index stay on disk, and
		// are counted.
		if err := s.Close(); err != nil {
			saved.Late = fmt.Errorf("close: %w", err)
		}
		saved.DBBytes = dbBytes(path)
		return saved, nil
	}
	return nil
}

// dbBytes is an SQLite database's size on disk: the file, and its
// write-ahead log and shared-memory index where they are left; 0 when
// the file cannot be read.
func dbBytes(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	n := fi.Size()
	for _, suffix := range []string{"-wal", "-shm"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// How long serve --db keeps a probe cycle. A cycle of the five default
// probes is ~12 KB stored, so the default week at the default 60 s
// interval is ~120 MB, within the DaemonSet's 256 MiB volume; without a
// limit the file grows for as long as the exporter runs.
const (
	defaultDBRetention = 7 * 24 * time.Hour
	minDBRetention     = time.Hour
	maxDBRetention     = 10 * 365 * 24 * time.Hour
)

// checkDBRetention wants 0 or a retention within range, and --db with it.
func checkDBRetention(o *ServeOptions) error {
	r := o.DBRetention
	if o.dbRetentionSet && o.DB == "" {
		return usagef("--db-retention %s: only with --db (without it no probe cycle is saved)", formatRetention(r))
	}
	if r != 0 && (r < minDBRetention || r > maxDBRetention) {
		return usagef("--db-retention %s: must be in %s..%s, or 0 to keep every cycle",
			formatRetention(r), formatRetention(minDBRetention), formatRetention(maxDBRetention))
	}
	return nil
}

// formatRetention writes whole days as days (7d, 3650d), as they are
// usually given, and anything else as Prometheus does (1h30m).
func formatRetention(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return model.Duration(d).String()
}

// retentionValue is a duration flag that also takes days, weeks and years
// (7d, 2w, 1y), as Prometheus's own retention flag does.
type retentionValue struct{ d *time.Duration }

func (v retentionValue) String() string { return formatRetention(*v.d) }
func (v retentionValue) Type() string   { return "duration" }
func (v retentionValue) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q", s) // the usage line that follows says what is valid
	}
	*v.d = time.Duration(d)
	return nil
}
