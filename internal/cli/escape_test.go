package cli

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A thread that names itself an OSC 52 (clipboard) sequence is shown
// escaped by watch, in the table and in JSON: its bytes never reach the
// viewer's terminal.
func TestWatchEscapesThreadNames(t *testing.T) {
	const evil = "\x1b]52;c;SGk=\x07"
	named, stop := make(chan error), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with its odd name
		name := append([]byte(evil), 0)
		named <- unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
		<-stop
	}()
	if err := <-named; err != nil {
		t.Skipf("PR_SET_NAME: %v", err)
	}
	defer close(stop)
	pid := strconv.Itoa(os.Getpid())
	for _, format := range []string{"table", "json"} {
		code, out, errs := run(t, "watch", pid, "--count", "1", "--interval", "50ms", "--top", "0", "--format", format)
		if code != 0 {
			t.Fatalf("watch --format %s: exit %d: %s", format, code, errs)
		}
		if strings.ContainsRune(out+errs, 0x1b) || strings.ContainsRune(out+errs, 0x07) {
			t.Errorf("watch --format %s wrote the raw escape sequence", format)
		}
		want := `"\x1b]52;c;SGk=\a"`
		if format == "json" {
			want = `\u001b]52;c;SGk=\u0007`
		}
		if !strings.Contains(out, want) {
			t.Errorf("watch --format %s: the thread is not shown as %s:\n%s", format, want, out)
		}
	}
}
