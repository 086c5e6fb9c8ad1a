package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

func testRun(id string, arms int) *result.Run {
	r := &result.Run{Schema: result.SchemaVersion, ID: id, Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Suite: "quick", Env: result.Env{Hostname: "h1"}}
	for i := 0; i < arms; i++ {
		r.Arms = append(r.Arms, result.Arm{Name: fmt.Sprintf("pingpong/a%d", i), Experiment: "pingpong",
			Substrate: "thread", Status: result.StatusOK, Median: float64(1000 + i), Unit: "ns/op",
			RepMeans: []float64{1000, 1001, 999}, Noise: result.Noise{Noisy: i == 0}})
	}
	return r
}

func TestSaveGetList(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "sub", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"20261130T120000-aaaaaa", "20261130T120100-bbbbbb"} {
		if err := s.Save(ctx, testRun(id, 3), SourceRun); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(ctx, testRun("20261130T120000-aaaaaa", 3), SourceRun); !errors.Is(err, ErrExists) {
		t.Fatalf("saving twice: got %v, want ErrExists", err)
	}
	es, err := s.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].ID != "20261130T120100-bbbbbb" || es[0].Arms != 3 || es[0].Noisy != 1 || es[0].Source != SourceRun {
		t.Fatalf("list: %+v", es)
	}
	for ref, want := range map[string]string{"last": "20261130T120100-bbbbbb", "last~1": "20261130T120000-aaaaaa",
		"20261130T1200": "20261130T120000-aaaaaa", "20261130T120100-bbbbbb": "20261130T120100-bbbbbb"} {
		got, err := s.Resolve(ctx, ref)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if _, err := s.Resolve(ctx, "2026"); err == nil || !strings.Contains(err.Error(), "matches 2 runs") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := s.Resolve(ctx, "last~5"); !errors.Is(err, ErrNotFound) {
		t.Errorf("last~5: %v", err)
	}
	if _, err := s.Resolve(ctx, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("zzz: %v", err)
	}
	r, err := s.Get(ctx, "last")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Arms) != 3 || r.Arms[2].Median != 1002 || len(r.Arms[0].RepMeans) != 3 {
		t.Fatalf("round trip lost data: %+v", r.Arms)
	}
}

// Two writers with their own connections, as two ctxlab processes would
// have, both succeed and every run lands.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	const writers, each = 2, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s, err := Open(path) // both may create the file at once
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for i := 0; i < each; i++ {
				if err := s.Save(context.Background(), testRun(fmt.Sprintf("w%d-%02d", w, i), 20), SourceRun); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	es, err := s.List(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != writers*each {
		t.Fatalf("stored %d runs, want %d", len(es), writers*each)
	}
	for _, e := range es {
		if e.Arms != 20 {
			t.Errorf("run %s has %d arms, want 20", e.ID, e.Arms)
		}
	}
}

// A save that fails half-way (an interrupt, a full disk) leaves no part of
// the run behind.
func TestInterruptedSaveLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Open(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.afterArm = func(i int) error {
		if i == 2 {
			cancel() // as Ctrl-C would
			return context.Canceled
		}
		return nil
	}
	if err := s.Save(ctx, testRun("r1", 5), SourceRun); err == nil {
		t.Fatal("interrupted save reported success")
	}
	s.afterArm = nil
	var runs, arms int
	s.db.QueryRow(`SELECT count(*) FROM runs`).Scan(&runs)
	s.db.QueryRow(`SELECT count(*) FROM arms`).Scan(&arms)
	if runs != 0 || arms != 0 {
		t.Fatalf("partial run left behind: %d runs, %d arms", runs, arms)
	}
	// A cancelled context before the save starts stores nothing either.
	if err := s.Save(ctx, testRun("r2", 5), SourceRun); err == nil {
		t.Fatal("save with a cancelled context reported success")
	}
	if err := s.Save(context.Background(), testRun("r3", 5), SourceRun); err != nil {
		t.Fatal(err)
	}
}

func TestForeignFileUntouched(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.db")
	content := []byte("my precious notes, not a database\n")
	os.WriteFile(text, content, 0o644)
	if _, err := Open(text); !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), "not SQLite") {
		t.Fatalf("text file: got %v", err)
	}
	if b, _ := os.ReadFile(text); string(b) != string(content) {
		t.Fatal("the foreign file was modified")
	}

	// A SQLite database of another program.
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(other)
	if _, err := Open(other); !errors.Is(err, ErrNotStore) || !strings.Contains(err.Error(), "another program") {
		t.Fatalf("foreign sqlite: got %v", err)
	}
	if after, _ := os.ReadFile(other); string(after) != string(before) {
		t.Fatal("the foreign database was modified")
	}

	// SQLite header, garbage after it (a corrupt file).
	corrupt := filepath.Join(dir, "corrupt.db")
	bad := append([]byte(sqliteMagic), make([]byte, 200)...)
	for i := range bad[16:] {
		bad[16+i] = 0xff
	}
	os.WriteFile(corrupt, bad, 0o644)
	if _, err := Open(corrupt); err == nil {
		t.Fatal("corrupt file opened")
	}
	if b, _ := os.ReadFile(corrupt); string(b) != string(bad) {
		t.Fatal("the corrupt file was modified")
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory: %v", err)
	}
}

// A store written by the previous schema version is migrated in place and
// keeps its runs.
func TestMigrateFromPreviousVersion(t *testing.T) {
	if Version < 2 {
		t.Skip("only one schema version")
	}
	path := filepath.Join(t.TempDir(), "history.db")
	old, err := open(context.Background(), path, Version-1)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := old.SchemaVersion(); v != Version-1 {
		t.Fatalf("old store at version %d", v)
	}
	// Write a run the way the previous version did (no source column).
	r := testRun("old-run", 2)
	doc := `{"schema":1,"id":"old-run","time":"2026-11-29T10:00:00Z","suite":"quick","env":{"hostname":"h0"},"arms":[{"name":"pingpong/a0","experiment":"pingpong","status":"ok","median":5,"unit":"ns/op","noise":{"noisy":false}}]}`
	if _, err := old.db.Exec(`INSERT INTO runs(id, time, host, suite, schema, doc) VALUES ('old-run', '2026-11-29T10:00:00Z', 'h0', 'quick', 1, ?)`, doc); err != nil {
		t.Fatal(err)
	}
	old.db.Exec(`INSERT INTO arms VALUES ('old-run', 'pingpong/a0', 'pingpong', 'thread', 'ok', 5, 'ns/op', 0)`)
	old.Close()
	_ = r

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != Version {
		t.Fatalf("migrated store at version %d, want %d", v, Version)
	}
	es, err := s.List(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].ID != "old-run" || es[0].Source != SourceRun || es[0].Arms != 1 {
		t.Fatalf("after migration: %+v", es)
	}
	got, err := s.Get(context.Background(), "old-run")
	if err != nil || got.Arms[0].Median != 5 {
		t.Fatalf("get after migration: %v %+v", err, got)
	}
	if err := s.Save(context.Background(), testRun("new-run", 1), SourceImport); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.db.Exec(`INSERT INTO ctxlab_schema VALUES (?, 'future')`, Version+1)
	s.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/x/data")
	if p, _ := DefaultPath(); p != "/x/data/ctxlab/history.db" {
		t.Errorf("with XDG_DATA_HOME: %s", p)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.local/share/ctxlab/history.db" {
		t.Errorf("fallback: %s", p)
	}
}

// Prune removes exactly the named suite's measured runs from before the
// cutoff, with their arms, whatever the stored time's fractional digits;
// imported runs stay.
func TestPruneSuiteBeforeCutoff(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cut := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	runs := []struct {
		id, suite, source string
		at                time.Time
		kept              bool
	}{
		{"old-serve", "serve", SourceRun, cut.Add(-24 * time.Hour), false},
		{"just-before", "serve", SourceRun, cut.Add(-time.Nanosecond), false},
		{"whole-second-before", "serve", SourceRun, cut.Add(-time.Second), false},
		{"at-cutoff", "serve", SourceRun, cut, true},
		{"same-second-after", "serve", SourceRun, cut.Add(500 * time.Millisecond), true},
		{"after", "serve", SourceRun, cut.Add(time.Hour), true},
		{"old-quick", "quick", SourceRun, cut.Add(-24 * time.Hour), true},
		{"imported-old-serve", "serve", SourceImport, cut.Add(-24 * time.Hour), true},
		{"imported-without-time", "serve", SourceImport, time.Time{}, true},
	}
	for _, r := range runs {
		run := testRun(r.id, 2)
		run.Suite, run.Time = r.suite, r.at
		if err := s.Save(ctx, run, r.source); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Prune(ctx, "serve", SourceRun, cut)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("pruned %d runs, want 3", n)
	}
	for _, r := range runs {
		_, err := s.Get(ctx, r.id)
		if got := err == nil; got != r.kept {
			t.Errorf("run %s (%s, %s): kept %v, want %v (err %v)", r.id, r.suite, r.at.Format(time.RFC3339Nano), got, r.kept, err)
		}
	}
	var arms int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM arms WHERE run_id NOT IN (SELECT id FROM runs)`).Scan(&arms); err != nil {
		t.Fatal(err)
	}
	if arms != 0 {
		t.Errorf("%d arms of pruned runs left behind", arms)
	}
	if n, err := s.Prune(ctx, "serve", SourceRun, cut); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v; want 0, nil", n, err)
	}
}
