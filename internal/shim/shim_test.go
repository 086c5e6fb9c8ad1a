package shim

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

func TestScript(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       bool
	}{
		{"pyenv", "#!/usr/bin/env bash\nset -e\nprogram=\"${0##*/}\"\nexport PYENV_ROOT=\"/root/.pyenv\"\nexec \"/root/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n", true},
		{"asdf", "#!/usr/bin/env bash\n# asdf-plugin: python 3.12.1\nexec /root/.asdf/bin/asdf exec \"python3\" \"$@\"\n", true},
		{"sh", "#!/bin/sh\nexec java -jar app.jar \"$@\"\n", true},
		{"env -S", "#!/usr/bin/env -S bash -e\n  exec foo\n", true},
		{"redirection only", "#!/bin/bash\nexec >log 2>&1\nsort big.txt\n", false},
		{"descriptor", "#!/bin/bash\nexec 3<input\nwc -l <&3\n", false},
		{"no exec", "#!/bin/bash\npython3 app.py\n", false},
		{"python", "#!/usr/bin/env python3\nexec('print(1)')\n", false},
		{"no #!", "exec python3\n", false},
	} {
		if got := script(strings.NewReader(c.text)); got != c.want {
			t.Errorf("%s: script = %v, want %v", c.name, got, c.want)
		}
	}
	if Script(filepath.Join(t.TempDir(), "absent")) {
		t.Error("a missing file is a shim")
	}
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte("#!/bin/sh\nexec true\n"+strings.Repeat("#\n", maxScript)), 0o755); err != nil {
		t.Fatal(err)
	}
	if Script(big) {
		t.Error("a file over 8 KiB is read as a shim")
	}
}

// writeShim writes a shim that forks a few processes, as pyenv's does,
// then execs sleep.
func writeShim(t *testing.T) string {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	p := filepath.Join(t.TempDir(), "tool")
	text := "#!/bin/sh\nv=$(echo 1); v=$(echo 2)\nexec " + sleep + " \"$@\"\n"
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// A process in a shim is recognised by its command line and followed
// through its exec to the program; one that exits in it, or never execs,
// is not.
func TestFollow(t *testing.T) {
	p := writeShim(t)
	if !Script(p) {
		t.Fatal("the test's shim is not recognised")
	}
	cmd := exec.Command(p, "0.5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	script, running := Running(procstat.DefaultRoot, pid) // racy by nature: the shim may already have exec'd
	f := Follow(context.Background(), procstat.DefaultRoot, pid, p, Limit)
	if !f.OK() || filepath.Base(f.Exe) != "sleep" {
		t.Fatalf("followed %+v, want sleep", f)
	}
	if running && script != p {
		t.Errorf("Running: %q, want %q", script, p)
	}
	if !strings.Contains(f.Note(), "followed to "+f.Exe) {
		t.Errorf("note %q", f.Note())
	}
	if _, ok := Running(procstat.DefaultRoot, pid); ok {
		t.Error("sleep is still read as in its shim")
	}

	// A shell that never execs: the limit ends it and the note says so.
	sh := exec.Command("/bin/sh", "-c", "read x")
	r, w, _ := os.Pipe() // read blocks on it: the shell stays a shell
	sh.Stdin = r
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Close(); r.Close(); _ = sh.Process.Kill(); _ = sh.Wait() }()
	f = Follow(context.Background(), procstat.DefaultRoot, sh.Process.Pid, "sh", 50*time.Millisecond)
	if f.OK() || !strings.Contains(f.Note(), "still a shell") {
		t.Errorf("a shell that never execs: %+v, %q", f, f.Note())
	}
	// One that exits.
	done := exec.Command("/bin/sh", "-c", "exit 0")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	f = Follow(context.Background(), procstat.DefaultRoot, done.Process.Pid, "sh", time.Second)
	if f.OK() || !strings.Contains(f.Why, "exited") {
		t.Errorf("an exited process: %+v", f)
	}
}
