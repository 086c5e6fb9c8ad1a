package sqlop

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// userDB makes a small database of a user's shape in a temp dir.
func userDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"create table orders (order_id integer primary key, customer text, total real)",
		"with recursive n(i) as (select 1 union all select i + 1 from n where i < 500) insert into orders select i, 'c' || (i % 17), i * 1.5 from n",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// Bad inputs are refused with the problem named, before anything runs.
func TestCheckUserRefuses(t *testing.T) {
	path := userDB(t)
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("hello, not a database at all"), 0o600)
	keys := filepath.Join(dir, "keys")
	os.WriteFile(keys, []byte("1\n2\n"), 0o600)
	for _, c := range []struct{ db, q, args, want string }{
		{"", "select 1", "", "need --set db"},
		{path, "", "", "needs --set query"},
		{filepath.Join(dir, "missing.db"), "select 1", "", "no such file"},
		{notDB, "select 1", "", "not a SQLite database"},
		{dir, "select 1", "", "not a regular file"},
		{path, "delete from orders where order_id = ?", "range:1..10", "read-only"},
		{path, "/* hi */ update orders set total = 0", "", "read-only"},
		{path, "select 1; delete from orders", "", "read-only"},
		{path, "with x as (select 1) delete from orders where order_id in (select * from x)", "", "write"},
		{path, "select total from nosuch where order_id = ?", "range:1..10", "no such table"},
		{path, "select total from orders where order_id = ? and customer = ?", "range:1..10", "2 parameters"},
		{path, "select total from orders where order_id = ?", "", "no --set args"},
		{path, "select count(*) from orders", "range:1..10", "0 parameters"},
		{path, "select total from orders where order_id = ?", "range:10..1", "range:A..B"},
		{path, "select total from orders where order_id = ?", "bogus", "range:A..B or file:PATH"},
		{path, "select total from orders where order_id = ?", "file:" + filepath.Join(dir, "nokeys"), "no such file"},
	} {
		_, err := CheckUser(c.db, c.q, c.args)
		if err == nil || !errors.Is(err, ErrBadUserOp) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckUser(%q, %q, %q) = %v; want an ErrBadUserOp naming %q", c.db, c.q, c.args, err, c.want)
		}
	}
	if _, err := CheckUser(path, "-- mine\nselect total from orders where order_id = ?", "file:"+keys); err != nil {
		t.Errorf("a good query with a file of keys: %v", err)
	}
}

// The user's query runs with each argument in turn, reads every row, and
// leaves the file byte-for-byte as it was, mtime too.
func TestUserSourceReadsOnly(t *testing.T) {
	path := userDB(t)
	before, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)
	u, err := CheckUser(path, "select customer, total from orders where order_id <= ?", "range:1..3")
	if err != nil {
		t.Fatal(err)
	}
	s := NewUserSource(u)
	h, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{1, 2, 3, 1} {
		if n, err := h.Lookup(0); err != nil || n != want {
			t.Fatalf("Lookup = %d rows, %v; want %d", n, err, want)
		}
	}
	// The connection itself refuses a write: the file is opened read-only.
	if _, err := h.(*userHandle).conn.ExecContext(bg, "create table x (i integer)"); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("a write through the user's connection: %v; want a read-only refusal", err)
	}
	if !strings.HasSuffix(u.DSN(), "?mode=ro&immutable=1") {
		t.Errorf("DSN %q; want a read-only, immutable URI", u.DSN())
	}
	c, err := h.Exec(0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.Fetch(); err != nil || n != 2 {
		t.Fatalf("Exec+Fetch = %d rows, %v; want 2", n, err)
	}
	h.Close()
	s.Close()
	after, _ := os.ReadFile(path)
	st1, _ := os.Stat(path)
	if !bytes.Equal(before, after) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Errorf("the database changed: %d → %d bytes, mtime %v → %v", len(before), len(after), st0.ModTime(), st1.ModTime())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("files beside the database after the run: %v", ents)
	}
	if op := u.Op(); !strings.Contains(op, "your query") || !strings.Contains(op, "shop.db") || !strings.Contains(op, "KiB") {
		t.Errorf("Op() = %q; want the query, the file's name and its size", op)
	}
}
