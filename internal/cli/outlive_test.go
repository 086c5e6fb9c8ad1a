package cli

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// marked are the live processes whose environment holds mark: ctxlab, its
// keeper and everything they started (the environment is inherited), and
// with sleepOnly the command tree's sleeps alone.
func marked(mark string, sleepOnly bool) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark+"\x00")) {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || bytes.Contains(st, []byte(") Z ")) || sleepOnly && !bytes.Contains(st, []byte("(sleep)")) {
			continue
		}
		var pid int
		fmt.Sscan(e.Name(), &pid)
		out = append(out, pid)
	}
	return out
}

// outliveTree is a command tree that tries every way out: it ignores
// SIGTERM and SIGINT itself (and passes that on to what it execs), leaves
// a sleep in its group, a setsid double fork (an orphan in a session of
// its own), a process group change (perl's setpgrp) and a child that
// ignores SIGTERM; 5 sleeps in all.
func outliveTree(m string) string {
	return fmt.Sprintf(`trap "" TERM INT; sleep %[1]s & setsid sh -c '(sleep %[1]s &); exec sleep %[1]s' & `+
		`perl -e 'setpgrp(0,0); exec "sleep", "%[1]s"' & sh -c 'trap "" TERM; exec sleep %[1]s' & exec sleep %[1]s`, m)
}

// stopCtxlab starts this test binary as ctxlab with args, TMPDIR a fresh
// directory and a mark in its environment, waits until ready says the
// work is under way, sends sig, and waits for it. Then every process of
// the mark must be gone within 10 s, and the temp directory and dir (an
// -o target's directory) empty but for keep. It returns ctxlab's exit
// status.
func stopCtxlab(t *testing.T, sig syscall.Signal, args []string, ready func(mark, tmp string) bool, dir string, keep ...string) int {
	t.Helper()
	mark := fmt.Sprintf("CTXLAB_OUTLIVE_MARK=%d", rand.Int64())
	tmp := t.TempDir()
	exe, _ := os.Executable()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1", mark, "TMPDIR="+tmp)
	// Stderr to a file: a pipe held open by a leftover would hold Wait.
	errf, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd.Stderr = errf
	errb := stderrOf(errf.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a signal to ctxlab alone, as kill PID sends it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cleanup := func() {
		for _, p := range marked(mark, false) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	defer cleanup()
	deadline := time.Now().Add(60 * time.Second)
	for !ready(mark, tmp) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Skipf("the work did not get under way in 60 s (a busy machine): %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(sig)
	_ = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	for end := time.Now().Add(10 * time.Second); len(marked(mark, false)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after %v of ctxlab %s, processes outlived it: %v\n%s", sig, strings.Join(args, " "), marked(mark, false), errb.String())
		}
	}
	for _, d := range []string{tmp, dir} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if !contains(keep, e.Name()) {
				t.Errorf("after %v of ctxlab %s: %s left in %s", sig, strings.Join(args, " "), e.Name(), d)
			}
		}
	}
	return code
}

// stderrOf reads ctxlab's stderr from its file when printed.
type stderrOf string

func (p stderrOf) String() string { b, _ := os.ReadFile(string(p)); return string(b) }

// sleeping is ready once the command tree's 5 sleeps run.
func sleeping(mark, _ string) bool { return len(marked(mark, true)) >= 5 }

var outliveSignals = []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGINT}

// Plain diagnose: whichever signal stops ctxlab, nothing of the command's
// tree outlives it; SIGTERM and SIGINT exit 130 even though the command,
// which ignores both, had to be killed.
func TestDiagnoseLeavesNothingWhenStopped(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl for the process group change")
	}
	isolate(t)
	for _, sig := range outliveSignals {
		t.Run(sig.String(), func(t *testing.T) {
			m := fmt.Sprintf("%d.%03d", 80000+rand.IntN(9000), rand.IntN(1000))
			code := stopCtxlab(t, sig, []string{"diagnose", "--no-store", "--price=false", "--", "sh", "-c", outliveTree(m)}, sleeping, "")
			if sig != syscall.SIGKILL && code != 130 {
				t.Errorf("exit %d after %v, want 130", code, sig)
			}
		})
	}
}

// diagnose --vary with -o: nothing outlives ctxlab, nor the -o target's
// temporary file.
func TestVaryLeavesNothingWhenStopped(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl for the process group change")
	}
	isolate(t)
	for _, sig := range outliveSignals {
		t.Run(sig.String(), func(t *testing.T) {
			m := fmt.Sprintf("%d.%03d", 80000+rand.IntN(9000), rand.IntN(1000))
			dir := t.TempDir()
			args := []string{"diagnose", "--vary", "T=1,2", "--reps", "1", "--no-store", "--price=false", "--format", "json", "-o", filepath.Join(dir, "out.json"),
				"--", "sh", "-c", outliveTree(m)}
			code := stopCtxlab(t, sig, args, sleeping, dir, "out.json")
			if sig != syscall.SIGKILL && code != 130 {
				t.Errorf("exit %d after %v, want 130", code, sig)
			}
		})
	}
}

// selfcheck: its references and arms (ctxlab run, perf bench, the plain
// loops) and its temporary directory do not outlive it.
func TestSelfcheckLeavesNothingWhenStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts selfcheck three times")
	}
	isolate(t)
	for _, sig := range outliveSignals {
		t.Run(sig.String(), func(t *testing.T) {
			ready := func(mark, tmp string) bool {
				// its directory made, and ctxlab, its keeper and an arm or
				// a reference running
				dirs, _ := filepath.Glob(filepath.Join(tmp, "ctxlab-selfcheck-*"))
				return len(dirs) > 0 && len(marked(mark, false)) >= 3
			}
			code := stopCtxlab(t, sig, []string{"selfcheck", "--rounds", "1", "--reps", "1", "--benchtime", "200ms", "--settle", "0", "--no-store"}, ready, "")
			if sig != syscall.SIGKILL && code != 130 {
				t.Errorf("exit %d after %v, want 130", code, sig)
			}
		})
	}
}

// The issue's own case: SIGKILL of selfcheck while perf bench sched pipe
// runs (two processes over a pipe) left perf's child blocked in a read
// under PID 1, for ever.
func TestSelfcheckKilledDuringPerfBench(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil || testing.Short() {
		t.Skip("no perf here, or -short")
	}
	isolate(t)
	ready := func(mark, _ string) bool {
		n := 0
		for _, p := range marked(mark, false) {
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil && bytes.Contains(st, []byte("(sched-pipe)")) {
				n++
			}
		}
		return n >= 2
	}
	stopCtxlab(t, syscall.SIGKILL, []string{"selfcheck", "--rounds", "2", "--reps", "3", "--benchtime", "300ms", "--settle", "0", "--no-store"}, ready, "")
}

// SIGKILL of ctxlab during a CPython program under the probe: the
// program, what it started and the probe's directory in the temp
// directory are gone (the keeper removes it).
func TestDiagnoseKilledLeavesNoProbeDirectory(t *testing.T) {
	py := needPython(t)
	isolate(t)
	m := fmt.Sprintf("%d.%03d", 80000+rand.IntN(9000), rand.IntN(1000))
	prog := fmt.Sprintf(`import subprocess, time; subprocess.Popen(["sleep", "%[1]s"]); time.sleep(%[1]s)`, m)
	ready := func(mark, tmp string) bool {
		dirs, _ := filepath.Glob(filepath.Join(tmp, "ctxlab-pyprobe-*"))
		return len(dirs) > 0 && len(marked(mark, true)) >= 1
	}
	stopCtxlab(t, syscall.SIGKILL, []string{"diagnose", "--no-store", "--price=false", "--python-probe", "on", "--", py, "-c", prog}, ready, "")
}
