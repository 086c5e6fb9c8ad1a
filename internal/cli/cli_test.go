package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/testload"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInputExitsTwoAndNamesTheValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "pingpong", "--cpus", "9999"}, []string{"CPU 9999", "online CPUs are"}},
		{[]string{"run", "pingpong", "--cpus", "x"}, []string{"--cpus", `"x"`}},
		{[]string{"run", "pingpong", "--reps", "0"}, []string{"--reps 0", "in 1..1000"}},
		{[]string{"run", "pingpong", "--gomaxprocs", "-1"}, []string{"--gomaxprocs -1", "in 1.."}},
		{[]string{"run", "pingpong", "--gomaxprocs=0"}, []string{"--gomaxprocs 0", "in 1.."}},
		{[]string{"run", "nosuch"}, []string{`"nosuch"`, "pingpong"}},
		{[]string{"run", "pingpong/thread/zzz"}, []string{"pingpong/thread/zzz"}},
		{[]string{"run", "--timeout", "1ms"}, []string{"--timeout", "in 1s..1h"}},
		{[]string{"run", "--benchtime", "2h"}, []string{"--benchtime", "in 1ms..1m"}},
		{[]string{"run", "--format", "xml"}, []string{"--format", "xml"}},
		{[]string{"run", "--quick", "--full"}, []string{"--quick and --full"}},
		{[]string{"run", "--hogs", "-3"}, []string{"--hogs -3", "in 0.."}},
		{[]string{"run", "--workers", "0"}, []string{"--workers 0", "in 1.."}},
		{[]string{"run", "--set", "nokey"}, []string{"--set", "key=value"}},
		{[]string{"run", "--nosuchflag"}, []string{"nosuchflag"}},
		{[]string{"nosuchcommand"}, []string{"nosuchcommand"}},
		{[]string{"list", "nosuch"}, []string{`"nosuch"`}},
	} {
		code, stdout, stderr := run(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if stdout != "" {
			t.Errorf("%v: printed results for bad input: %q", tc.args, stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: message %q does not mention %q", tc.args, stderr, w)
			}
		}
	}
}

func TestListAndEnvAndVersion(t *testing.T) {
	code, out, _ := run(t, "list", "--arms")
	if code != 0 || !strings.Contains(out, "pingpong/thread/futex/same-cpu") || !strings.Contains(out, "op: round trip") {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ = run(t, "env", "--format", "json")
	if code != 0 {
		t.Fatalf("env exit %d", code)
	}
	var e map[string]any
	if err := json.Unmarshal([]byte(out), &e); err != nil || e["counters"] == nil || e["clock_cost_ns"] == nil {
		t.Fatalf("env json: %v %v", err, out)
	}
	code, out, _ = run(t, "--version")
	if code != 0 || !strings.Contains(out, Version) {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestRunJSONIsTheResultModel(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "run.json")
	code, _, stderr := run(t, "run", "pingpong/goroutine/chan/gomaxprocs=1", "--reps", "2", "--benchtime", "5ms", "--format", "json", "-o", file, "--no-store")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := result.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Arms) != 1 || r.Arms[0].Status != result.StatusOK || len(r.Arms[0].RepMeans) != 2 || r.ClockCostNs <= 0 || r.ID == "" {
		t.Fatalf("run: %+v", r)
	}
	if len(r.Experiments) != 1 || len(r.Experiments[0].Checks) == 0 {
		t.Fatalf("checks missing: %+v", r.Experiments)
	}
}

// Ctrl-C during a process arm: ctxlab exits 130, prints what finished, and
// no child process is left behind.
func TestInterruptLeavesNoChild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ctxlab as a subprocess")
	}
	cmd := exec.Command(os.Args[0], "run", "pingpong/goroutine/chan/gomaxprocs=1", "pingpong/process/pipe/unpinned",
		"--reps", "3", "--benchtime", "500ms", "--timeout", "1h", "--no-store")
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	kids := waitChildren(t, cmd.Process.Pid)
	time.Sleep(200 * time.Millisecond) // inside the timed repetitions
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v; stderr %s", err, errb.String())
	}
	for _, k := range kids {
		if syscall.Kill(k, 0) == nil {
			t.Errorf("child %d still exists after ctxlab exited", k)
		}
	}
	// The table may wrap a long name at a "/" to keep within 80 columns.
	if flat := strings.Join(strings.Fields(out.String()), " "); !strings.Contains(strings.ReplaceAll(flat, "/ ", "/"), "goroutine/chan/gomaxprocs=1") ||
		!strings.Contains(out.String(), "interrupted") {
		t.Errorf("finished arms not printed:\n%s", out.String())
	}
}

// waitChildren waits until pid has a child process and returns its
// children. It fails when pid exits first, or when none appeared in 20 s
// while pid got the CPU it wanted; on a machine that kept pid waiting for
// a CPU longer than it ran (4 hogs on 2 CPUs, the test at nice 19: the
// process arm's child was not there after 20 s), it waits up to 2 minutes
// and then skips, with the figures.
func waitChildren(t *testing.T, pid int) []int {
	t.Helper()
	start := time.Now()
	for {
		if kids := childrenOf(pid); len(kids) > 0 {
			return kids
		}
		if st, err := procstat.DefaultRoot.ReadTaskState(pid, pid); err != nil || strings.HasPrefix(st, "Z") {
			t.Fatalf("ctxlab exited (%v, %v) before its process arm's child appeared", st, err)
		}
		run, wait := processSched(pid)
		waited := time.Since(start)
		if waited > 20*time.Second && (wait <= run || waited > 2*time.Minute) {
			if wait > run {
				t.Skipf("ctxlab waited for a CPU %v and ran %v in %v, and its process arm had not started (load average %s)",
					wait.Round(time.Millisecond), run.Round(time.Millisecond), waited.Round(time.Second), testload.Load1())
			}
			t.Fatalf("no child process appeared in %v (ctxlab ran %v, waited for a CPU %v)", waited.Round(time.Second), run, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processSched is the time pid's threads have been on a CPU and waiting
// for one (schedstat), summed over its threads.
func processSched(pid int) (run, wait time.Duration) {
	tasks, _ := procstat.DefaultRoot.ReadTasks(pid)
	for _, tk := range tasks {
		run += time.Duration(tk.RunNs)
		wait += time.Duration(tk.RunqNs)
	}
	return run, wait
}

// childrenOf lists processes whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}
