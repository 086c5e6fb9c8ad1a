package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

func TestPythonFlagSetsOption(t *testing.T) {
	o := &RunOptions{}
	c := &cobra.Command{Use: "run", RunE: func(*cobra.Command, []string) error { return nil }}
	addRunFlags(c, o)
	if err := c.ParseFlags([]string{"--set", "x=1", "--python", "all"}); err != nil {
		t.Fatal(err)
	}
	if err := c.PreRunE(c, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Set, " ") != "x=1 python=all" {
		t.Fatalf("--set values = %q, want the --python choice added", o.Set)
	}
}
