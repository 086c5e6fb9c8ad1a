package sqlop

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// UserOp is the "user" operation: the user's own read-only query on their
// own SQLite file, one argument per call taken in turn from Args. The file
// is opened as an application's connection reads it (Conn App: SQLite takes
// its locks and checks for changes on every query, and reads a WAL
// database's -wal) but read-only (mode=ro), so SQLite never writes it; the
// immutable connection (Conn Immutable) is measured beside it, as what
// skipping the locks and change checks would save.
type UserOp struct {
	Path  string // absolute path of the database file
	Size  int64  // its size in bytes, when checked
	Query string
	Args  []any // one value per call; nil for a query without parameters
	// WAL: the file's header says WAL mode. SQLite then reads the -wal
	// beside it through the -shm index; ShmWrite lets it create and update
	// those two files as every application's connection does (--set
	// db-shm=write); without it both must exist and the -shm is opened
	// read-only (readonly_shm=1), so nothing beside the file is written.
	WAL, ShmWrite bool
}

// Conn is a way of connecting to the user's file.
type Conn int

const (
	// ConnApp is the connection an application makes (sqlite3.connect(path),
	// sql.Open with the path), read-only: locks and change checks per query.
	ConnApp Conn = iota
	// ConnImmutable is file:PATH?mode=ro&immutable=1: no locks, no change
	// checks, and no -wal read.
	ConnImmutable
)

// ShmModes are the values of --set db-shm.
var ShmModes = []string{"read-only", "write"}

// ErrBadUserOp is wrapped by every error of CheckUser: bad input, not a
// failure of the machine.
var ErrBadUserOp = errors.New("bad --set db/query/args")

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// MaxUserArgs bounds the values an args file may hold.
const MaxUserArgs = 1_000_000

// CheckUser validates a user's operation before anything runs: the file
// exists and is a SQLite database (in WAL mode, with the -wal and -shm it
// is read through, unless shm is "write"), the query is one read-only
// statement (SELECT or WITH, prepared on a read-only connection) whose
// parameter count matches the args (1 with args, 0 without), and it runs
// once, with the first argument, to its last row. args is "range:A..B" or
// "file:PATH" (one value per line; whole numbers bind as integers) or "".
// shm is "", "read-only" or "write" (ShmModes).
func CheckUser(path, query, args, shm string) (*UserOp, error) {
	bad := func(format string, a ...any) (*UserOp, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadUserOp}, a...)...)
	}
	if path == "" {
		return bad("--set query and args need --set db=PATH (a SQLite database file)")
	}
	if query == "" {
		return bad("--set db=%s needs --set query='SELECT … ?'", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return bad("db=%s: %v", path, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return bad("db=%s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return bad("db=%s: not a regular file", path)
	}
	head := make([]byte, 20)
	f, err := os.Open(abs)
	if err != nil {
		return bad("db=%s: %v", path, err)
	}
	_, err = f.ReadAt(head, 0)
	f.Close()
	if err != nil || string(head[:len(sqliteMagic)]) != sqliteMagic {
		return bad("db=%s: not a SQLite database (no %q header)", path, strings.TrimRight(sqliteMagic, "\x00"))
	}
	if !readOnlyStatement(query) {
		return bad("query=%q: only a read-only SELECT or WITH statement is measured", Shorten(query, 60))
	}
	u := &UserOp{Path: abs, Size: st.Size(), Query: query, WAL: head[18] == 2 || head[19] == 2}
	switch shm {
	case "", "read-only":
	case "write":
		u.ShmWrite = true
	default:
		return bad("db-shm=%s: want read-only or write", shm)
	}
	if err := u.walFiles(); err != nil {
		return bad("db=%s: %v", path, err)
	}
	if args != "" {
		if u.Args, err = ParseArgs(args); err != nil {
			return bad("args=%s: %v", args, err)
		}
	}
	n, err := u.numInput()
	if err != nil {
		return bad("query=%q on db=%s: %v", Shorten(query, 60), path, err)
	}
	if w, err := u.writes(n); err != nil || w {
		if err == nil {
			err = errors.New("it would write to the database")
		}
		return bad("query=%q: only a read-only statement is measured: %v", Shorten(query, 60), err)
	}
	switch {
	case n != 1 && u.Args != nil:
		return bad("query=%q has %d parameters (?); with args each call binds exactly 1", Shorten(query, 60), n)
	case n != 0 && u.Args == nil:
		return bad("query=%q has %d parameters (?) but no --set args=range:A..B or args=file:PATH", Shorten(query, 60), n)
	}
	if rows, err := u.trial(); err != nil {
		arg := "no argument"
		if u.Args != nil {
			arg = fmt.Sprintf("its first argument (%v)", u.Args[0])
		}
		return bad("query=%q fails with %s on db=%s, after %d rows: %v", Shorten(query, 60), arg, path, rows, err)
	}
	return u, nil
}

// walFiles: a WAL database is read through its -wal and -shm. Read-only,
// both must exist (SQLite would create them beside the file: a write).
func (u *UserOp) walFiles() error {
	if !u.WAL || u.ShmWrite {
		return nil
	}
	var missing []string
	for _, ext := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(u.Path + ext); err != nil {
			missing = append(missing, filepath.Base(u.Path)+ext)
		}
	}
	if missing == nil {
		return nil
	}
	it := "it"
	if len(missing) > 1 {
		it = "them"
	}
	return fmt.Errorf("a WAL database without %s beside it: reading it would make SQLite create %s (every application's connection does); "+
		"--set db-shm=write lets SQLite create and update the -wal and -shm files (the database itself is never written)",
		strings.Join(missing, " and "), it)
}

// trial runs the query once on the application's connection, with the
// first argument, and reads every row: a query that fails while it runs
// ("not authorized", "malformed JSON") is refused before anything starts,
// and so is one that does not reach its last row within TrialTimeout
// (SQLite is interrupted): a call that never ends cannot be measured.
func (u *UserOp) trial() (rows int64, err error) {
	ctx, cancel := context.WithTimeout(bg, TrialTimeout)
	defer cancel()
	h, err := openUser(u, ConnApp)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	rs, err := h.conn.QueryContext(ctx, u.Query, h.args()...)
	if err == nil {
		rows, err = (&userCursor{h: h, rows: rs}).Fetch()
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("no last row within %v: one call must end to be measured", TrialTimeout)
	}
	return rows, err
}

// TrialTimeout bounds the query's trial run (tests shorten it).
var TrialTimeout = 30 * time.Second

// readOnlyStatement: after comments and white space the statement starts
// with SELECT or WITH, and it is one statement (no ; but a trailing one).
// The read-only connection it is then prepared on refuses the rest.
func readOnlyStatement(q string) bool {
	s := stripLeadingComments(q)
	word := strings.ToLower(strings.FieldsFunc(s+" ", func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})[0])
	if word != "select" && word != "with" {
		return false
	}
	body := strings.TrimSpace(s)
	body = strings.TrimSuffix(body, ";")
	return !strings.Contains(body, ";")
}

func stripLeadingComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return ""
			}
			s = s[i+2:]
		default:
			return s
		}
	}
}

// ParseArgs reads "range:A..B" or "file:PATH".
func ParseArgs(spec string) ([]any, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "range":
		a, b, ok := strings.Cut(rest, "..")
		lo, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		hi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
		if !ok || err1 != nil || err2 != nil || hi < lo || hi-lo >= MaxUserArgs {
			return nil, fmt.Errorf("want range:A..B with whole numbers A ≤ B, at most %d values", MaxUserArgs)
		}
		out := make([]any, 0, hi-lo+1)
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out, nil
	case "file":
		data, err := readRegular(rest)
		if err != nil {
			return nil, err
		}
		var out []any
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			if len(out) == MaxUserArgs {
				return nil, fmt.Errorf("more than %d values", MaxUserArgs)
			}
			if v, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64); err == nil {
				out = append(out, v)
			} else {
				out = append(out, line)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
		if len(out) == 0 {
			return nil, errors.New("no values (one per line)")
		}
		return out, nil
	}
	return nil, errors.New("want range:A..B or file:PATH (one value per line)")
}

// readRegular reads a file that must be a regular one: a FIFO would
// block the read for ever (and ignore Ctrl-C), a device may do anything.
// It is opened non-blocking and looked at again, in case it was swapped.
func readRegular(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		kind := "not a regular file"
		switch {
		case st.IsDir():
			kind = "a directory"
		case st.Mode()&os.ModeNamedPipe != 0:
			kind = "a FIFO, not a regular file"
		}
		return nil, fmt.Errorf("%s; want a file of values, one per line", kind)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file; want a file of values, one per line")
	}
	return io.ReadAll(io.LimitReader(f, 1<<30))
}

// DSN is the URI of a connection to the file: read-only always (mode=ro);
// for ConnApp with the -shm read-only too on a WAL database unless
// ShmWrite; for ConnImmutable immutable=1.
func (u *UserOp) DSN(c Conn) string {
	q := "?mode=ro"
	switch {
	case c == ConnImmutable:
		q += "&immutable=1"
	case u.WAL && !u.ShmWrite:
		q += "&readonly_shm=1"
	}
	return "file:" + (&url.URL{Path: u.Path}).EscapedPath() + q
}

// Name is the connection's name in arm names and params: "app" or
// "immutable".
func (c Conn) Name() string {
	if c == ConnImmutable {
		return "immutable"
	}
	return "app"
}

// About says in words what a connection pays per query, for rows, readings
// and docs.
func (u *UserOp) About(c Conn) string { return ConnAbout(c, u.WALMode()) }

// WALMode is how a WAL database's -shm is opened: "" (not WAL),
// "read-only" or "write" (ShmModes); stored as the arms' db-wal param.
func (u *UserOp) WALMode() string {
	switch {
	case !u.WAL:
		return ""
	case u.ShmWrite:
		return "write"
	}
	return "read-only"
}

// ConnAbout is About from what a stored arm keeps: the connection and
// WALMode.
func ConnAbout(c Conn, wal string) string {
	if c == ConnImmutable {
		s := "opened immutable (mode=ro&immutable=1): no locks and no change checks per query, what an immutable connection or one read transaction held across queries would save"
		if wal != "" {
			s += "; it reads the database file alone, not what is only in its -wal"
		}
		return s
	}
	s := "opened as an application opens it, read-only (mode=ro): SQLite's locks and change checks on every query"
	switch wal {
	case "read-only":
		s += "; a WAL database, read with its -wal, the -shm opened read-only (readonly_shm=1): while no other connection has the database open, SQLite reads the -wal on each query, which an application's connection does not (--set db-shm=write)"
	case "write":
		s += "; a WAL database, read with its -wal and -shm, which SQLite may create and update (db-shm=write)"
	}
	return s
}

// ConnNamed is the Conn of a name (Name): "immutable" or anything else
// for the application's.
func ConnNamed(name string) Conn {
	if name == "immutable" {
		return ConnImmutable
	}
	return ConnApp
}

// numInput is the query's parameter count, as sqlite3_bind_parameter_count:
// the driver's NumInput is -1 (unknown), and it refuses a statement run with
// fewer arguments than that count ("missing argument with index N"), so the
// count is the fewest NULLs its EXPLAIN runs with. It also prepares the
// query on the read-only connection, so a bad query fails here.
func (u *UserOp) numInput() (int, error) {
	db, err := sql.Open("sqlite", u.DSN(ConnApp))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	for n := 0; n <= maxUserParams; n++ {
		rows, err := db.QueryContext(bg, "explain "+u.Query, make([]any, n)...)
		if err == nil {
			return n, rows.Close()
		}
		if strings.Contains(err.Error(), "missing named argument") {
			return 0, errors.New("named parameters (:name, @name, $name) are not supported; use ?")
		}
		if !strings.Contains(err.Error(), "missing argument with index") {
			return 0, err
		}
	}
	return 0, fmt.Errorf("more than %d parameters", maxUserParams)
}

const maxUserParams = 32

// writes reports whether the statement's program (EXPLAIN) opens a write
// transaction or a table for writing, as sqlite3_stmt_readonly decides.
func (u *UserOp) writes(n int) (bool, error) {
	db, err := sql.Open("sqlite", u.DSN(ConnApp))
	if err != nil {
		return false, err
	}
	defer db.Close()
	rows, err := db.QueryContext(bg, "explain "+u.Query, make([]any, n)...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var addr, p1, p2, p3 int64
	var opcode string
	var p4, p5, comment any
	for rows.Next() {
		if err := rows.Scan(&addr, &opcode, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
			return false, err
		}
		if opcode == "OpenWrite" || (opcode == "Transaction" && p2 != 0) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// Base is the database file's name without its directory.
func (u *UserOp) Base() string { return filepath.Base(u.Path) }

// Op is the operation text a row shows: the query shortened and the
// database's name and size.
func (u *UserOp) Op() string {
	return fmt.Sprintf("your query %q on %s (%s)", Shorten(u.Query, 48), filepath.Base(u.Path), sizeText(u.Size))
}

func sizeText(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// Shorten is s on one line, cut to at most n runes with an ellipsis.
func Shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// NewUserSource is a Source of the user's operation through the pure-Go
// driver on connection c (the op "user"); Close removes nothing, the file
// is the user's.
func NewUserSource(u *UserOp, c Conn) *Source {
	return &Source{Op: "user", unchecked: true, open: func() (Handle, error) { return openUser(u, c) }}
}

// userHandle runs the user's query with the next argument on each call and
// reads every row (each column as raw bytes); Lookup's value is the number
// of rows. The id the caller passes is ignored: the args are the keys.
type userHandle struct {
	sqlHandle
	u    *UserOp
	next int
	cols []any
}

func openUser(u *UserOp, c Conn) (*userHandle, error) {
	h, err := openSQL("sqlite", u.DSN(c), false, false)
	if err != nil {
		return nil, err
	}
	return &userHandle{sqlHandle: *h, u: u}, nil
}

func (h *userHandle) args() []any {
	if h.u.Args == nil {
		return nil
	}
	a := h.u.Args[h.next]
	h.next++
	if h.next == len(h.u.Args) {
		h.next = 0
	}
	return []any{a}
}

func (h *userHandle) Lookup(int64) (int64, error) {
	c, err := h.Exec(0)
	if err != nil {
		return 0, err
	}
	return c.Fetch()
}

func (h *userHandle) Exec(int64) (Cursor, error) {
	rows, err := h.conn.QueryContext(bg, h.u.Query, h.args()...)
	if err != nil {
		return nil, err
	}
	return &userCursor{h: h, rows: rows}, nil
}

type userCursor struct {
	h    *userHandle
	rows *sql.Rows
}

// Fetch reads every row and returns how many there were.
func (c *userCursor) Fetch() (int64, error) {
	defer c.rows.Close()
	if c.h.cols == nil {
		cols, err := c.rows.Columns()
		if err != nil {
			return 0, err
		}
		c.h.cols = make([]any, len(cols))
		for i := range c.h.cols {
			c.h.cols[i] = new(sql.RawBytes)
		}
	}
	var n int64
	for c.rows.Next() {
		if err := c.rows.Scan(c.h.cols...); err != nil {
			return 0, err
		}
		n++
	}
	if err := c.rows.Err(); err != nil {
		return 0, err
	}
	return n, c.rows.Close()
}
