package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
)

// TestHogsValidation: bad --hogs values are usage errors (exit 2) that name
// the value and the allowed range, before anything starts.
func TestHogsValidation(t *testing.T) {
	if os.Getenv(child.EnvRole) != "" {
		t.Skip("child process")
	}
	for _, c := range []struct{ arg, want string }{
		{"--hogs=-1", "--hogs -1: must be in 0..1024"},
		{"--hogs=5000", "--hogs 5000: must be in 0..1024"},
		{"--hogs=1,x", `is not a whole number`},
	} {
		var out, errb bytes.Buffer
		code := Main([]string{"run", "interference", c.arg}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.arg, code, errb.String(), c.want)
		}
		if child.Alive() != 0 {
			t.Fatalf("%s: a child was started", c.arg)
		}
	}
}
