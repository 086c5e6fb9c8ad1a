// Package shim recognises a version manager's shim — pyenv's, asdf's,
// rbenv's: a short shell script that finds the real program and exec's it
// in its own place — and follows a process through it to that program, so
// diagnose and watch profile the interpreter, not the bash that started
// it. It reads /proc only through procstat.
package shim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// maxScript is the largest file read as a shim: pyenv's is 0.3 KiB.
const maxScript = 8 << 10

// Limit is how long a shim is followed before ctxlab gives up and
// profiles it as it is: pyenv's takes 0.1–0.3 s, more on a loaded machine.
const Limit = 5 * time.Second

// poll is how often a followed process's executable is read.
const poll = time.Millisecond

// shells are the interpreters a shim runs in; env is the #! line's
// launcher that execs one of them.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "env": true}

// Shell says whether exe (a path) is a shell, or the env that starts one.
func Shell(exe string) bool {
	return shells[filepath.Base(strings.TrimSuffix(exe, " (deleted)"))]
}

// Script says whether the file at path is a shim: at most 8 KiB, a #!
// line naming a shell (directly or through env), and a line that execs a
// program ("exec CMD …", not a bare redirection like "exec >log").
func Script(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxScript {
		return false
	}
	return script(io.LimitReader(f, maxScript))
}

// script is Script on the file's text.
func script(r io.Reader) bool {
	sc := bufio.NewScanner(r)
	if !sc.Scan() || !shebangShell(sc.Text()) {
		return false
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "exec" && !strings.ContainsAny(f[1][:1], "<>&0123456789") {
			return true
		}
	}
	return false
}

// shebangShell says whether a #! line names a shell.
func shebangShell(line string) bool {
	if !strings.HasPrefix(line, "#!") {
		return false
	}
	f := strings.Fields(line[2:])
	if len(f) > 0 && filepath.Base(f[0]) == "env" {
		f = f[1:]
		for len(f) > 0 && strings.HasPrefix(f[0], "-") {
			f = f[1:]
		}
	}
	return len(f) > 0 && Shell(f[0]) && filepath.Base(f[0]) != "env"
}

// Running says whether pid is in a shim now: its executable is a shell
// (or env) and the first file its command line names is a shim script.
// It returns that script.
func Running(root procstat.Root, pid int) (string, bool) {
	exe, err := root.ReadExe(pid)
	if err != nil || !Shell(exe) {
		return "", false
	}
	args, err := root.ReadCmdline(pid)
	if err != nil {
		return "", false
	}
	for _, a := range args[min(1, len(args)):] {
		if strings.HasPrefix(a, "-") || shells[a] {
			continue
		}
		if Script(a) {
			return a, true
		}
		break
	}
	return "", false
}

// Followed is where a shim led.
type Followed struct {
	Script string        // the shim, as the command named it
	Exe    string        // the program it exec'd ("" when it did not)
	After  time.Duration // how long the shim ran before it
	Why    string        // why it was not followed ("" when it was)
}

// OK says whether the process exec'd its program.
func (f Followed) OK() bool { return f.Exe != "" }

// Note says what happened, for the profile's notes.
func (f Followed) Note() string {
	if f.OK() {
		return fmt.Sprintf("%s is a shim (a shell script that execs its program): followed to %s, %s later; the per-thread figures start there",
			f.Script, f.Exe, result.FormatNs(float64(f.After)))
	}
	return fmt.Sprintf("%s is a shim (a shell script that execs its program) but was not followed: %s; profiled as it is", f.Script, f.Why)
}

// errGone is Follow's word for a process that exited in its shim.
var errGone = errors.New("it exited before it exec'd a program")

// Follow waits, reading pid's executable every millisecond for at most
// limit, until it is no longer a shell: the shim has exec'd its program.
// It ends early when the process exits or ctx ends; Followed says which.
func Follow(ctx context.Context, root procstat.Root, pid int, script string, limit time.Duration) Followed {
	f := Followed{Script: script}
	start := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		exe, err := root.ReadExe(pid)
		if err != nil {
			f.Why = errGone.Error()
			return f
		}
		if !Shell(exe) {
			f.Exe, f.After = exe, time.Since(start)
			return f
		}
		select {
		case <-ctx.Done():
			f.Why = "interrupted"
			return f
		case <-deadline.C:
			f.Why = fmt.Sprintf("it was still a shell (%s) after %s", exe, limit)
			return f
		case <-tick.C:
		}
	}
}
