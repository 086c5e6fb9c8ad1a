package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// stillRunning reports whether pid is alive, not a zombie, and runs comm.
func stillRunning(pid int, comm string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	f := strings.Fields(s[end+1:])
	return open >= 0 && end > open && s[open+1:end] == comm && len(f) > 0 && f[0] != "Z"
}

// A command that exits leaving a child running: diagnose names the child
// in a note, says its later switches are not counted, and ends it with
// the command (nothing outlives ctxlab). A command that leaves nothing
// gets no such note.
func TestDiagnoseNamesLeftovers(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			// The child's output goes elsewhere: on a pipe to a buffer (not
			// a file, as a terminal is) it would hold the command's Wait.
			var out, errb syncBuf
			code := Main([]string{"diagnose", "--no-store", "--price=false", "--format", format, "--", "sh", "-c", "sleep 3 >/dev/null 2>&1 & echo $!; exit 0"}, &out, &errb)
			pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
			if err != nil {
				t.Fatalf("the command did not print its child's pid: %q; stderr %s", out.String(), errb.String())
			}
			t.Cleanup(func() {
				if stillRunning(pid, "sleep") {
					unix.Kill(pid, unix.SIGKILL)
				}
			})
			if code != 0 {
				t.Fatalf("exit %d, want the command's 0: %s", code, errb.String())
			}
			// The child is named as it is when the command exits: sleep, or
			// still sh when the fork has not yet reached its exec.
			want := fmt.Sprintf("the command left 1 process running when it exited (pid %d, ", pid)
			const rest = "): ended with it, so nothing outlives its run; what they did after its exit is not counted"
			var notes []string
			for _, l := range strings.Split(errb.String(), "\n") {
				if format == "table" && strings.HasPrefix(l, "note: ") {
					notes = append(notes, strings.TrimPrefix(l, "note: "))
				}
				var rec struct{ Kind, Text string }
				if format == "json" && json.Unmarshal([]byte(l), &rec) == nil && rec.Kind == "note" {
					notes = append(notes, rec.Text)
				}
			}
			found := false
			for _, n := range notes {
				found = found || strings.HasPrefix(n, want) && strings.Contains(n, rest)
			}
			if !found {
				t.Errorf("no note %q…%q among %q", want, rest, notes)
			}
			if stillRunning(pid, "sleep") {
				t.Errorf("the command's child %d is still running after diagnose", pid)
			}
		})
	}
	var out, errb syncBuf
	if code := Main([]string{"diagnose", "--no-store", "--price=false", "--format", "table", "--", "sh", "-c", "sleep 0.1; exit 0"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "running when it exited") {
		t.Errorf("a command that waited for its child got a leftover note:\n%s", errb.String())
	}
}
