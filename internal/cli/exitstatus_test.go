package cli

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The exit-status contract (README "Exit status"), one real case each:
// 0 ok; 1 the command failed, or its result could not be saved; 2 bad
// usage or input (TestBadInputCorpus has the rest); 130 interrupted.
func TestExitStatusContract(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	if code, _, errs := ctxlab(t, "import", testRunFile, "--db", db); code != 0 {
		t.Fatalf("0: import: %d %s", code, errs)
	}
	if code, _, errs := ctxlab(t, "history", "--db", db, "--limit", "0x"); code != 2 {
		t.Fatalf("2: history --limit 0x: %d %s", code, errs)
	}
	// 1: a damaged history (a run's time is not a time) is a failure of
	// the command, not bad input.
	h, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Exec(`UPDATE runs SET time = 'yesterday'`); err != nil {
		t.Fatal(err)
	}
	h.Close()
	code, out, errs := ctxlab(t, "history", "--db", db)
	if code != 1 || out != "" || !strings.Contains(errs, `bad time "yesterday"`) {
		t.Fatalf("1: history of a damaged store: %d %q %q", code, out, errs)
	}
}

// A run whose save fails after measuring (here the database is replaced
// by a directory between the check and the save, as a full disk or a
// removed volume would fail it) exits 1, still prints its result, and
// says where its JSON went; that file imports.
func TestUnsavedRunExitsOneAndKeepsItsJSON(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	t.Setenv("TMPDIR", dir)
	var out, errb bytes.Buffer
	o := &RunOptions{Stdout: &out, Stderr: &errb, beforeSave: func() error {
		for _, p := range []string{db, db + "-wal", db + "-shm"} {
			os.Remove(p)
		}
		return os.Mkdir(db, 0o700)
	}}
	args := []string{"pingpong/goroutine/chan/gomaxprocs=1", "--reps", "1", "--benchtime", "5ms", "--db", db}
	code := execute(newRunCmd(o), args, nil, &errb)
	errs := errb.String()
	if code != 1 || !strings.Contains(out.String(), "pingpong") || !strings.Contains(errs, "was not stored") {
		t.Fatalf("run with a failing save: exit %d, stdout %q, stderr %q", code, out.String(), errs)
	}
	m := regexp.MustCompile(`its JSON is in (\S+)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("the error does not say where the JSON went: %q", errs)
	}
	if code, _, errs := ctxlab(t, "import", m[1], "--db", filepath.Join(dir, "other.db")); code != 0 {
		t.Fatalf("importing the kept JSON %s: %d %s", m[1], code, errs)
	}
}

// While another process holds the history's write lock, Ctrl-C still ends
// ctxlab at once with 130 (it used to wait ~19 s and exit 1).
func TestInterruptWhileWaitingForTheLock(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	if code, _, errs := ctxlab(t, "import", testRunFile, "--db", db); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	holder, err := sql.Open("sqlite", "file:"+db+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM arms WHERE 0`); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.json")
	b, _ := os.ReadFile(testRunFile)
	os.WriteFile(other, []byte(strings.Replace(string(b), "20261130T120000-abc123", "20261130T120000-def456", 1)), 0o644)
	cmd := exec.Command(os.Args[0], "import", other, "--db", db)
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once it has the database open it is past start-up (its signal
	// handler is set) and waits for the lock.
	deadline := time.Now().Add(20 * time.Second)
	for !hasOpen(cmd.Process.Pid, db) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("import never opened %s; stderr %q", db, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(sent)
		ee, _ := err.(*exec.ExitError)
		if ee == nil || ee.ExitCode() != 130 {
			t.Fatalf("import interrupted while waiting for the lock: %v, want exit 130; stderr %q", err, stderr.String())
		}
		t.Logf("exit 130 %v after SIGINT", took.Round(time.Millisecond))
		if took > 3*time.Second { // a second is the promise; slack for a busy machine
			t.Errorf("exit 130 only %v after SIGINT", took)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("import ignored SIGINT while waiting for the lock; stderr %q", stderr.String())
	}
}

// hasOpen reports whether process pid has path open.
func hasOpen(pid int, path string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == path {
			return true
		}
	}
	return false
}
