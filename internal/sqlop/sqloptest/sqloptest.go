// Package sqloptest holds the fixtures that the tests of a user's query
// share (sqlop's and the experiments'): a user's database made by the
// test, and its files' state before and after a run. Tests only.
package sqloptest

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // registers database/sql driver "sqlite"
)

// ShopDB makes a database of a user's shape in a temp dir (never
// shipped): shop.db, whose table orders has rows rows keyed by order_id
// (1 to rows), with a customer and a total each. The same rows give the
// same bytes.
func ShopDB(t testing.TB, rows int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"create table orders (order_id integer primary key, customer text, total real)",
		fmt.Sprintf("with recursive n(i) as (select 1 union all select i + 1 from n where i < %d) insert into orders select i, 'c' || (i %% 17), i * 1.5 from n", rows),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// Files are files' bytes and mtimes, by path, or that they are missing.
type Files map[string]fileState

type fileState struct {
	data  []byte
	mtime int64
	ok    bool
}

// Snapshot reads the files at paths as they are now; a missing one is
// recorded as missing.
func Snapshot(paths ...string) Files {
	out := Files{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		st, err2 := os.Stat(p)
		if err == nil && err2 == nil {
			out[p] = fileState{data, st.ModTime().UnixNano(), true}
		} else {
			out[p] = fileState{}
		}
	}
	return out
}

// Same fails t, saying what, for each file of before that after has
// otherwise: appeared or gone, other bytes, another mtime.
func Same(t testing.TB, what string, before, after Files) {
	t.Helper()
	for p, b := range before {
		a := after[p]
		if b.ok != a.ok || !bytes.Equal(b.data, a.data) || b.mtime != a.mtime {
			t.Errorf("%s: %s changed (exists %v → %v, %d → %d bytes, mtime %d → %d)", what, filepath.Base(p), b.ok, a.ok, len(b.data), len(a.data), b.mtime, a.mtime)
		}
	}
}
