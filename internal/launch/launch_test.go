package launch

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
)

// TestMain makes the test binary the keeper's process, as ctxlab's main
// does, and, with LAUNCH_TEST_SH set, a stand-in for ctxlab that runs
// that shell line through the keeper (registering LAUNCH_TEST_TEMP as a
// temp file) until it is stopped.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	if line := os.Getenv("LAUNCH_TEST_SH"); line != "" {
		os.Exit(standIn(line))
	}
	os.Exit(m.Run())
}

func standIn(line string) int {
	if cg := os.Getenv("LAUNCH_TEST_CGROUP"); cg != "" { // before the keeper starts: it inherits the cgroup
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte("0"), 0); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer Close()
	if p := os.Getenv("LAUNCH_TEST_TEMP"); p != "" {
		forget := Temp(p)
		defer func() { _ = os.Remove(p); forget() }()
	}
	sh, _ := exec.LookPath("sh")
	r, err := Run(ctx, Spec{Path: sh, Args: []string{"sh", "-c", line}, Env: os.Environ(), Stdout: os.Stdout, Stderr: os.Stderr,
		OwnGroup: os.Getenv("LAUNCH_TEST_OWN") != "", Grace: 300 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("held by %s; left %d\n", r.Held, len(r.Left))
	return r.ExitStatus
}

// marker is a sleep no other process runs: its argument is unique.
func marker() string { return fmt.Sprintf("%d.%03d", 90000+rand.IntN(9000), rand.IntN(1000)) }

// running lists the live processes whose command line holds m.
func running(m string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(m)) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && !bytes.Contains(st, []byte(") Z ")) {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			out = append(out, pid)
		}
	}
	return out
}

// gone waits up to 10 s for every process holding m to end.
func gone(t *testing.T, m string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(running(m)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ps := running(m)
	for _, p := range ps {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	t.Fatalf("processes of the command's tree outlived it: %v", ps)
}

// The exit status, 128 + a signal, rusage, and the output through a pipe.
func TestRunStatusAndOutput(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	var out bytes.Buffer
	r, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "echo hello; exit 3"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitStatus != 3 || !r.HasRusage || r.PID <= 0 || out.String() != "hello\n" || r.WallNs <= 0 {
		t.Fatalf("status %d, rusage %v, pid %d, out %q, wall %d", r.ExitStatus, r.HasRusage, r.PID, out.String(), r.WallNs)
	}
	r, err = Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "kill -TERM $$"}})
	if err != nil || r.ExitStatus != 128+15 || r.Signal != syscall.SIGTERM {
		t.Fatalf("killed by TERM: %+v, %v", r, err)
	}
	var pid int
	_, err = Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "true"}, Started: func(p int) { pid = p }})
	if err != nil || pid <= 0 {
		t.Fatalf("Started got pid %d (%v)", pid, err)
	}
}

// Output: each stream apart, and every way a command can fail as an error
// that says which (an interruption as ctx's own error).
func TestOutput(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	run := func(ctx context.Context, line string, timeout time.Duration) (string, string, error) {
		o, e, err := Output(ctx, Spec{Path: sh, Args: []string{"sh", "-c", line}, Timeout: timeout, Grace: 100 * time.Millisecond})
		return string(o), string(e), err
	}
	if o, e, err := run(context.Background(), "echo out; echo err >&2", 0); o != "out\n" || e != "err\n" || err != nil {
		t.Errorf("got %q, %q, %v", o, e, err)
	}
	if _, e, err := run(context.Background(), "echo why >&2; exit 3", 0); e != "why\n" || err == nil || err.Error() != "exit status 3" {
		t.Errorf("exit 3: %q, %v", e, err)
	}
	if _, _, err := run(context.Background(), "kill -KILL $$", 0); err == nil || err.Error() != "signal: killed" {
		t.Errorf("killed: %v", err)
	}
	if _, _, err := run(context.Background(), "sleep "+marker(), 100*time.Millisecond); err == nil || err.Error() != "timed out" {
		t.Errorf("past its timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, _, err := run(ctx, "sleep "+marker(), 0); err != context.Canceled {
		t.Errorf("interrupted: %v", err)
	}
	if _, _, err := Output(context.Background(), Spec{Path: "/nonexistent/cmd", Args: []string{"cmd"}}); err == nil {
		t.Errorf("a command that does not exist ran")
	}
}

// What a command leaves running — in its group, in a new group, in a new
// session after a double fork, ignoring SIGTERM — is named and ended.
func TestRunEndsLeftovers(t *testing.T) {
	m := marker()
	sh, _ := exec.LookPath("sh")
	line := fmt.Sprintf(`sleep %[1]s & setsid sh -c 'sh -c "sleep %[1]s" & sleep %[1]s' & sh -c 'trap "" TERM; sleep %[1]s' & sleep 0.3`, m)
	r, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", line}, OwnGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Left) < 4 {
		t.Errorf("left %v: want the 4 sleeps and their shells named", r.Left)
	}
	gone(t, m)
}

// Timeout: SIGTERM, then SIGKILL after Grace for one that ignores it.
func TestRunTimeout(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	m := marker()
	r, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", `trap "" TERM; sleep ` + m + `; sleep ` + m}, OwnGroup: true,
		Timeout: 200 * time.Millisecond, Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stopped != TimedOut || r.ExitStatus != 128+9 {
		t.Fatalf("stopped %v, status %d", r.Stopped, r.ExitStatus)
	}
	gone(t, m)
}

// A context that ends: SIGINT to a command in its own group.
func TestRunInterrupted(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r, err := Run(ctx, Spec{Path: sh, Args: []string{"sh", "-c", "sleep " + marker()}, OwnGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Stopped != Interrupted || r.ExitStatus != 128+2 {
		t.Fatalf("stopped %v, status %d", r.Stopped, r.ExitStatus)
	}
}

// Nothing outlives the process that runs a command through the keeper,
// whichever signal ends it: the tree (a child that ignores SIGTERM, a
// setsid double fork, a group change) and its temp file are gone.
func TestNothingOutlivesItsRunner(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT} {
		for _, own := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/own-group=%v", sig, own), func(t *testing.T) {
				m := marker()
				temp := filepath.Join(t.TempDir(), ".out.tmp-1")
				if err := os.WriteFile(temp, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				exe, _ := os.Executable()
				cmd := exec.Command(exe)
				cmd.Env = append(os.Environ(), "LAUNCH_TEST_SH="+escapist(m), "LAUNCH_TEST_TEMP="+temp)
				if own {
					cmd.Env = append(cmd.Env, "LAUNCH_TEST_OWN=1")
				}
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(20 * time.Second)
				for len(running(m)) < 5 && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if n := len(running(m)); n < 5 {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					gone(t, m)
					t.Skipf("only %d of the 5 sleeps started in 20 s: the machine is too busy", n)
				}
				_ = cmd.Process.Signal(sig)
				_ = cmd.Wait()
				gone(t, m)
				for end := time.Now().Add(10 * time.Second); len(keepersOf(cmd.Process.Pid)) > 0; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(end) {
						t.Fatalf("its keeper %v did not end", keepersOf(cmd.Process.Pid))
					}
				}
				if _, err := os.Stat(temp); err == nil {
					t.Errorf("temp file %s outlived it", temp)
				}
			})
		}
	}
}

// escapist is a command tree that tries every way out: a child ignoring
// SIGTERM and SIGINT, a setsid double fork, 5 sleeps of marker m.
func escapist(m string) string {
	return fmt.Sprintf(`trap "" TERM; sleep %[1]s & setsid sh -c '(sleep %[1]s &); sleep %[1]s' & sh -c 'trap "" TERM INT; exec sleep %[1]s' & exec sleep %[1]s`, m)
}

// testCgroup makes a cgroup v2 for the test under the hierarchy's root
// (root only), which a stand-in moves itself into: its keeper then runs
// in a delegated cgroup and makes one for each command.
func testCgroup(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a cgroup to stand for a delegated one needs root")
	}
	mount := ""
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 8 && f[3] == "/" && strings.Contains(l, " - cgroup2 ") {
			mount = f[4]
		}
	}
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	dir := filepath.Join(mount, fmt.Sprintf("ctxlab-launch-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup: %v", err)
	}
	t.Cleanup(func() {
		for i := 0; i < 200 && os.Remove(dir) != nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	})
	return dir
}

// Where ctxlab's cgroup is delegated, each command gets a cgroup of its
// own, which holds its tree; after SIGKILL of the stand-in, nothing of
// the tree and no cgroup of the keeper's is left.
func TestCgroupHoldsTheTree(t *testing.T) {
	cg := testCgroup(t)
	exe, _ := os.Executable()
	m := marker()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "LAUNCH_TEST_SH="+fmt.Sprintf("sleep %[1]s & setsid sh -c '(sleep %[1]s &)'; sleep 0.2", m), "LAUNCH_TEST_CGROUP="+cg)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "held by a cgroup v2 of its own, "+cg+"/ctxlab-") || !strings.Contains(string(out), "left 2") {
		t.Errorf("stand-in said %q; want its command held by a cgroup under %s and 2 left", out, cg)
	}
	gone(t, m)

	m = marker()
	cmd = exec.Command(exe)
	cmd.Env = append(os.Environ(), "LAUNCH_TEST_SH="+escapist(m), "LAUNCH_TEST_CGROUP="+cg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(20 * time.Second); len(running(m)) < 5 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	subs, _ := filepath.Glob(filepath.Join(cg, "ctxlab-*"))
	if len(subs) != 1 {
		t.Errorf("cgroups under %s while the command runs: %v, want its one", cg, subs)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	gone(t, m)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		subs, _ := filepath.Glob(filepath.Join(cg, "ctxlab-*"))
		if len(subs) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the keeper's cgroups outlived it: %v", subs)
		}
	}
}

// keepersOf are the live keepers whose argument is ctxlab's PID pid.
func keepersOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(b, []byte(child.EnvRole+"="+role+"\x00")) && bytes.Contains(b, []byte(child.EnvArgs+"="+fmt.Sprint(pid)+"\x00")) {
			var p int
			fmt.Sscan(e.Name(), &p)
			out = append(out, p)
		}
	}
	return out
}

// The command gets its stdin, stdout, stderr and ExtraFiles, and no other
// descriptor: not the keeper's socket.
func TestRunPassesOnlyItsFiles(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	ls, _ := exec.LookPath("ls")
	_, err = Run(context.Background(), Spec{Path: ls, Args: []string{"ls", "-l", "/proc/self/fd/"}, Stdout: &out, ExtraFiles: []*os.File{w}})
	if err == nil {
		_, err = Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "echo extra >&3"}, ExtraFiles: []*os.File{w}})
	}
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Descriptors the test itself inherited without close-on-exec pass
	// on, as they do to any child; the keeper's socket must not.
	if strings.Contains(out.String(), "socket:") || !strings.Contains(out.String(), " 3 -> pipe:") {
		t.Errorf("the command's descriptors:\n%s\nwant 3 the pipe and no socket", out.String())
	}
	b := make([]byte, 16)
	n, _ := r.Read(b)
	if string(b[:n]) != "extra\n" {
		t.Errorf("ExtraFiles[0] got %q", b[:n])
	}
}

// A command given no environment gets ctxlab's, never the keeper's (whose
// CTXLAB_CHILD would make a ctxlab command a keeper too).
func TestRunEnvironmentIsCtxlabs(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	t.Setenv("LAUNCH_TEST_ENV", "ctxlab's")
	var out bytes.Buffer
	if _, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", `echo "$LAUNCH_TEST_ENV ${CTXLAB_CHILD-none}"`}, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "ctxlab's none\n" {
		t.Errorf("the command's environment: %q", out.String())
	}
}

// One writer for stdout and stderr gets both, through one pipe, in order.
func TestRunOneWriterForBoth(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	var out bytes.Buffer
	if _, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "echo 1; echo 2 >&2; echo 3; echo 4 >&2"}, Stdout: &out, Stderr: &out}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "1\n2\n3\n4\n" {
		t.Errorf("stdout and stderr to one writer: %q", out.String())
	}
}

// A keeper killed under a run: Run says so rather than waiting for ever,
// and the next run starts a new keeper.
func TestRunSurvivesItsKeeper(t *testing.T) {
	sh, _ := exec.LookPath("sh")
	m := marker()
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "exec sleep " + m}, OwnGroup: true})
		done <- err
	}()
	for end := time.Now().Add(20 * time.Second); len(running(m)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Skip("the command did not start in 20 s: a busy machine")
		}
	}
	for _, k := range keepersOf(os.Getpid()) {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "keeper ended") {
			t.Errorf("Run after its keeper was killed: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still waits 20 s after its keeper was killed")
	}
	gone(t, m) // its parent-death signal
	r, err := Run(context.Background(), Spec{Path: sh, Args: []string{"sh", "-c", "exit 4"}})
	if err != nil || r.ExitStatus != 4 {
		t.Errorf("the next run: %v, %v", r, err)
	}
}
