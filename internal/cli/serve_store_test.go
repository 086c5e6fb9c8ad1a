package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
)

func TestServeDBRefusesAForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(path, []byte("my notes\n"), 0o644)
	var out, errb bytes.Buffer
	code := Main([]string{"serve", "--db", path, "--listen", "127.0.0.1:19477"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), path) {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if b, _ := os.ReadFile(path); string(b) != "my notes\n" {
		t.Fatal("the foreign file was changed")
	}
}

// serve --db saves each probe cycle as a run the history can show.
func TestServeDBSavesCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ctxlab serve as a subprocess")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	db := filepath.Join(t.TempDir(), "h.db")
	cmd := exec.Command(os.Args[0], "serve", "--listen", addr, "--db", db, "--interval", "5s",
		"--probes", "pingpong/goroutine/chan/gomaxprocs=1")
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(60 * time.Second)
	var n int
	for time.Now().Before(deadline) && n == 0 {
		time.Sleep(200 * time.Millisecond)
		if s, err := store.Open(db); err == nil {
			runs, _ := s.List(context.Background(), 10)
			n = len(runs)
			s.Close()
		}
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if n == 0 {
		t.Fatalf("no probe cycle stored in %s; stderr:\n%s", db, errb.String())
	}
}

// serve --db deletes its own cycles older than --db-retention as it saves
// a new one, and leaves every other run in the file alone.
func TestServeDBPrunesOldCycles(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "h.db")
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	old := []struct{ id, suite string }{{"20261101T000000-aaaaaa", "serve"}, {"20261101T000000-bbbbbb", "quick"}}
	for _, r := range old {
		run := &result.Run{Schema: result.SchemaVersion, ID: r.id, Time: now.Add(-2 * time.Hour), Suite: r.suite}
		if err := s.Save(ctx, run, store.SourceRun); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	for _, tc := range []struct {
		retention time.Duration
		kept      []string
		pruned    int
	}{
		{0, []string{"20261101T000000-aaaaaa", "20261101T000000-bbbbbb"}, 0}, // 0 keeps every cycle
		{3 * time.Hour, []string{"20261101T000000-aaaaaa", "20261101T000000-bbbbbb"}, 0},
		{time.Hour, []string{"20261101T000000-bbbbbb"}, 1},
	} {
		o := &ServeOptions{DB: db, DBRetention: tc.retention}
		if err := applyServeStore(o); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("20261201T%06d-cccccc", tc.retention/time.Minute)
		saved, err := o.Serve.Save(&result.Run{Schema: result.SchemaVersion, ID: id, Time: now, Suite: "serve"})
		if err != nil {
			t.Fatal(err)
		}
		if saved.Pruned != tc.pruned {
			t.Errorf("retention %v: %d cycles pruned, want %d", tc.retention, saved.Pruned, tc.pruned)
		}
		// Closed after the save: the size is the file's, its log folded in.
		fi, err := os.Stat(db)
		if err != nil {
			t.Fatal(err)
		}
		if saved.DBBytes != fi.Size() || saved.DBBytes <= 0 {
			t.Errorf("retention %v: database size %d, want the file's %d", tc.retention, saved.DBBytes, fi.Size())
		}
		s, err := store.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range old {
			_, err := s.Get(ctx, r.id)
			want := slices.Contains(tc.kept, r.id)
			if (err == nil) != want {
				t.Errorf("retention %v: %s run %s kept %v, want %v", tc.retention, r.suite, r.id, err == nil, want)
			}
		}
		if _, err := s.Get(ctx, id); err != nil {
			t.Errorf("retention %v: the new cycle was not kept: %v", tc.retention, err)
		}
		s.Close()
	}
}

// --db-retention takes 0 (keep every cycle) and 1h..3650d with --db, in
// Prometheus's units, and shows whole days as days.
func TestDBRetentionAccepted(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
		show string
	}{
		{"0", 0, "0s"},
		{"1h", time.Hour, "1h"},
		{"7d", 7 * 24 * time.Hour, "7d"},
		{"2w", 14 * 24 * time.Hour, "14d"},
		{"1d12h", 36 * time.Hour, "1d12h"},
		{"3650d", 3650 * 24 * time.Hour, "3650d"},
	} {
		o := &ServeOptions{DB: "h.db", dbRetentionSet: true}
		if err := (retentionValue{&o.DBRetention}).Set(tc.arg); err != nil {
			t.Errorf("--db-retention %s: %v", tc.arg, err)
			continue
		}
		if o.DBRetention != tc.want {
			t.Errorf("--db-retention %s: %v, want %v", tc.arg, o.DBRetention, tc.want)
		}
		if err := checkDBRetention(o); err != nil {
			t.Errorf("--db-retention %s refused: %v", tc.arg, err)
		}
		if got := (retentionValue{&o.DBRetention}).String(); got != tc.show {
			t.Errorf("--db-retention %s shows as %q, want %q", tc.arg, got, tc.show)
		}
	}
}

// While another process holds the history open, the write-ahead log
// stays beside the file after a save, and the size counts it.
func TestServeDBSizeCountsLeftLog(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	o := &ServeOptions{DB: db, DBRetention: time.Hour}
	if err := applyServeStore(o); err != nil {
		t.Fatal(err)
	}
	other, err := store.Open(db) // the other reader (ctxlab history, say)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.SchemaVersion(); err != nil { // make it really open the file
		t.Fatal(err)
	}
	saved, err := o.Serve.Save(&result.Run{Schema: result.SchemaVersion, ID: "20261201T000000-dddddd", Time: time.Now().UTC(), Suite: "serve"})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("%v: the log should stay while another connection is open", err)
		}
		want += fi.Size()
	}
	if saved.DBBytes != want {
		t.Errorf("database size %d, want %d (the file, its log and its index)", saved.DBBytes, want)
	}
}
