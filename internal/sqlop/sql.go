package sqlop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
)

// sqlDriver is a database/sql driver registered under sqlName.
type sqlDriver struct {
	name    string // "modernc", "mattn"
	sqlName string // the database/sql driver name
	about   string
}

// registerSQL adds, for a driver, <driver>-file and <driver>-memory (the
// seed's lookup: a fresh query per call) and <driver>-file-prepared and
// <driver>-memory-prepared (one statement prepared per handle, run per call).
func registerSQL(d sqlDriver, unsupported string) {
	for _, prepared := range []bool{false, true} {
		suffix, how := "", "a fresh query per lookup (QueryRowContext, as CPython's conn.execute(...).fetchone())"
		if prepared {
			suffix, how = "-prepared", "one statement prepared per connection and run per lookup"
		}
		register(d.name+"-memory"+suffix, fmt.Sprintf("SQLite primary-key lookup in :memory: through %s, %s", d.about, how), unsupported,
			func(s *Source) error {
				s.open = func() (Handle, error) { return openSQL(d.sqlName, ":memory:", true, prepared) }
				// Build one handle now so a broken driver fails at NewSource.
				h, err := s.open()
				if err != nil {
					return err
				}
				return h.Close()
			})
		register(d.name+"-file"+suffix, fmt.Sprintf("SQLite primary-key lookup in a database file in a temp dir through %s, %s", d.about, how), unsupported,
			func(s *Source) error {
				dir, err := s.tempDir()
				if err != nil {
					return err
				}
				path := filepath.Join(dir, "hop.db")
				h, err := openSQL(d.sqlName, path, true, prepared)
				if err != nil {
					return err
				}
				if err := h.Close(); err != nil {
					return err
				}
				s.open = func() (Handle, error) { return openSQL(d.sqlName, path, false, prepared) }
				return nil
			})
	}
}

// sqlHandle is one connection and, for a -prepared op, its prepared
// statement. The connection is pinned (sql.Conn), so a :memory: database
// lives as long as the handle. Without a statement every lookup is a fresh
// QueryRowContext on the connection: the driver compiles, runs and
// finalizes the statement each time (database/sql and these drivers keep
// no statement cache; CPython's sqlite3 does, see docs/hop-callchain.md).
// Calls use context.Background(): neither driver then starts a goroutine
// per query to watch for cancellation.
type sqlHandle struct {
	db   *sql.DB
	conn *sql.Conn
	stmt *sql.Stmt // nil: a fresh query per lookup
	v    int64
}

var bg = context.Background()

func openSQL(driver, dsn string, create, prepared bool) (_ *sqlHandle, err error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	h := &sqlHandle{db: db}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if h.conn, err = db.Conn(bg); err != nil {
		return nil, err
	}
	if create {
		if err = populate(bg, h.conn); err != nil {
			return nil, fmt.Errorf("populate: %w", err)
		}
	}
	if prepared {
		if h.stmt, err = h.conn.PrepareContext(bg, Query); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	return h, nil
}

// populate creates the seed's table, t(id integer primary key, v), and
// Rows rows in one transaction; the lookup finds id in the table's own
// B-tree (SQLite's rowid), no secondary index. v is an integer (Want(id);
// the seed's is text) so every call is checked without allocating.
func populate(ctx context.Context, c *sql.Conn) error {
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, CreateTable); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, "insert into t (id, v) values (?, ?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	for id := int64(1); id <= Rows; id++ {
		if _, err := ins.ExecContext(ctx, id, Want(id)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// CreateTable is the built-in table: the seed's shape, keyed by id.
const CreateTable = "create table t (id integer primary key, v integer not null)"

func (h *sqlHandle) Lookup(id int64) (int64, error) {
	var row *sql.Row
	if h.stmt != nil {
		row = h.stmt.QueryRowContext(bg, id)
	} else {
		row = h.conn.QueryRowContext(bg, Query, id)
	}
	if err := row.Scan(&h.v); err != nil {
		return 0, fmt.Errorf("lookup id %d: %w", id, err)
	}
	return h.v, nil
}

// rowsCursor is *sql.Rows with a Fetch method; converting the pointer
// allocates nothing.
type rowsCursor sql.Rows

func (h *sqlHandle) Exec(id int64) (Cursor, error) {
	var rows *sql.Rows
	var err error
	if h.stmt != nil {
		rows, err = h.stmt.QueryContext(bg, id)
	} else {
		rows, err = h.conn.QueryContext(bg, Query, id)
	}
	if err != nil {
		return nil, fmt.Errorf("query id %d: %w", id, err)
	}
	return (*rowsCursor)(rows), nil
}

func (c *rowsCursor) Fetch() (int64, error) {
	rows := (*sql.Rows)(c)
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, sql.ErrNoRows
	}
	var v int64
	if err := rows.Scan(&v); err != nil {
		return 0, err
	}
	return v, rows.Close()
}

func (h *sqlHandle) Close() error {
	var errs []error
	if h.stmt != nil {
		errs = append(errs, h.stmt.Close())
	}
	if h.conn != nil {
		errs = append(errs, h.conn.Close())
	}
	errs = append(errs, h.db.Close())
	return errors.Join(errs...)
}

// registerCgoOff lists the cgo arms in a build without them, with the
// reason (CgoUnsupported), so listings and reports say why they did not run.
func registerCgoOff() {
	registerSQL(sqlDriver{name: "mattn", sqlName: "sqlite3", about: mattnAbout}, CgoUnsupported)
	register("cgo-call", cgoCallAbout, CgoUnsupported, nil)
}

const (
	mattnAbout   = "github.com/mattn/go-sqlite3 (SQLite's C code through cgo; -tags mattn)"
	cgoCallAbout = "one call of a trivial C function through cgo (the cgo crossing alone; -tags mattn)"
)
