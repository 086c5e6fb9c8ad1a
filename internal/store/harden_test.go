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
	"syscall"
	"testing"
	"time"
)

// The history holds command lines and the host name: its directory is
// created 0700 and the file 0600.
func TestNewStoreIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "ctxlab")
	path := filepath.Join(dir, "history.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Dir(dir): 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s has mode %v, want at most %v", p, got, want)
		}
	}
}

// A path that cannot hold a store is ErrUnusable and says why.
func TestUnusablePaths(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro.db")
	os.WriteFile(ro, nil, 0o400)
	rodir := filepath.Join(dir, "rodir")
	os.Mkdir(rodir, 0o500)
	cases := map[string]string{dir: "directory", filepath.Join(ro, "x.db"): "not a directory"}
	if os.Geteuid() != 0 {
		cases[ro] = "permission denied"
		cases[filepath.Join(rodir, "h.db")] = "permission denied"
	}
	for p, want := range cases {
		_, err := Open(p)
		if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v; want ErrUnusable mentioning %q", p, err, want)
		}
	}
}

// While another connection holds the write lock, a save waits, and gives
// up within a retry step once its context is cancelled (Ctrl-C).
func TestWaitForLockIsInterruptible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	holder, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`INSERT INTO ctxlab_schema(version, applied) VALUES (0, 'lock')`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	start := time.Now()
	err = s.Save(ctx, testRun("locked", 1), SourceRun)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Save under a held lock = %v, want context.Canceled", err)
	}
	// Generous for a loaded machine; without the Go-side wait this took
	// the whole busy timeout (20 s).
	if took > 5*time.Second {
		t.Fatalf("Save noticed the cancel only after %v", took)
	}
	tx.Rollback()
	if err := s.Save(context.Background(), testRun("after", 1), SourceRun); err != nil {
		t.Fatalf("Save after the lock was released: %v", err)
	}
}

// Many processes' first open of one new file at once (each its own
// connection pool): every open and every save succeeds. PRAGMA
// journal_mode=WAL used to fail at once with "database is locked".
func TestFreshFileManyOpeners(t *testing.T) {
	rounds := 5
	if testing.Short() {
		rounds = 2
	}
	for r := 0; r < rounds; r++ {
		path := filepath.Join(t.TempDir(), "history.db")
		const openers = 12
		var wg sync.WaitGroup
		errs := make(chan error, openers)
		for i := 0; i < openers; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s, err := Open(path)
				if err != nil {
					errs <- err
					return
				}
				defer s.Close()
				errs <- s.Save(context.Background(), testRun(fmt.Sprintf("r%d-%02d", r, i), 3), SourceImport)
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		es, err := s.List(context.Background(), 0)
		var ok string
		s.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok)
		s.Close()
		if err != nil || len(es) != openers || ok != "ok" {
			t.Fatalf("round %d: %d runs stored (want %d), integrity %q, %v", r, len(es), openers, ok, err)
		}
	}
}

// A FIFO as the history is refused at once: opening it would block until
// some writer came, and Ctrl-C could not end the wait.
func TestFIFOIsUnusable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := Open(path)
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Open(fifo) = %v, want ErrUnusable: not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open(fifo) blocked")
	}
}

// TestFullDiskLeavesNoEmptyHistory: a new history on a full file system is
// refused in words that say so, and leaves no 0-byte history.db behind
// (it read "disk I/O error (4874)" and left one). It needs a small tmpfs,
// so root.
func TestFullDiskLeavesNoEmptyHistory(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	fill, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := fill.Write(buf); err != nil {
			break
		}
	}
	fill.Close()
	path := filepath.Join(dir, "history.db")
	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("opened a new history on a full file system")
	}
	if !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), path) {
		t.Errorf("error %q; want it to name %s and say the file system is full", err, path)
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("left %s behind", path+suffix)
		}
	}
}
