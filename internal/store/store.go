// Package store keeps ctxlab's run history in an embedded SQLite database
// (modernc.org/sqlite, no cgo), so runs can be listed, shown, compared and
// reported later. The schema is versioned: numbered migrations are embedded
// in the binary and applied in order inside one transaction. Each run is
// written in one transaction, so an interrupted save leaves nothing behind,
// and WAL plus a busy timeout let two ctxlab processes write at once.
// A file at the path that is not a ctxlab store is refused, never touched.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctxlab/ctxlab/internal/result"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded steps in version order; the store's schema
// version is the number of the last one applied.
var migrations = loadMigrations()

func loadMigrations() []migration {
	ents, err := migrationFS.ReadDir("migrations")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("store: migration file without a number: " + e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			panic(fmt.Sprintf("store: migrations must be numbered 1..n without gaps; %s is #%d", m.name, i+1))
		}
	}
	return ms
}

// Version is the schema version this ctxlab writes.
var Version = len(migrations)

// ErrNotStore means the file at the path is not a ctxlab store; it was left
// as it is.
var ErrNotStore = errors.New("not a ctxlab history database")

// ErrNotFound means no stored run matches the reference.
var ErrNotFound = errors.New("no such run")

// Store is an open history database.
type Store struct {
	db   *sql.DB
	path string
	// afterArm, in tests, runs after each arm row is written inside the
	// run's transaction; an error aborts the save.
	afterArm func(i int) error
}

// DefaultPath is $XDG_DATA_HOME/ctxlab/history.db, falling back to
// ~/.local/share/ctxlab/history.db.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ctxlab", "history.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("history database: no $XDG_DATA_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "ctxlab", "history.db"), nil
}

const sqliteMagic = "SQLite format 3\x00"

// Open opens (creating if needed) the store at path and brings its schema
// up to date. A non-SQLite file, a SQLite file of another program, or a
// store from a newer ctxlab is refused with ErrNotStore or a clear error.
func Open(path string) (*Store, error) {
	return OpenContext(context.Background(), path)
}

// OpenContext is Open that gives up when ctx is done: waiting for another
// writer's lock (up to BusyWait) stays interruptible.
func OpenContext(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, Version)
}

// ErrUnusable means the path cannot hold a ctxlab store: a directory, a
// foreign file, a file or directory without write permission. It is the
// user's input that is wrong, not the work.
var ErrUnusable = errors.New("cannot be used")

// BusyWait is how long an open or a save waits for another process that
// holds the database's write lock, retrying in steps of busyStep.
const BusyWait = 20 * time.Second

// busyStep is SQLite's own busy timeout: a step short enough that a
// waiting save notices Ctrl-C within it.
const busyStep = 100 * time.Millisecond

// open migrates to version upto (tests use it to build an older store).
func open(ctx context.Context, path string, upto int) (*Store, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(path)
	isNew := errors.Is(statErr, os.ErrNotExist)
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyStep.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history database %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := retryBusy(ctx, func() error { return s.migrate(ctx, upto) }); err != nil {
		db.Close()
		if isNew { // what this open created holds nothing: leave no empty history behind
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				os.Remove(path + suffix)
			}
		}
		return nil, fullDisk(path, err)
	}
	return s, nil
}

// fullDisk words a failure on a full file system as such: SQLite says
// "database or disk is full (13)" or, when it cannot grow its shared
// memory index, "disk I/O error (4874)".
func fullDisk(path string, err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	full := se.Code()&0xff == sqlite3.SQLITE_FULL
	if se.Code()&0xff == sqlite3.SQLITE_IOERR {
		var fs unix.Statfs_t
		full = unix.Statfs(filepath.Dir(path), &fs) == nil && fs.Bavail*uint64(fs.Bsize) < 1<<20
	}
	if !full {
		return err
	}
	return fmt.Errorf("history database %s: the file system that holds it is full (SQLite: %w); free some space, or use another --db", path, se)
}

// createPrivate makes the directory (0700: the history holds command lines
// and host names) and an empty database file (0600) if they do not exist,
// and checks that an existing file can be written, so a read-only file or
// directory is named as such rather than as SQLite's "unable to open".
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("history database %s: %w: %v", path, ErrUnusable, unwrapPath(err))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("history database %s: %w: cannot open it for writing: %v", path, ErrUnusable, unwrapPath(err))
	}
	f.Close()
	// SQLite creates -wal and -shm beside the file: the directory must take
	// new files too.
	if err := unix.Access(filepath.Dir(path), unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("history database %s: %w: its directory is not writable: %v", path, ErrUnusable, err)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// retryBusy runs f again while it fails because another connection holds
// the lock, for up to BusyWait, and stops at once when ctx is done. SQLite
// does not call its busy handler for every lock (PRAGMA journal_mode=WAL
// on a new file fails at once), so the wait is here, in one place.
func retryBusy(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(BusyWait)
	for {
		err := f()
		if err == nil || !isBusy(err) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (another process held the database lock for %v)", err, BusyWait)
		}
		t := time.NewTimer(busyStep / 4)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the database lock: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// isBusy reports SQLITE_BUSY or SQLITE_LOCKED (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

// checkHeader refuses an existing non-empty file that is not SQLite,
// before SQLite gets a chance to write to it.
func checkHeader(path string) error {
	// Stat first: opening a FIFO (or a device) would block or do harm.
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return fmt.Errorf("history database %s: %w: not a regular file (%v)", path, ErrUnusable, st.Mode().Type())
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history database %s: %w: %v", path, ErrUnusable, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("history database %s: %w: %v", path, ErrUnusable, err)
	}
	if st.IsDir() {
		return fmt.Errorf("history database %s: %w: it is a directory; want a file", path, ErrUnusable)
	}
	if st.Size() == 0 {
		return nil
	}
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte(sqliteMagic)) {
		return fmt.Errorf("history database %s: %w: the file is not SQLite; it was left untouched (move it away or pass --db)", path, ErrNotStore)
	}
	return nil
}

// migrate applies the missing migrations in one immediate transaction, so
// two processes opening a new store at once do not both create it.
func (s *Store) migrate(ctx context.Context, upto int) error {
	// WAL lets a reader and a writer work at once; it is a property of the
	// file, so set it once the file is known to be ours (below).
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.wrapOpen(err)
	}
	defer tx.Rollback()
	var ntables int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table'`).Scan(&ntables); err != nil {
		return s.wrapOpen(err)
	}
	var have int
	var ours int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type='table' AND name='ctxlab_schema'`).Scan(&ours); err != nil {
		return s.wrapOpen(err)
	}
	switch {
	case ours == 0 && ntables > 0:
		return fmt.Errorf("history database %s: %w: it is a SQLite database of another program (no ctxlab_schema table); it was left untouched (pass --db to use another file)", s.path, ErrNotStore)
	case ours == 0:
		if _, err := tx.Exec(`CREATE TABLE ctxlab_schema (version INTEGER NOT NULL, applied TEXT NOT NULL)`); err != nil {
			return s.wrapOpen(err)
		}
	default:
		if err := tx.QueryRow(`SELECT coalesce(max(version), 0) FROM ctxlab_schema`).Scan(&have); err != nil {
			return s.wrapOpen(err)
		}
	}
	if have > Version {
		return fmt.Errorf("history database %s: %w: schema version %d is newer than this ctxlab understands (%d); use a newer ctxlab or another --db", s.path, ErrUnusable, have, Version)
	}
	for _, m := range migrations[have:upto] {
		if _, err := tx.Exec(m.sql); err != nil {
			return fmt.Errorf("history database %s: migration %s: %w", s.path, m.name, err)
		}
		if _, err := tx.Exec(`INSERT INTO ctxlab_schema(version, applied) VALUES (?, ?)`, m.version, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return s.wrapOpen(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.wrapOpen(err)
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return s.wrapOpen(err)
	}
	return nil
}

func (s *Store) wrapOpen(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "not a database") || strings.Contains(msg, "malformed") {
		return fmt.Errorf("history database %s: %w: %v; it was left untouched (move it away or pass --db)", s.path, ErrNotStore, err)
	}
	if isBusy(err) {
		return err // retried by retryBusy, which names the path
	}
	return fmt.Errorf("history database %s: %w", s.path, err)
}

// Path is the file the store lives in.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// SchemaVersion reports the version the open store is at.
func (s *Store) SchemaVersion() (int, error) {
	var v int
	err := s.db.QueryRow(`SELECT coalesce(max(version), 0) FROM ctxlab_schema`).Scan(&v)
	return v, err
}

// Source values: where a stored run came from.
const (
	SourceRun    = "run"
	SourceImport = "import"
)

// ErrExists means a run with the same id is already stored.
var ErrExists = errors.New("run already stored")

// Save writes run and its arms in one transaction: either all of it is
// stored or none of it.
func (s *Store) Save(ctx context.Context, run *result.Run, source string) error {
	if run.ID == "" {
		return fmt.Errorf("save run: the run has no id")
	}
	doc, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	return retryBusy(ctx, func() error { return s.save(ctx, run, source, doc) })
}

// save is one attempt at Save's transaction.
func (s *Store) save(ctx context.Context, run *result.Run, source string, doc []byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, run.ID).Scan(&n); err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	if n > 0 {
		return fmt.Errorf("save run %s: %w", run.ID, ErrExists)
	}
	// Prune compares these times as text: keep them RFC 3339 in UTC.
	_, err = tx.ExecContext(ctx, `INSERT INTO runs(id, time, host, suite, schema, doc, source) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		run.ID, run.Time.UTC().Format(time.RFC3339Nano), run.Env.Hostname, run.Suite, run.Schema, string(doc), source)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	for i, a := range run.Arms {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO arms(run_id, name, experiment, substrate, status, median, unit, noisy) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			run.ID, a.Name, a.Experiment, a.Substrate, a.Status, a.Median, a.Unit, a.Noise.Noisy)
		if err != nil {
			return fmt.Errorf("save run %s: arm %s: %w", run.ID, a.Name, err)
		}
		if s.afterArm != nil {
			if err := s.afterArm(i); err != nil {
				return fmt.Errorf("save run %s: %w", run.ID, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	return nil
}

// Prune deletes the runs of one suite and source (SourceRun: measured
// into this file, not imported) stored with a time before cutoff's whole
// second, with their arms, and says how many went. Other runs are never
// touched: serve --db may share its file with ctxlab run's history and
// with runs imported to compare. SQLite reuses the pages it frees, so a
// store pruned as it grows stops growing once it holds a retention
// period's runs.
func (s *Store) Prune(ctx context.Context, suite, source string, cutoff time.Time) (int, error) {
	// Save writes every time as RFC 3339 in UTC with up to nine fractional
	// digits, trailing zeros dropped, and a four-digit year (json.Marshal
	// of the run refuses others first). Against a whole-second cutoff
	// written with all nine digits, text order is then time order: a run
	// in the cutoff's second compares at or above it ("Z" sorts after
	// "."), one in an earlier second below.
	cut := cutoff.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000000000Z")
	var n int64
	err := retryBusy(ctx, func() error {
		res, err := s.db.ExecContext(ctx, `DELETE FROM runs WHERE suite = ? AND source = ? AND time < ?`, suite, source, cut)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune %s runs before %s: %w", suite, cut, err)
	}
	return int(n), nil
}

// Entry is one line of the history.
type Entry struct {
	ID     string
	Time   time.Time
	Host   string
	Suite  string
	Source string
	Arms   int
	Noisy  int
}

// List returns up to limit runs (0: all), most recently stored first.
func (s *Store) List(ctx context.Context, limit int) ([]Entry, error) {
	q := `SELECT r.id, r.time, r.host, r.suite, r.source,
		(SELECT count(*) FROM arms a WHERE a.run_id = r.id),
		(SELECT count(*) FROM arms a WHERE a.run_id = r.id AND a.noisy)
		FROM runs r ORDER BY r.rowid DESC`
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit)
	}
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var ts string
		if err := rows.Scan(&e.ID, &ts, &e.Host, &e.Suite, &e.Source, &e.Arms, &e.Noisy); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		if e.Time, err = time.Parse(time.RFC3339Nano, ts); err != nil {
			return nil, fmt.Errorf("list runs: run %s has a bad time %q: %w", e.ID, ts, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Resolve turns a reference into a run id: a full id, a unique prefix of
// one, "last" (the latest stored run) or "last~N" (N runs before it).
func (s *Store) Resolve(ctx context.Context, ref string) (string, error) {
	return s.ResolveKind(ctx, ref, result.AnyRun)
}

// kindWhere is the condition on runs' suite that a Kind's "last" counts.
var kindWhere = map[result.Kind]string{
	result.AnyRun:        "1",
	result.ExperimentRun: "suite NOT IN ('" + result.SuiteDiagnose + "', '" + result.SuiteSelfcheck + "')",
	result.DiagnoseRun:   "suite = '" + result.SuiteDiagnose + "'",
}

// ResolveKind is Resolve with "last" and "last~N" counting the runs of
// kind k only; an id or a prefix names any run.
func (s *Store) ResolveKind(ctx context.Context, ref string, k result.Kind) (string, error) {
	if ref == "" {
		ref = "last"
	}
	if ref == "last" || strings.HasPrefix(ref, "last~") {
		back := 0
		if ref != "last" {
			n, err := strconv.Atoi(strings.TrimPrefix(ref, "last~"))
			if err != nil || n < 0 {
				return "", fmt.Errorf("run %q: want an id, a unique id prefix, last or last~N with N ≥ 0", ref)
			}
			back = n
		}
		var id string
		err := s.db.QueryRowContext(ctx, `SELECT id FROM runs WHERE `+kindWhere[k]+` ORDER BY rowid DESC LIMIT 1 OFFSET ?`, back).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("run %s: %w (the store %s holds fewer runs%s)", ref, ErrNotFound, s.path, kindNote(k))
		}
		return id, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs WHERE id = ? OR substr(id, 1, ?) = ? ORDER BY rowid DESC`, ref, len(ref), ref)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		if id == ref {
			return id, nil
		}
		ids = append(ids, id)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("run %s: %w in %s (see ctxlab history)", ref, ErrNotFound, s.path)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("run %s: the prefix matches %d runs (%s …); give more of the id", ref, len(ids), strings.Join(ids[:2], ", "))
}

// Latest loads the last run of suite stored for host; ErrNotFound when
// there is none.
func (s *Store) Latest(ctx context.Context, suite, host string) (*result.Run, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM runs WHERE suite = ? AND host = ? ORDER BY rowid DESC LIMIT 1`, suite, host).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no %s run for %s: %w", suite, host, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, id)
}

// Get loads a stored run by reference (see Resolve).
func (s *Store) Get(ctx context.Context, ref string) (*result.Run, error) {
	return s.GetKind(ctx, ref, result.AnyRun)
}

// kindNote says which runs a kind counted, for a message.
func kindNote(k result.Kind) string {
	if k == result.AnyRun {
		return ""
	}
	return " of that kind: last counts each " + k.String()
}

// GetKind is Get with "last" and "last~N" counting the runs of kind k.
func (s *Store) GetKind(ctx context.Context, ref string, k result.Kind) (*result.Run, error) {
	id, err := s.ResolveKind(ctx, ref, k)
	if err != nil {
		return nil, err
	}
	var doc string
	if err := s.db.QueryRowContext(ctx, `SELECT doc FROM runs WHERE id = ?`, id).Scan(&doc); err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	run, err := ReadRun(strings.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	return run, nil
}
