package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// syncBuf is a bytes.Buffer safe to read while Main writes to it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startChild starts a shell command in its own process group, reaps it in
// the background and kills the whole group at the end of the test, so a
// command the shell forked (sleep) does not outlive it.
func startChild(t *testing.T, script string) (pid int, done <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ch) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-ch })
	return cmd.Process.Pid, ch
}

func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func count(recs []map[string]any, kind, phase string) int {
	n := 0
	for _, r := range recs {
		if r["kind"] == kind && r["phase"] == phase {
			n++
		}
	}
	return n
}

func TestWatchBusyChild(t *testing.T) {
	pid, _ := startChild(t, "while :; do :; done")
	var out, errb syncBuf
	code := Main([]string{"watch", fmt.Sprint(pid), "--interval", "100ms", "--count", "3", "--price=false"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	recs := jsonLines(t, out.String()) // not a terminal: JSON lines
	if n := count(recs, "process", "interval"); n != 3 {
		t.Errorf("%d interval totals, want 3", n)
	}
	if count(recs, "process", "summary") != 1 || count(recs, "reading", "summary") < 1 {
		t.Errorf("no summary: %s", out.String())
	}
	for _, r := range recs {
		if r["kind"] == "thread" {
			if int(r["tid"].(float64)) != pid || r["name"] != "sh" {
				t.Errorf("thread record %v is not the child", r)
			}
			if cpu, ok := r["cpu_pct"].(float64); ok && r["phase"] == "summary" && cpu <= 0 {
				t.Errorf("a busy loop shows no CPU time: %v", r)
			}
		}
	}
}

func TestWatchChildExits(t *testing.T) {
	pid, _ := startChild(t, "sleep 0.3")
	var out, errb syncBuf
	start := time.Now()
	code := Main([]string{"watch", fmt.Sprint(pid), "--interval", "50ms", "--count", "200", "--format", "table", "--price=false"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), fmt.Sprintf("process %d has exited", pid)) {
		t.Errorf("stderr %q does not say the process exited", errb.String())
	}
	if !strings.Contains(out.String(), "summary of the whole watch") || time.Since(start) > 8*time.Second {
		t.Errorf("no summary, or the watch did not stop at the exit:\n%s", out.String())
	}
}

func TestWatchInterrupt(t *testing.T) {
	pid, _ := startChild(t, "sleep 30")
	var out, errb syncBuf
	res := make(chan int)
	go func() {
		res <- Main([]string{"watch", fmt.Sprint(pid), "--interval", "50ms", "--format", "json"}, &out, &errb)
	}()
	for i := 0; i < 200 && !strings.Contains(out.String(), `"phase":"interval"`); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil { // Main's signal context catches it
		t.Fatal(err)
	}
	select {
	case code := <-res:
		if code != 0 || count(jsonLines(t, out.String()), "process", "summary") != 1 {
			t.Errorf("Ctrl-C: exit %d, output %s %s", code, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop on SIGINT")
	}
}

func TestWatchBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"watch", "999999999"}, 2, "PID 999999999: no such process"},
		{[]string{"watch", "abc"}, 2, `PID "abc": must be a positive integer`},
		{[]string{"watch"}, 2, "give the PID"},
		{[]string{"watch", "1", "--interval", "1ms"}, 2, "--interval 1ms: must be in 10ms..1h"},
		{[]string{"watch", "1", "--top", "-1"}, 2, "--top -1"},
		{[]string{"watch", "1", "--sort", "cpu"}, 2, `--sort "cpu": must be one of switches, runq`},
		{[]string{"watch", "--name", "("}, 2, "not a regular expression"},
		{[]string{"watch", "--name", "^no-such-command-xyz$"}, 2, "no process has a matching command name"},
		// A stat file that cannot be parsed: it exists but cannot be read → 1.
		{[]string{"watch", "300", "--proc-root", "../procstat/testdata/proc"}, 1, "PID 300: cannot read it"},
		{[]string{"diagnose", "--", "/no/such/command"}, 2, `command "/no/such/command"`},
		{[]string{"diagnose", "--format", "xml", "--", "true"}, 2, `--format "xml"`},
	} {
		var out, errb syncBuf
		code := Main(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errb.String(), tc.code, tc.msg)
		}
	}
}

// TestWatchFixture runs the whole command over the fake /proc tree.
func TestWatchFixture(t *testing.T) {
	var out, errb syncBuf
	code := Main([]string{"watch", "100", "--price=false", "--proc-root", "../procstat/testdata/proc", "--interval", "10ms", "--count", "2", "--by-name", "--format", "table"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"ctxlab watch PID 100 (server)", "interval 2", "server", "worker", "summary of the whole watch"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDiagnoseExitStatus(t *testing.T) {
	var out, errb syncBuf
	code := Main([]string{"diagnose", "--no-store", "--format", "json", "--", "sh", "-c", "echo hi; i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done; exit 3"}, &out, &errb)
	if code != 3 {
		t.Fatalf("exit %d, want the command's 3: %s", code, errb.String())
	}
	if out.String() != "hi\n" {
		t.Errorf("command stdout not passed through: %q", out.String())
	}
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if strings.HasPrefix(l, "{") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			recs = append(recs, m)
		}
	}
	counters := map[string]map[string]any{}
	var rusage map[string]any
	for _, r := range recs {
		switch r["kind"] {
		case "counter":
			counters[r["name"].(string)] = r
		case "rusage":
			rusage = r
		}
	}
	for _, name := range []string{"context-switches", "cpu-migrations", "task-clock", "page-faults", "instructions"} {
		c, ok := counters[name]
		if !ok {
			t.Errorf("no %s counter record", name)
			continue
		}
		if c["value"] == nil && c["unsupported"] == nil {
			t.Errorf("%s has neither a value nor a reason: %v", name, c)
		}
	}
	if tc := counters["task-clock"]; tc["value"] != nil && tc["value"].(float64) <= 0 {
		t.Errorf("task-clock counted nothing over a busy loop: %v", tc)
	}
	if rusage == nil || rusage["exit_status"].(float64) != 3 {
		t.Errorf("rusage record = %v", rusage)
	}
	// No history under go test: the price comes from a 2 s calibration.
	var pr map[string]any
	for _, r := range recs {
		if r["kind"] == "price" {
			pr = r
		}
	}
	if pr == nil {
		t.Fatalf("no price record: %s", errb.String())
	}
	if cps, _ := pr["cost_per_switch_ns"].(float64); cps <= 0 || !strings.Contains(pr["cost_source"].(string), "measured now for about 2 s") {
		t.Errorf("price record %v: want a cost per switch from a calibration", pr)
	}
}

// Processes found by --name that exit before they are read are dropped
// (a busy machine widens the gap between the listing and the reading);
// when all are gone it is bad input, and a PID given by number that is
// gone stays an error.
func TestWatcherDropsVanished(t *testing.T) {
	live := exec.Command("sleep", "3600")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { live.Process.Kill(); live.Wait() }()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := gone.Process.Pid // reaped: no such process (unless reused at once)
	o := &WatchOptions{Name: "^sleep$"}
	w, pids, err := o.watcher(procstat.DefaultRoot, []int{dead, live.Process.Pid})
	if err != nil || w == nil || len(pids) != 1 || pids[0] != live.Process.Pid {
		t.Fatalf("watcher: %v, pids %v", err, pids)
	}
	if _, _, err := o.watcher(procstat.DefaultRoot, []int{dead}); err == nil || !strings.Contains(err.Error(), "every matching process exited") {
		t.Errorf("all gone: %v", err)
	}
	byPID := &WatchOptions{PID: dead}
	if _, _, err := byPID.watcher(procstat.DefaultRoot, []int{dead}); err == nil {
		t.Error("a PID given by number that is gone is no error")
	}
}
