package sqlop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	mk := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Join(p, "sub"), 0o700)
		old := time.Now().Add(-age)
		os.Chtimes(p, old, old)
		return p
	}
	gone := mk(tempPrefix+strconv.Itoa(dead.Process.Pid)+"-123", 0)
	mine := mk(tempPrefix+strconv.Itoa(os.Getpid())+"-456", 0)
	init1 := mk(tempPrefix+"1-789", 0) // PID 1 always runs
	oldLegacy := mk(tempPrefix+"987654321", 48*time.Hour)
	newLegacy := mk(tempPrefix+"123456789", time.Minute)
	other := mk("something-else", 48*time.Hour)
	if n := RemoveStale(dir); n != 2 {
		t.Errorf("removed %d directories, want 2", n)
	}
	for p, want := range map[string]bool{gone: false, oldLegacy: false, mine: true, init1: true, newLegacy: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
