package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cliShim writes a shim as pyenv's python3 is one: a shell script that
// forks a few processes, waits pause, then execs sleep with its arguments.
func cliShim(t *testing.T, pause string) string {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	p := filepath.Join(t.TempDir(), "tool")
	text := "#!/bin/sh\nv=$(echo 1); v=$(echo 2); " + sleep + " " + pause + "\nexec " + sleep + " \"$@\"\n"
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// diagnose of a shim profiles the program it execs, not the shell before
// it, and says so (issue 50: pyenv's python3 listed nine bash threads).
func TestDiagnoseFollowsAShim(t *testing.T) {
	isolate(t)
	p := cliShim(t, "0.2")
	code, _, errs := ctxlab(t, "diagnose", "--no-store", "--price=false", "--format", "json", "--interval", "10ms", "--", p, "0.3")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if !strings.Contains(errs, p+" is a shim") || !strings.Contains(errs, "followed to ") {
		t.Errorf("no note of the shim:\n%s", errs)
	}
	for _, line := range strings.Split(errs, "\n") {
		var rec struct{ Kind, Name string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Kind != "thread" {
			continue
		}
		if rec.Name != "sleep" {
			t.Errorf("a row of the shim, not of its program: %s", line)
		}
	}
}

// watch of a PID that is still in its shim follows it to the program and
// titles the program.
func TestWatchFollowsAShim(t *testing.T) {
	isolate(t)
	cmd := exec.Command(cliShim(t, "1"), "2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	code, out, errs := ctxlab(t, "watch", "--count", "1", "--interval", "100ms", "--price=false", "--format", "table", pid)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "a shim; following it") {
		t.Skipf("the shim had exec'd before watch read it (a loaded machine):\n%s", errs)
	}
	if !strings.Contains(errs, "followed to ") || !strings.Contains(out, "PID "+pid+" (sleep)") {
		t.Errorf("not followed to sleep:\n%s\n%s", errs, out)
	}
}
