package sqlop

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Every operation that this build supports returns Want(id) for known keys,
// in one step and split into execute + fetch.
func TestOpsReturnTheRightRow(t *testing.T) {
	for _, op := range Ops() {
		t.Run(op, func(t *testing.T) {
			if why := Unsupported(op); why != "" {
				t.Skipf("unsupported in this build: %s", why)
			}
			s, err := NewSource(op)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			h, err := s.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			for _, id := range []int64{1, 2, 500, Rows} {
				v, err := h.Lookup(id)
				if err != nil || v != Want(id) {
					t.Fatalf("Lookup(%d) = %d, %v; want %d", id, v, err, Want(id))
				}
				c, err := h.Exec(id)
				if err != nil {
					t.Fatalf("Exec(%d): %v", id, err)
				}
				if v, err := c.Fetch(); err != nil || v != Want(id) {
					t.Fatalf("Exec+Fetch(%d) = %d, %v; want %d", id, v, err, Want(id))
				}
			}
			if op != "cgo-call" {
				if _, err := h.Lookup(Rows + 1); err == nil {
					t.Errorf("Lookup(%d) of a missing key: no error", Rows+1)
				}
			}
		})
	}
}

func TestKeyCoversEveryRow(t *testing.T) {
	seen := map[int64]bool{}
	for i := 0; i < Rows; i++ {
		k := Key(i)
		if k < 1 || k > Rows {
			t.Fatalf("Key(%d) = %d, outside 1..%d", i, k, Rows)
		}
		seen[k] = true
	}
	if len(seen) != Rows {
		t.Errorf("Key over %d calls hits %d distinct rows, want %d", Rows, len(seen), Rows)
	}
}

// A file source keeps its database in a temp dir that Close removes, even
// with handles still open, and a second Close is harmless.
func TestFileSourceRemovesTempDir(t *testing.T) {
	for _, op := range []string{"modernc-file", "mattn-file", "modernc-file-prepared", "mattn-file-prepared"} {
		if Unsupported(op) != "" {
			continue
		}
		s, err := NewSource(op)
		if err != nil {
			t.Fatal(err)
		}
		if s.Dir == "" {
			t.Fatalf("%s: no temp dir", op)
		}
		if _, err := os.Stat(s.Dir); err != nil {
			t.Fatalf("%s: temp dir missing while open: %v", op, err)
		}
		h, err := s.Open()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		h.Close()
		if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
			t.Errorf("%s: temp dir %s still there after Close (stat: %v)", op, s.Dir, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestMemoryHandlesAreIndependent(t *testing.T) {
	s, err := NewSource("modernc-memory")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, _ := s.Open()
	b, _ := s.Open()
	defer a.Close()
	defer b.Close()
	for _, h := range []Handle{a, b} {
		if v, err := h.Lookup(7); err != nil || v != Want(7) {
			t.Fatalf("Lookup(7) = %d, %v", v, err)
		}
	}
}

func TestUnknownAndUnsupported(t *testing.T) {
	if _, err := NewSource("postgres"); err == nil {
		t.Error("NewSource(postgres): no error")
	}
	if Unsupported("postgres") == "" {
		t.Error("Unsupported(postgres) is empty")
	}
	if CgoUnsupported != "" {
		for _, op := range []string{"mattn-memory", "mattn-file", "cgo-call"} {
			if got := Unsupported(op); got != CgoUnsupported {
				t.Errorf("Unsupported(%s) = %q, want %q", op, got, CgoUnsupported)
			}
			if _, err := NewSource(op); !errors.Is(err, ErrUnsupported) {
				t.Errorf("NewSource(%s) = %v, want ErrUnsupported", op, err)
			}
		}
	}
}

// The plain SQLite ops make a fresh query per lookup, as the seed's
// execute(...).fetchone(); only the -prepared ops hold a statement. Each
// driver has all four: file and :memory:, fresh and prepared.
func TestFreshQueryUnlessPrepared(t *testing.T) {
	ops := map[string]bool{}
	for _, op := range Ops() {
		ops[op] = true
	}
	for _, drv := range []string{"modernc", "mattn"} {
		for _, store := range []string{"file", "memory"} {
			for _, suffix := range []string{"", "-prepared"} {
				op := drv + "-" + store + suffix
				if !ops[op] {
					t.Errorf("no operation %s", op)
					continue
				}
				if !strings.Contains(Doc(op), map[bool]string{false: "a fresh query per lookup", true: "prepared"}[suffix != ""]) {
					t.Errorf("%s: doc %q does not say how it queries", op, Doc(op))
				}
				if Unsupported(op) != "" {
					continue
				}
				s, err := NewSource(op)
				if err != nil {
					t.Fatal(err)
				}
				h, err := s.Open()
				if err != nil {
					t.Fatal(err)
				}
				if got := h.(*sqlHandle).stmt != nil; got != (suffix != "") {
					t.Errorf("%s: holds a prepared statement = %v", op, got)
				}
				h.Close()
				s.Close()
			}
		}
	}
}

// The built-in lookup is the seed's: its text, a 1 000-row table, and one
// search of the primary key's B-tree (no secondary index, no scan).
func TestLookupIsTheSeeds(t *testing.T) {
	if Query != "select v from t where id = ?" {
		t.Fatalf("Query = %q; the seed's is %q", Query, "select v from t where id = ?")
	}
	h, err := openSQL("sqlite", ":memory:", true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var n int
	if err := h.conn.QueryRowContext(bg, "select count(*) from t").Scan(&n); err != nil || n != Rows {
		t.Fatalf("rows = %d, %v; want %d", n, err, Rows)
	}
	rows, err := h.conn.QueryContext(bg, "explain query plan "+Query, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.HasPrefix(plan[0], "SEARCH t USING INTEGER PRIMARY KEY") {
		t.Errorf("query plan %q; want one step, SEARCH t USING INTEGER PRIMARY KEY", plan)
	}
	var idx int
	if err := h.conn.QueryRowContext(bg, "select count(*) from sqlite_master where type = 'index'").Scan(&idx); err != nil || idx != 0 {
		t.Errorf("%d indexes on the table (%v); the seed's has none", idx, err)
	}
}
