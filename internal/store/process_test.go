package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ctxlab/ctxlab/internal/testhome"
)

// TestMain lets the test binary act as a second ctxlab process writing to
// the same store (see TestTwoProcessesWrite).
func TestMain(m *testing.M) {
	if path := os.Getenv("CTXLAB_STORE_TEST_WRITER"); path != "" {
		os.Exit(writer(path, os.Getenv("CTXLAB_STORE_TEST_PREFIX")))
	}
	os.Exit(testhome.Main(m))
}

func writer(path, prefix string) int {
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	for i := 0; i < 10; i++ {
		if err := s.Save(context.Background(), testRun(fmt.Sprintf("%s-%02d", prefix, i), 30), SourceRun); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func TestTwoProcessesWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	var cmds []*exec.Cmd
	for _, prefix := range []string{"p1", "p2"} {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), "CTXLAB_STORE_TEST_WRITER="+path, "CTXLAB_STORE_TEST_PREFIX="+prefix)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("writer process: %v", err)
		}
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
	if len(es) != 20 {
		t.Fatalf("stored %d runs from two processes, want 20", len(es))
	}
}
