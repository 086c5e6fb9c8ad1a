package cli

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/store"
)

// TestOutputNeverReplacesHistory points -o at the history database of
// every command that writes -o, by every road to the same file: the path
// itself, a symbolic link, a "..", a hard link, the -wal beside it, and
// the default path. Each is refused (exit 2, both paths named) before any
// work, and the history still holds its run. Before the fix, 7 of 7 of
// these replaced the database with the output and exited 0.
func TestOutputNeverReplacesHistory(t *testing.T) {
	def := isolate(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	for _, p := range []string{db, def} {
		if code, _, errs := ctxlab(t, "import", testRunFile, "--db", p); code != 0 {
			t.Fatalf("import into %s: %d %s", p, code, errs)
		}
	}
	link := filepath.Join(dir, "link.json")
	hard := filepath.Join(dir, "hard.json")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(db, hard); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{ // -o → what the message must name
		db:                                      db,
		link:                                    db,
		filepath.Join(dir, "sub", "..", "h.db"): db,
		hard:                                    db,
		db + "-wal":                             db + "-wal",
		db + "-shm":                             db + "-shm",
	}
	commands := [][]string{
		{"run", "pingpong/goroutine/chan/gomaxprocs=1", "--reps", "1", "--format", "json"},
		{"show", "last"},
		{"export", "last"},
		{"report", "last"},
		{"compare", "last", "last"},
	}
	for _, cmd := range commands {
		for out, named := range targets {
			args := append(append([]string{}, cmd...), "--db", db, "-o", out)
			code, stdout, errs := ctxlab(t, args...)
			if code != 2 || stdout != "" || !strings.Contains(errs, "-o "+out) || !strings.Contains(errs, named) || !strings.Contains(errs, "history") {
				t.Errorf("%s: exit %d, stdout %.80q, stderr %q; want exit 2 naming -o %s and %s", strings.Join(args, " "), code, stdout, errs, out, named)
			}
		}
		// The default history, with no --db.
		args := append(append([]string{}, cmd...), "-o", def)
		if code, _, errs := ctxlab(t, args...); code != 2 || !strings.Contains(errs, "the history database") {
			t.Errorf("%s: exit %d, %q; want exit 2: it is the default history", strings.Join(args, " "), code, errs)
		}
		// Another SQLite file: not this command's history, still a database.
		args = append(append([]string{}, cmd...), "--db", db, "-o", def)
		if code, _, errs := ctxlab(t, args...); code != 2 || !strings.Contains(errs, "is a SQLite database") {
			t.Errorf("%s: exit %d, %q; want exit 2: it is a SQLite database", strings.Join(args, " "), code, errs)
		}
	}
	for _, p := range []string{db, def} {
		s, err := store.Open(p)
		if err != nil {
			t.Fatalf("%s after the refusals: %v", p, err)
		}
		entries, err := s.List(context.Background(), 0)
		s.Close()
		if err != nil || len(entries) != 1 {
			t.Errorf("%s after the refusals: %d runs, %v; want the 1 imported", p, len(entries), err)
		}
	}
}

// TestOutputProvenBeforeTheWork: a target that can be created but not
// replaced (chattr +i), or a directory that takes no rename (chattr +a),
// is refused up front, with exit 2 and nothing measured or stored. Before,
// the rename failed with exit 1 after the run was measured and stored.
func TestOutputProvenBeforeTheWork(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	imm := filepath.Join(dir, "imm.json")
	if err := os.WriteFile(imm, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chattr(imm, 0x10); err != nil {
		t.Skipf("cannot make a file immutable here (%v)", err)
	}
	t.Cleanup(func() { chattr(imm, 0) })
	ad := filepath.Join(dir, "appendonly")
	os.Mkdir(ad, 0o755)
	if err := chattr(ad, 0x20); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { chattr(ad, 0) })
	db := filepath.Join(dir, "h.db")
	for out, want := range map[string]string{imm: "immutable", filepath.Join(ad, "x.json"): "append-only"} {
		code, stdout, errs := ctxlab(t, "run", "pingpong/goroutine/chan/gomaxprocs=1", "--reps", "1", "--format", "json", "--db", db, "-o", out)
		if code != 2 || stdout != "" || !strings.Contains(errs, want) || !strings.Contains(errs, "-o "+out) {
			t.Errorf("-o %s: exit %d, stdout %.80q, stderr %q; want exit 2 saying %s", out, code, stdout, errs, want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused run created the history %s", db)
	}
	if b, _ := os.ReadFile(imm); string(b) != "old" {
		t.Errorf("the immutable target changed: %q", b)
	}
	if ents, _ := os.ReadDir(ad); len(ents) != 0 {
		t.Errorf("left in the append-only directory: %v", ents)
	}
}

// chattr sets a file's inode flags (FS_IOC_SETFLAGS), as chattr(1) does.
func chattr(path string, flags int) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags)
}

// TestOutputTemporaryFile: the temporary file exists from openOutput on,
// beside the target, and is gone after close (nothing written: the target
// is untouched) or after write (the target holds the bytes).
func TestOutputTemporaryFile(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "out.txt")
	os.WriteFile(target, []byte("old"), 0o600)
	temps := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, ".out.txt.tmp-*"))
		return len(m)
	}
	o, err := openOutput("-o", target, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if temps() != 1 {
		t.Fatalf("openOutput made %d temporary files, want 1", temps())
	}
	o.close()
	if b, _ := os.ReadFile(target); temps() != 0 || string(b) != "old" {
		t.Fatalf("after close: %d temporary files, target %q", temps(), b)
	}
	o, err = openOutput("-o", target, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if err := o.write(func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(target)
	if b, _ := os.ReadFile(target); temps() != 0 || string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("after write: %d temporary files, target %q mode %v", temps(), b, st.Mode().Perm())
	}
	var buf bytes.Buffer
	o, err = openOutput("-o", "-", "", &buf)
	if err != nil || o.file != nil {
		t.Fatalf("-o -: %v, file %v", err, o.file)
	}
	o.write(func(w io.Writer) error { _, err := w.Write([]byte("x")); return err })
	if buf.String() != "x" {
		t.Fatalf("-o - wrote %q to stdout", buf.String())
	}
}

// TestSameFile covers the roads to one file that notHistory must see.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.WriteFile(a, nil, 0o600)
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	os.Symlink(dir, filepath.Join(dir, "dirlink"))
	os.Link(a, filepath.Join(dir, "hard"))
	same := []string{
		a, filepath.Join(dir, "d", "..", "a"), filepath.Join(dir, "dirlink", "a"), filepath.Join(dir, "hard"),
		filepath.Join(dir, ".", "a"),
	}
	for _, p := range same {
		if !sameFile(p, a) {
			t.Errorf("sameFile(%s, %s) = false", p, a)
		}
	}
	// Not made yet: the same name through a linked directory.
	if !sameFile(filepath.Join(dir, "dirlink", "new-wal"), filepath.Join(dir, "new-wal")) {
		t.Errorf("a file not made yet, through a linked directory, is not seen as the same")
	}
	if sameFile(filepath.Join(dir, "b"), a) || sameFile(filepath.Join(dir, "d"), a) {
		t.Errorf("different files taken as one")
	}
	if err := notHistory("-o", filepath.Join(dir, "x.json"), a); err != nil {
		t.Errorf("a plain new file refused: %v", err)
	}
	var ue *UsageError
	if err := notHistory("-o", filepath.Join(dir, "hard"), a); !errors.As(err, &ue) {
		t.Errorf("a hard link to the history: %v, want a usage error", err)
	}
}

// A standard output that is a SQLite database, or a file SQLite keeps
// beside one (`ctxlab show last 1<>history.db`), is refused before
// anything runs, whatever --db says, and the database stays as it was;
// any other file is written.
func TestStdoutNeverADatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "other.db")
	sdb, err := sql.Open("sqlite", db)
	if err == nil {
		_, err = sdb.Exec("create table t (i integer)")
		sdb.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	wal := db + "-wal"
	os.WriteFile(wal, []byte("not a real log"), 0o600)
	text := filepath.Join(dir, "out.txt")
	os.WriteFile(text, nil, 0o600)
	for _, c := range []struct {
		path, want string
	}{
		{db, "standard output is a SQLite database"},
		{wal, "standard output is a SQLite database's write-ahead log"},
		{text, ""},
	} {
		before, _ := os.ReadFile(c.path)
		f, err := os.OpenFile(c.path, os.O_RDWR, 0) // as the shell's 1<>
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		code := Main([]string{"list"}, f, &errb)
		f.Close()
		after, _ := os.ReadFile(c.path)
		switch {
		case c.want == "" && (code != 0 || len(after) == 0):
			t.Errorf("stdout %s: exit %d, %d bytes written; want the listing", filepath.Base(c.path), code, len(after))
		case c.want != "" && (code != 2 || !strings.Contains(errb.String(), c.want) || !bytes.Equal(before, after)):
			t.Errorf("stdout %s: exit %d, %q, unchanged %v; want 2 naming %q and the file as it was", filepath.Base(c.path), code, errb.String(), bytes.Equal(before, after), c.want)
		}
	}
}

// An interrupted run that wrote its results so far to -o says so, not
// "results so far are above"; both exit 130.
func TestInterruptedSaysWhereTheResultsAre(t *testing.T) {
	for _, c := range []struct{ output, want string }{
		{"", "ctxlab: interrupted; results so far are above"},
		{"-", "ctxlab: interrupted; results so far are above"},
		{"run.json", "ctxlab: interrupted; results so far are in run.json"},
	} {
		root := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return interruptedErr(c.output) }}
		var errb bytes.Buffer
		if code := execute(root, nil, nil, &errb); code != 130 || strings.TrimSpace(errb.String()) != c.want {
			t.Errorf("-o %q: exit %d, %q; want 130 and %q", c.output, code, errb.String(), c.want)
		}
	}
}

// Standard output opened on the history the command is about to use —
// `1<>X.db --db X.db`, where X.db is empty until the run is stored, or
// `1<>history.db` on the default one — is refused by device and inode
// before anything runs (exit 2), and the history passes SQLite's
// integrity check afterwards. Before, diagnose --vary stored its run and
// then wrote its JSON over it, exit 0.
func TestStdoutNeverTheHistory(t *testing.T) {
	def := isolate(t)
	if code, _, errs := ctxlab(t, "import", testRunFile, "--db", def); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	empty := filepath.Join(t.TempDir(), "X.db")
	for _, c := range []struct {
		db   string
		args []string
	}{
		{empty, []string{"diagnose", "--vary", "T=1,2", "--reps", "1", "--settle", "0", "--format", "json", "--db", empty, "--", "true"}},
		{empty, []string{"show", "last", "--format", "json", "--db", empty}},
		{def, []string{"show", "last", "--format", "json"}},
		{def, []string{"diagnose", "--vary", "T=1,2", "--reps", "1", "--settle", "0", "--format", "json", "--", "true"}},
	} {
		f, err := os.OpenFile(c.db, os.O_RDWR|os.O_CREATE, 0o600) // as the shell's 1<>
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		code := Main(c.args, f, &errb)
		f.Close()
		if code != 2 || !strings.Contains(errb.String(), "standard output is ") || !strings.Contains(errb.String(), c.db) {
			t.Errorf("%s with stdout on %s: exit %d, %q; want 2 naming it", strings.Join(c.args, " "), c.db, code, errb.String())
		}
		if st, _ := os.Stat(c.db); st.Size() == 0 {
			continue // nothing was stored, nothing written: still empty
		}
		sdb, err := sql.Open("sqlite", c.db)
		if err != nil {
			t.Fatal(err)
		}
		var ok string
		err = sdb.QueryRow("PRAGMA integrity_check").Scan(&ok)
		sdb.Close()
		if err != nil || ok != "ok" {
			t.Errorf("%s after %s: integrity_check %q, %v", c.db, strings.Join(c.args, " "), ok, err)
		}
	}
}
