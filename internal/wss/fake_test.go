package wss

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// fakeProc is a /proc with one process, 100, of two threads: its stat
// (utime in clock ticks), smaps_rollup (Referenced), clear_refs and each
// thread's schedstat, rewritten as a test moves it on.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc {
	f := &fakeProc{t: t, root: t.TempDir()}
	for _, d := range []string{"100/task/100", "100/task/101"} {
		if err := os.MkdirAll(filepath.Join(f.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.write("100/clear_refs", "")
	return f
}

func (f *fakeProc) write(name, body string) {
	if err := os.WriteFile(filepath.Join(f.root, name), []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// set is the process's state: its CPU time in clock ticks, each thread's
// CPU time in ns, and what smaps_rollup says was referenced.
func (f *fakeProc) set(utime int, thread0, thread1 uint64, referencedKiB int) {
	f.write("100/stat", fmt.Sprintf("100 (touch) R 1 100 100 0 -1 4194304 100 0 0 0 %d 0 0 0 20 0 2 0 5000 3133440 4096 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 4 5 6 7 8 9 10 0\n", utime))
	f.write("100/smaps_rollup", fmt.Sprintf("00400000-7ffc0000 ---p 00000000 00:00 0 [rollup]\nRss: 16384 kB\nPss: 16384 kB\nReferenced: %d kB\nAnonymous: 16000 kB\nSwap: 0 kB\n", referencedKiB))
	f.write("100/task/100/schedstat", fmt.Sprintf("%d 0 10\n", thread0))
	f.write("100/task/101/schedstat", fmt.Sprintf("%d 0 10\n", thread1))
}

// Each tick closes one interval and opens the next: clear_refs gets "1",
// Referenced is read back, the busy threads are counted and found alike.
func TestTicksOnAFakeProc(t *testing.T) {
	f := newFakeProc(t)
	f.set(0, 0, 0, 0)
	s := Start(procstat.Root(f.root), 100, true)
	if s.Unsupported() != "" {
		t.Fatalf("unsupported: %s", s.Unsupported())
	}
	for i, ref := range []int{0, 8000, 9000, 8500} { // KiB referenced at each tick
		// 1000 s of program CPU: the budget never refuses.
		f.set(100000+i, uint64(i)*1e8, uint64(i)*1.5e8, ref)
		s.Tick()
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "100/clear_refs")); string(b) != "1" {
		t.Errorf("clear_refs got %q, want 1", b)
	}
	r := s.Stop()
	if !r.OK() || r.Intervals != 3 || r.MedianBytes != 8500<<10 || r.MaxBytes != 9000<<10 || r.RSSBytes != 16384<<10 {
		t.Fatalf("reading %+v", r)
	}
	if r.BusyThreads != 2 || !r.Alike || r.PerThreadBytes != 8500<<9 || r.Skipped != 0 {
		t.Errorf("threads: %+v", r)
	}
	if r.CostNs == 0 || r.CostShare <= 0 || r.CostShare > Budget {
		t.Errorf("cost %d ns, share %v", r.CostNs, r.CostShare)
	}
}

// A program that uses next to no CPU is not sampled: the budget refuses
// every interval, ctxlab backs off reading it, and the reading is
// unsupported with the reason, never a working set of 0.
func TestBudgetRefusesAnIdleProgram(t *testing.T) {
	f := newFakeProc(t)
	f.set(0, 0, 0, 100)
	s := Start(procstat.Root(f.root), 100, true)
	for range 20 {
		s.Tick()
	}
	r := s.Stop()
	if r.OK() || r.MedianBytes != 0 || r.Skipped != 20 || !strings.Contains(r.Unsupported, "too little for one reading within 2.0% of it") {
		t.Errorf("idle program: %+v", r)
	}
	if s.wait == 0 && s.backoff < 4 {
		t.Errorf("no backing off: wait %d backoff %d", s.wait, s.backoff)
	}
}

// A process whose clear_refs cannot be opened for writing is unsupported,
// with the file and the reason.
func TestClearRefsNotWritable(t *testing.T) {
	f := newFakeProc(t)
	f.set(100, 0, 0, 100)
	if err := os.Remove(filepath.Join(f.root, "100/clear_refs")); err != nil {
		t.Fatal(err)
	}
	got := Start(procstat.Root(f.root), 100, true).Unsupported()
	if !strings.HasPrefix(got, "/proc/100/clear_refs: not there") {
		t.Errorf("no clear_refs: %q", got)
	}
}
