package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envTag is the variable a test puts in ctxlab's environment so that it
// can find every process ctxlab starts, and every process those start,
// however they are parented (environ is inherited across fork and exec).
const envTag = "CTXLAB_TEST_TAG"

func newTag(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	return t.Name() + "-" + hex.EncodeToString(b[:])
}

// taggedProc is a live process whose environment carries a test's tag.
type taggedProc struct {
	pid, ppid int
	comm      string
}

func (p taggedProc) String() string { return fmt.Sprintf("%d (%s, ppid %d)", p.pid, p.comm, p.ppid) }

// tagged lists the live (not zombie) processes, other than this test
// process, whose environment holds envTag=tag.
func tagged(tag string) []taggedProc {
	want := []byte(envTag + "=" + tag + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []taggedProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, taggedProc{pid: pid, ppid: ppid, comm: s[open+1 : end]})
	}
	return out
}

// noneLeft waits up to limit for every process carrying tag to be gone;
// it returns those still alive then, and kills them (by PID) so a failing
// test leaves nothing behind either.
func noneLeft(tag string, limit time.Duration) []taggedProc {
	deadline := time.Now().Add(limit)
	for {
		left := tagged(tag)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p.pid, syscall.SIGKILL)
			}
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tracked is ctxlab started by startTagged.
type tracked struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer // read only once exited is closed
	exited chan struct{}
	err    error // the exit, once exited is closed
}

// startTagged starts this test binary as ctxlab with args, its
// environment carrying tag (and, when path is set, that PATH). At the end
// of the test it is killed, and so is anything carrying the tag.
func startTagged(t *testing.T, tag, path string, args ...string) *tracked {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1", envTag+"="+tag, "HOME="+home, "XDG_DATA_HOME="+home)
	if path != "" {
		cmd.Env = append(cmd.Env, "PATH="+path)
	}
	tr := &tracked{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = tr.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { tr.err = cmd.Wait(); close(tr.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-tr.exited
		if left := noneLeft(tag, 0); len(left) > 0 {
			t.Errorf("killed what the test left behind: %v", left)
		}
	})
	return tr
}

// TestSIGKILLLeavesNoPython: ctxlab killed by SIGKILL in the middle of a
// CPython arm of each kind (threads, tasks, a forked partner, a forked busy
// process, the process pool of the event-loop arms) leaves no process
// behind: the driver has a parent-death signal, and everything the driver
// forks dies with the driver.
func TestSIGKILLLeavesNoPython(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ctxlab and CPython as subprocesses")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 missing: the CPython arms cannot run here")
	}
	for _, c := range []struct {
		arm   string
		forks bool // the driver forks a child for the arm
	}{
		{"pingpong/pythread/simplequeue/unpinned", false},
		{"pingpong/pytask/asyncio-queue/unpinned", false},
		{"pingpong/pyprocess/pipe/unpinned", true},
		{"interference/pythread/simplequeue/busy=1/si=default/in=process", true},
		{"eventloop/pytask/process/work=0.1ms", true},
		{"eventloop/pytask/process/work=1ms", true},
		{"eventloop/pytask/process/work=5ms", true},
	} {
		t.Run(strings.ReplaceAll(c.arm, "/", "_"), func(t *testing.T) {
			tag := newTag(t)
			tr := startTagged(t, tag, "", "run", c.arm, "--reps", "100", "--benchtime", "500ms", "--timeout", "1h", "--no-store")
			ctxlab := tr.cmd.Process.Pid
			// The arm is under way once the driver (ctxlab's python child)
			// runs and, for a forking arm, has a python child of its own.
			ready := func() bool {
				ps := tagged(tag)
				for _, d := range ps {
					if d.ppid != ctxlab || !isDriver(d.pid) {
						continue
					}
					if !c.forks {
						return true
					}
					for _, k := range ps {
						if k.ppid == d.pid && strings.HasPrefix(k.comm, "python") {
							return true
						}
					}
				}
				return false
			}
			deadline := time.Now().Add(30 * time.Second)
			for !ready() {
				select {
				case <-tr.exited:
					t.Fatalf("ctxlab exited (%v) before the arm's python processes appeared; stderr:\n%s", tr.err, tr.stderr)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the arm's python processes did not appear; tagged processes %v", tagged(tag))
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond) // into the arm's repetitions
			before := tagged(tag)
			tr.cmd.Process.Signal(syscall.SIGKILL)
			<-tr.exited
			if left := noneLeft(tag, 10*time.Second); len(left) > 0 {
				t.Fatalf("10 s after SIGKILL of ctxlab these processes are still alive: %v (before the kill: %v)", left, before)
			}
		})
	}
}

// isDriver reports whether pid runs the CPython driver (python -u -c
// SOURCE), not the interpreter probe or a wrapper on its way to exec.
func isDriver(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	args := strings.Split(string(b), "\x00")
	return err == nil && len(args) > 3 && args[1] == "-u" && args[2] == "-c"
}

// slowPython puts a python3 on PATH that records each invocation in the
// returned log file and then sleeps 20 s, as a cold or broken wrapper
// might, before it runs the real one.
func slowPython(t *testing.T) (path, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "invocations")
	real, err := exec.LookPath("python3")
	if err != nil {
		real = "/nonexistent/python3"
	}
	script := "#!/bin/sh\necho \"$$ $*\" >> " + log + "\nsleep 20\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH"), log
}

func invocations(t *testing.T, log string) string {
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestPythonNotAskedBeforeValidation: bad input is refused before any
// interpreter starts, and a run without CPython arms never starts one.
func TestPythonNotAskedBeforeValidation(t *testing.T) {
	path, log := slowPython(t)
	isolate(t)
	t.Setenv("PATH", path)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--set", "nosuch=1"},
		{"run", "--db", dir},
		{"run", "nosuch"},
		{"run", "--reps", "0"},
		{"run", "pingpong/pythread/simplequeue/unpinned", "--set", "nosuch=1"},
		{"run", "pingpong/pythread/simplequeue/unpinned", "--db", dir},
	} {
		if code, _, errs := ctxlab(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2; stderr %q", args, code, errs)
		}
		if got := invocations(t, log); got != "" {
			t.Fatalf("%q started python3 before refusing the input: %q", args, got)
		}
	}
	if code, _, errs := ctxlab(t, "run", "pingpong/goroutine/chan/gomaxprocs=1", "--reps", "1", "--benchtime", "1ms", "--no-store"); code != 0 {
		t.Fatalf("goroutine run: exit %d: %s", code, errs)
	}
	if got := invocations(t, log); got != "" {
		t.Fatalf("a run without CPython arms started python3: %q", got)
	}
	if code, _, errs := ctxlab(t, "list"); code != 0 || invocations(t, log) != "" {
		t.Fatalf("list: exit %d (%s); python3 invocations %q", code, errs, invocations(t, log))
	}
}

// TestInterruptDuringPythonProbe: SIGINT while the interpreter is asked
// what it is (a slow wrapper) ends the run at once, wrapper and all.
func TestInterruptDuringPythonProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ctxlab as a subprocess")
	}
	path, log := slowPython(t)
	tag := newTag(t)
	tr := startTagged(t, tag, path, "run", "pingpong/pythread/simplequeue/unpinned", "--reps", "1", "--benchtime", "1ms", "--no-store")
	deadline := time.Now().Add(20 * time.Second)
	for invocations(t, log) == "" {
		if time.Now().After(deadline) {
			t.Fatal("python3 was never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	tr.cmd.Process.Signal(os.Interrupt)
	signalled := time.Now()
	select {
	case <-tr.exited:
	case <-time.After(8 * time.Second): // the wrapper sleeps 20 s
		t.Fatal("ctxlab still running 8 s after SIGINT")
	}
	ee, ok := tr.err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v after %v, want 130; stderr:\n%s", tr.err, time.Since(signalled), tr.stderr)
	}
	if left := noneLeft(tag, 5*time.Second); len(left) > 0 {
		t.Fatalf("after SIGINT these processes are still alive: %v", left)
	}
}
