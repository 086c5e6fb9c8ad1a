package cli

import (
	"bytes"
	"strings"
	"testing"
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
	c := newRunCmd(&bytes.Buffer{}, &bytes.Buffer{})
	_ = o
	if c.Flags().Lookup("python") == nil {
		t.Fatal("run has no --python flag")
	}
	if err := checkPythonFlag("all"); err != nil {
		t.Fatalf("all: %v", err)
	}
}
