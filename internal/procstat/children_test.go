package procstat

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The children lists give the descendants the scan of every process
// gives, on a real tree: a shell, its children, and their child.
func TestDescendantsOfMatchesScan(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & (sleep 30 & sleep 30) & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		all, _ := DefaultRoot.Procs()
		for _, d := range Descendants(all, cmd.Process.Pid) {
			if p, err := os.FindProcess(d); err == nil {
				p.Kill()
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var got, want []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		all, err := DefaultRoot.Procs()
		if err != nil {
			t.Fatal(err)
		}
		want = Descendants(all, cmd.Process.Pid)
		if got, err = DefaultRoot.DescendantsOf(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if len(want) >= 3 && slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("children lists %v, scan %v", got, want)
}

// Without children lists (a kernel without CONFIG_PROC_CHILDREN, or a
// fake /proc) it falls back to the scan.
func TestDescendantsOfFallsBack(t *testing.T) {
	root := t.TempDir()
	for pid, ppid := range map[int]int{10: 1, 11: 10, 12: 11, 13: 1} {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(filepath.Join(dir, "task", strconv.Itoa(pid)), 0o755); err != nil {
			t.Fatal(err)
		}
		stat := strconv.Itoa(pid) + " (x) S " + strconv.Itoa(ppid) + " 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Root(root).DescendantsOf(10)
	if err != nil || !slices.Equal(got, []int{11, 12}) {
		t.Fatalf("fallback: %v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(root, "10", "task", "10", "children"), []byte("11 "), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "11", "task", "11", "children"), []byte("12"), 0o644)
	os.WriteFile(filepath.Join(root, "12", "task", "12", "children"), []byte(""), 0o644)
	if got, err := Root(root).DescendantsOf(10); err != nil || !slices.Equal(got, []int{11, 12}) {
		t.Fatalf("children lists: %v, %v", got, err)
	}
	if _, err := parseChildren([]byte("3 x")); err == nil {
		t.Error("a bad children file parsed")
	}
}

func FuzzParseChildren(f *testing.F) {
	f.Add([]byte("12 13 \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kids, err := parseChildren(b)
		for _, k := range kids {
			if err == nil && k <= 0 {
				t.Fatalf("%q gave pid %d", b, k)
			}
		}
	})
}
