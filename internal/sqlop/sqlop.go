// Package sqlop is the fast local operation that the hop and concurrency
// experiments wrap: the seed's SQLite lookup (`select v from t where id = ?`
// on the integer primary key of a 1 000-row table, one B-tree search, a fresh
// query per call; -prepared ops run one
// statement prepared per connection instead) on a database file in a
// temporary directory or in `:memory:`, through the pure-Go driver
// (modernc.org/sqlite, always built) or the cgo driver (mattn/go-sqlite3,
// built only with -tags mattn and cgo), plus an in-memory map lookup as the pure-compute
// control and a trivial cgo call. Every operation returns a value the caller
// can check (Want), so a benchmark proves the work really ran.
package sqlop

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Rows is the size of the lookup table: ids 1..Rows.
const Rows = 1000

// Query is the one statement every built-in SQLite operation runs: the
// seed's, a lookup by the integer primary key (one B-tree search).
const Query = "select v from t where id = ?"

// ErrUnsupported is wrapped by errors for operations that cannot run in
// this build (the cgo driver without cgo).
var ErrUnsupported = errors.New("unsupported")

// Want is the value stored for key id: every operation must return it.
func Want(id int64) int64 { return id*31 + 7 }

// Key maps the i-th call of a loop to a table key (1..Rows), striding over all rows
// so consecutive calls do not hit the same row.
func Key(i int) int64 { return int64((i*389)%Rows) + 1 }

// Handle is one caller's (or one worker's) access to the operation: for
// SQLite one connection (and a -prepared op's statement). A Handle is used by
// one goroutine at a time.
type Handle interface {
	// Lookup runs the operation for id in one step.
	Lookup(id int64) (int64, error)
	// Exec runs the statement and returns a cursor; Fetch on it reads the
	// row. Together they are Lookup split in two, the shape of a
	// thread-backed async wrapper (execute, then fetch).
	Exec(id int64) (Cursor, error)
	Close() error
}

// Cursor is an executed statement whose row has not been read yet.
type Cursor interface {
	// Fetch reads the one row and releases the cursor.
	Fetch() (int64, error)
}

// Source is a prepared operation: the table (in a file in its own temp dir,
// or rebuilt in every :memory: handle) or the map. Open hands out handles;
// Close removes the temp dir, so nothing is left behind after a run.
type Source struct {
	Op  string // one of Ops(), or "user" (NewUserSource)
	Dir string // the temp dir holding the database file ("" if none)

	// unchecked: the values are the user's, not Want(id) (NewUserSource).
	unchecked bool

	open  func() (Handle, error)
	clean func() error
}

// kind is one operation's implementation; drivers add theirs in init().
type kind struct {
	doc         string
	unsupported string // why it cannot run in this build
	newSource   func(s *Source) error
}

var kinds = map[string]*kind{}

func register(name, doc, unsupported string, newSource func(s *Source) error) {
	kinds[name] = &kind{doc: doc, unsupported: unsupported, newSource: newSource}
}

// Ops lists every operation name, sorted: map, cgo-call, and
// <driver>-<memory|file>[-prepared] for each SQLite driver.
func Ops() []string {
	var out []string
	for k := range kinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Doc says what an operation is, for listings.
func Doc(op string) string {
	if k, ok := kinds[op]; ok {
		return k.doc
	}
	return ""
}

// Unsupported says why op cannot run in this build, or "" if it can.
func Unsupported(op string) string {
	k, ok := kinds[op]
	if !ok {
		return fmt.Sprintf("unknown operation %q; operations are %s", op, strings.Join(Ops(), ", "))
	}
	return k.unsupported
}

// NewSource prepares op: for a SQLite file it creates the temp dir and the
// populated database file. The caller must Close it.
func NewSource(op string) (*Source, error) {
	k, ok := kinds[op]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q; operations are %s", op, strings.Join(Ops(), ", "))
	}
	if k.unsupported != "" {
		return nil, fmt.Errorf("%s: %w: %s", op, ErrUnsupported, k.unsupported)
	}
	s := &Source{Op: op}
	if err := k.newSource(s); err != nil {
		if s.clean != nil {
			s.clean()
		}
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return s, nil
}

// Check says whether v is the right answer for id: Want(id) for the
// built-in operations; any value for the user's, whose rows ctxlab does
// not know.
func (s *Source) Check(id, v int64) error {
	if s.unchecked || v == Want(id) {
		return nil
	}
	return fmt.Errorf("id %d: got %d, want %d", id, v, Want(id))
}

// Open returns a new handle (a new connection for SQLite).
func (s *Source) Open() (Handle, error) {
	h, err := s.open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Op, err)
	}
	return h, nil
}

// Close removes what the source created (the temp dir and its files).
// Close the handles first. It is safe to call more than once.
func (s *Source) Close() error {
	if s.clean == nil {
		return nil
	}
	err := s.clean()
	s.clean = nil
	return err
}

// tempDir makes the directory a database file lives in and the cleanup
// that removes it.
func (s *Source) tempDir() (string, error) {
	SweepTemp()
	dir, err := os.MkdirTemp("", tempPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	s.Dir = dir
	s.clean = func() error { return os.RemoveAll(dir) }
	return dir, nil
}

// The map control: the same key → value lookup without SQLite.
func init() {
	register("map", "in-memory Go map lookup of the same 1 000 keys (the pure-compute control)", "", func(s *Source) error {
		m := make(map[int64]int64, Rows)
		for id := int64(1); id <= Rows; id++ {
			m[id] = Want(id)
		}
		s.open = func() (Handle, error) { return &mapHandle{m: m}, nil }
		return nil
	})
}

type mapHandle struct {
	m   map[int64]int64
	cur valueCursor
}

func (h *mapHandle) Lookup(id int64) (int64, error) {
	v, ok := h.m[id]
	if !ok {
		return 0, fmt.Errorf("no row for id %d", id)
	}
	return v, nil
}

// Exec looks the value up and parks it in the handle's one cursor, so the
// split path allocates nothing (a handle serves one call at a time).
func (h *mapHandle) Exec(id int64) (Cursor, error) {
	v, err := h.Lookup(id)
	h.cur = valueCursor{v: v}
	return &h.cur, err
}

func (h *mapHandle) Close() error { return nil }

// valueCursor is a cursor whose value is already known.
type valueCursor struct{ v int64 }

func (c *valueCursor) Fetch() (int64, error) { return c.v, nil }
