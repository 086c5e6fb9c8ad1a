package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func TestPythonFlagValidated(t *testing.T) {
	for _, bad := range []string{"/no/such/python3", ""} {
		var out, errb bytes.Buffer
		code := Main([]string{"run", "python", "--python", bad}, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), "--python") {
			t.Errorf("--python %q: exit %d, stderr %q; want 2 naming the flag", bad, code, errb.String())
		}
	}
}

// --python and its alias --set python=… both arrive as the typed
// exp.Params.Python, never as an extra option; two different choices are
// refused.
func TestPythonFlagSetsParams(t *testing.T) {
	host := sysinfo.Detect()
	for _, tc := range []struct {
		flags []string
		want  string
		bad   bool
	}{
		{[]string{"--python", "all"}, "all", false},
		{[]string{"--set", "python=all"}, "all", false},
		{[]string{"--set", "python=all", "--python", "all"}, "all", false},
		{[]string{"--set", "python=all", "--python", "python3"}, "", true},
		{nil, "", false},
	} {
		o := &RunOptions{}
		c := &cobra.Command{Use: "run"}
		addRunFlags(c, o)
		if err := c.ParseFlags(tc.flags); err != nil {
			t.Fatal(err)
		}
		pl, err := validate(o, []string{"pingpong/goroutine/*"}, host)
		if tc.bad {
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "disagree") {
				t.Errorf("%q: err %v, want a usage error", tc.flags, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.flags, err)
		}
		if pl.params.Python != tc.want {
			t.Errorf("%q: Params.Python = %q, want %q", tc.flags, pl.params.Python, tc.want)
		}
		if _, ok := pl.params.Options.Text("python"); ok {
			t.Errorf("%q: python left in Params.Options", tc.flags)
		}
	}
}
