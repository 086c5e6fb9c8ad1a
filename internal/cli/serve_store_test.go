package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
