package sqlop

import (
	"bufio"
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/sqlop/sqloptest"
	"golang.org/x/sys/unix"
)

// Bad inputs are refused with the problem named, before anything runs.
func TestCheckUserRefuses(t *testing.T) {
	path := sqloptest.ShopDB(t, 500)
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("hello, not a database at all"), 0o600)
	fifo := filepath.Join(dir, "fifo") // reading it would wait for a writer for ever
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
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
		{path, "select total from orders where order_id = ?", "file:" + fifo, "a FIFO, not a regular file"},
		{path, "select total from orders where order_id = ?", "file:" + dir, "a directory"},
		// Prepared fine, fail when run: refused before anything runs.
		{path, "select load_extension('nosuch') from orders where order_id = ?", "range:1..10", "not authorized"},
		{path, "select json_extract('{\"a\": ', '$.a') from orders where order_id = ?", "range:1..10", "malformed JSON"},
	} {
		_, err := CheckUser(c.db, c.q, c.args, "")
		if err == nil || !errors.Is(err, ErrBadUserOp) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckUser(%q, %q, %q) = %v; want an ErrBadUserOp naming %q", c.db, c.q, c.args, err, c.want)
		}
	}
	if _, err := CheckUser(path, "-- mine\nselect total from orders where order_id = ?", "file:"+keys, ""); err != nil {
		t.Errorf("a good query with a file of keys: %v", err)
	}
}

// The user's query runs with each argument in turn, reads every row, and
// leaves the file byte-for-byte as it was, mtime too.
func TestUserSourceReadsOnly(t *testing.T) {
	path := sqloptest.ShopDB(t, 500)
	before, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)
	u, err := CheckUser(path, "select customer, total from orders where order_id <= ?", "range:1..3", "")
	if err != nil {
		t.Fatal(err)
	}
	s := NewUserSource(u, ConnApp)
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
	if app, imm := u.DSN(ConnApp), u.DSN(ConnImmutable); !strings.HasSuffix(app, "?mode=ro") || !strings.HasSuffix(imm, "?mode=ro&immutable=1") {
		t.Errorf("DSNs %q and %q; want an application's read-only URI and an immutable one", app, imm)
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

// walDB makes a WAL database whose last row (order_id 501) is committed
// only in its -wal. With live, the writer is another process (this test
// binary, as TestWALWriter) that keeps it open until the test ends: an
// application that has the database open. Without, the writer closed it
// (the last connection checkpoints: no -wal and -shm are left).
func walDB(t *testing.T, live bool) string {
	t.Helper()
	path := sqloptest.ShopDB(t, 500)
	if !live {
		if err := walWrite(path, func() {}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALWriter$")
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_WAL_WRITER="+path)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("the writer process: %q, %v", line, err)
	}
	return path
}

// walWrite puts path in WAL mode, checkpoints, commits row 501 to the
// -wal only, calls hold and closes.
func walWrite(path string, hold func()) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{"pragma journal_mode=wal", "pragma wal_autocheckpoint=0", "pragma wal_checkpoint(truncate)",
		"insert into orders values (501, 'only in the wal', 9.5)"} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	hold()
	return nil
}

// TestWALWriter is walDB's writer process: it writes, says ready, and
// holds the database open until its standard input closes.
func TestWALWriter(t *testing.T) {
	path := os.Getenv("CTXLAB_TEST_WAL_WRITER")
	if path == "" {
		t.Skip("the writer process of walDB (CTXLAB_TEST_WAL_WRITER)")
	}
	err := walWrite(path, func() {
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A WAL database is read with its WAL: the row committed only in the -wal
// is seen through the application's connection (not through the immutable
// one, which reads the database file alone), whether the application that
// wrote it still has it open or not; the database, -wal and -shm are
// byte-identical afterwards, mtimes too, and no file appears beside them.
func TestUserWAL(t *testing.T) {
	live := walDB(t, true)
	// The same three files with no connection open: a copy of them, as an
	// application that stopped without closing leaves them.
	copied := filepath.Join(t.TempDir(), "copy.db")
	for _, ext := range []string{"", "-wal", "-shm"} {
		data, err := os.ReadFile(live + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied+ext, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{live, copied} {
		files := []string{path, path + "-wal", path + "-shm", path + "-journal"}
		before := sqloptest.Snapshot(files...)
		u, err := CheckUser(path, "select customer from orders where order_id = ?", "range:501..501", "")
		if err != nil {
			t.Fatal(err)
		}
		if !u.WAL || !strings.Contains(u.DSN(ConnApp), "readonly_shm=1") || !strings.Contains(u.About(ConnApp), "-wal") {
			t.Errorf("%s: WAL %v, DSN %q, about %q; want a WAL database read with its -shm read-only", path, u.WAL, u.DSN(ConnApp), u.About(ConnApp))
		}
		for c, want := range map[Conn]int64{ConnApp: 1, ConnImmutable: 0} {
			h, err := openUser(u, c)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				if n, err := h.Lookup(0); err != nil || n != want {
					t.Errorf("%s on the %s connection: %d rows, %v; want %d", filepath.Base(path), c.Name(), n, err, want)
				}
			}
			h.Close()
		}
		sqloptest.Same(t, filepath.Base(path), before, sqloptest.Snapshot(files...))
		if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 3 {
			t.Errorf("%s: %d files in its directory after the run, want the database, -wal and -shm", filepath.Base(path), len(ents))
		}
	}
}

// A WAL database without its -shm (closed cleanly, or -shm removed) would
// make SQLite create it: refused, naming --set db-shm=write, unless that is
// given; the database file is never written either way.
func TestUserWALNoShm(t *testing.T) {
	path := walDB(t, false)
	if _, err := os.Stat(path + "-shm"); err == nil {
		t.Fatalf("%s-shm still there after the last connection closed", path)
	}
	before := sqloptest.Snapshot(path)
	_, err := CheckUser(path, "select customer from orders where order_id = ?", "range:1..501", "")
	if err == nil || !errors.Is(err, ErrBadUserOp) || !strings.Contains(err.Error(), "--set db-shm=write") || !strings.Contains(err.Error(), "shop.db-shm") {
		t.Errorf("a WAL database without -shm: %v; want it refused naming the missing file and --set db-shm=write", err)
	}
	if _, err := CheckUser(path, "select 1", "", "sometimes"); err == nil || !strings.Contains(err.Error(), "db-shm=sometimes") {
		t.Errorf("db-shm=sometimes: %v; want it refused", err)
	}
	u, err := CheckUser(path, "select customer from orders where order_id = ?", "range:501..501", "write")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(u.DSN(ConnApp), "readonly_shm") {
		t.Errorf("db-shm=write: DSN %q; want the -shm writable", u.DSN(ConnApp))
	}
	h, err := openUser(u, ConnApp)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := h.Lookup(0); err != nil || n != 1 {
		t.Errorf("db-shm=write: %d rows, %v; want the checkpointed row", n, err)
	}
	h.Close()
	sqloptest.Same(t, "db-shm=write", before, sqloptest.Snapshot(path))
}

// A query that never reaches its last row is interrupted and refused when
// its trial run takes longer than TrialTimeout: validation cannot hang.
func TestCheckUserEndlessQuery(t *testing.T) {
	path := sqloptest.ShopDB(t, 500)
	old := TrialTimeout
	TrialTimeout = 200 * time.Millisecond
	defer func() { TrialTimeout = old }()
	q := "with recursive n(i) as (select ? union all select i + 1 from n) select i from n"
	done := make(chan error, 1)
	go func() { _, err := CheckUser(path, q, "range:1..2", ""); done <- err }()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, ErrBadUserOp) || !strings.Contains(err.Error(), "no last row within 200ms") {
			t.Errorf("an endless query: %v; want it refused for not ending", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("CheckUser hung on an endless query")
	}
}
