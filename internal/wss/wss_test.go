package wss

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// The test program (testdata/touch) is built once, into a directory
// anyone may read: the unsupported test runs it as another user.
var touchDir string

func TestMain(m *testing.M) {
	if pid := os.Getenv("CTXLAB_WSS_SAMPLE_PID"); pid != "" { // run as another user by TestAnotherUsersProcess
		n, _ := strconv.Atoi(pid)
		fmt.Print(Start(procstat.DefaultRoot, n, true).Unsupported())
		os.Exit(0)
	}
	code := m.Run()
	if touchDir != "" {
		_ = os.RemoveAll(touchDir)
	}
	os.Exit(code)
}

func touchBinary(t *testing.T) string {
	t.Helper()
	if touchDir == "" {
		d, err := os.MkdirTemp("", "ctxlab-wss-")
		if err != nil {
			t.Fatal(err)
		}
		touchDir = d
		_ = os.Chmod(d, 0o755)
	}
	bin := filepath.Join(touchDir, "touch")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/touch").CombinedOutput()
	if err != nil {
		t.Skipf("cannot build the test program (%v): %s", err, out)
	}
	return bin
}

// sampleTouch runs the test program with T threads of W bytes each for
// secs, sampling it every interval, and returns the reading.
func sampleTouch(t *testing.T, threads int, w string, secs, interval time.Duration) *Reading {
	t.Helper()
	cmd := exec.Command(touchBinary(t), "-t", strconv.Itoa(threads), "-w", w, "-s", secs.String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s := Start(procstat.DefaultRoot, cmd.Process.Pid, true)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("test program: %v", err)
			}
			return s.Stop()
		case <-tick.C:
			s.Tick()
		}
	}
}

// The must-show: at T=2 and T=32 with W=8 MiB the working set is within
// 15% of T × W plus the program's own baseline (the same program at
// W=16 KiB, less its 2 × 16 KiB); the sampling costs at most Budget of the
// program's CPU time; with W=16 KiB the set is small and the indirect
// cost does not matter. Intervals are 500 ms so that each of 32 threads
// gets its turns on a busy 2-CPU machine; a run whose threads did not get
// the CPU to touch their sets is skipped, saying so.
func TestWorkingSetOfTouch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test program for about 12 s")
	}
	const interval = 500 * time.Millisecond
	base := sampleTouch(t, 2, "16KiB", 3*time.Second, interval)
	if !base.OK() {
		t.Fatalf("baseline: unsupported: %s", base.Unsupported)
	}
	baseline := base.MedianBytes - 2*16<<10
	t.Logf("baseline: %s touched per interval (%d intervals, RSS %s)", result.FormatBytes(float64(baseline)), base.Intervals, result.FormatBytes(float64(base.RSSBytes)))
	lines := strings.Join(base.Read(Setting{Caches: []result.Cache{{Level: 2, Type: "Unified", SizeB: result.MiB}, {Level: 3, Type: "Unified", SizeB: 32 * result.MiB, SharedCPUs: 2}},
		CPUs: 2, Switches: 100, CPUNs: 6e9, CurveWhy: "no stored run"}), "\n")
	if !strings.Contains(lines, "a small working set: the indirect cost does not matter") {
		t.Errorf("W=16KiB reading:\n%s", lines)
	}
	for _, threads := range []int{2, 32} {
		r := sampleTouch(t, threads, "8MiB", 4*time.Second, interval)
		if !r.OK() {
			t.Fatalf("T=%d: unsupported: %s", threads, r.Unsupported)
		}
		want := int64(threads)*8<<20 + baseline
		got := r.MedianBytes
		t.Logf("T=%d: %s touched per interval (max %s, %d intervals, %d busy threads, per thread %s, alike %v: %s); want %s; cost %s of %s CPU (%.2f%%), %d skipped",
			threads, result.FormatBytes(float64(got)), result.FormatBytes(float64(r.MaxBytes)), r.Intervals, r.BusyThreads,
			result.FormatBytes(float64(r.PerThreadBytes)), r.Alike, r.AlikeWhy, result.FormatBytes(float64(want)),
			result.FormatNs(float64(r.CostNs)), result.FormatNs(float64(r.ProgramCPUNs)), 100*r.CostShare, r.Skipped)
		if r.CostShare > Budget {
			t.Errorf("T=%d: sampling cost %.2f%% of the program's CPU, more than %.0f%%", threads, 100*r.CostShare, 100*Budget)
		}
		if float64(r.ProgramCPUNs) < 0.5*float64(4*time.Second) {
			t.Skipf("T=%d: the program got %s of CPU in 4 s: too little to touch its sets (a busy machine)", threads, result.FormatNs(float64(r.ProgramCPUNs)))
		}
		if d := float64(got-want) / float64(want); d > 0.15 || d < -0.15 {
			t.Errorf("T=%d: working set %s, want %s ± 15%% (off by %+.0f%%)", threads, result.FormatBytes(float64(got)), result.FormatBytes(float64(want)), 100*d)
		}
	}
}

// Another user's process: unsupported, with the reason. As root, the test
// binary is run as nobody (setpriv) to sample this process; otherwise
// PID 1 is sampled when another user owns it.
func TestAnotherUsersProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		var st procOwner
		if !st.read(1) || st.uid == os.Geteuid() {
			t.Skip("not root, and PID 1 is this user's: no other user's process to sample")
		}
		why := Start(procstat.DefaultRoot, 1, true).Unsupported()
		if !strings.Contains(why, "permission denied") || !strings.Contains(why, "another user's process") {
			t.Errorf("PID 1 (uid %d): %q", st.uid, why)
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("root, but no setpriv to run the sampler as another user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "wss.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
	cmd.Env = append(os.Environ(), "CTXLAB_WSS_SAMPLE_PID="+strconv.Itoa(os.Getpid()))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("cannot run as nobody: %v: %s", err, out)
	}
	why := string(out)
	if !strings.Contains(why, "permission denied") || !strings.Contains(why, "another user's process (uid 0; ctxlab runs as uid 65534)") {
		t.Errorf("sampling a root process as nobody: %q", why)
	}
	t.Logf("as nobody: unsupported: %s", why)
}

type procOwner struct{ uid int }

func (o *procOwner) read(pid int) bool {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok {
		o.uid = int(st.Uid)
	}
	return ok
}

// Off samples nothing and says so; a reading without intervals is
// unsupported, never a working set of 0.
func TestOffAndNothingRead(t *testing.T) {
	var s *Sampler = Start(procstat.DefaultRoot, os.Getpid(), false)
	s.Tick()
	if s != nil || s.Stop() != nil || s.Unsupported() != "--wss off" {
		t.Errorf("off: %v", s)
	}
	r := Start(procstat.DefaultRoot, os.Getpid(), true).Stop()
	if r.OK() || r.MedianBytes != 0 || !strings.Contains(r.Unsupported, "no interval was read") {
		t.Errorf("no tick: %+v", r)
	}
	if lines := r.Read(Setting{}); len(lines) != 1 || !strings.HasPrefix(lines[0], "working set: unsupported: no interval was read") {
		t.Errorf("no tick reads %q", lines)
	}
	if got := Start(procstat.Root(t.TempDir()), 123, true).Unsupported(); got != "PID 123: no such process" {
		t.Errorf("missing process: %q", got)
	}
	for in, want := range map[string]bool{"on": true, "off": false} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := Parse("maybe"); err == nil || !strings.Contains(err.Error(), `--wss "maybe": must be on or off`) {
		t.Errorf("Parse(maybe): %v", err)
	}
}
