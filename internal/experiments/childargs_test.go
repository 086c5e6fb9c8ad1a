package experiments

import (
	"os"
	"testing"
)

// A child role's arguments: the count, the inherited files and each whole
// number checked, the numbers returned in the order asked.
func TestChildArgs(t *testing.T) {
	two := []*os.File{os.Stdin, os.Stdout}
	if v, ok := childArgs("t", "x", []string{"spin", "4096"}, nil, 2, 0, 1); !ok || len(v) != 1 || v[0] != 4096 {
		t.Errorf("good arguments: %v, %v", v, ok)
	}
	if v, ok := childArgs("t", "x", []string{"7"}, two, 1, 2, 0); !ok || v[0] != 7 {
		t.Errorf("good arguments and files: %v, %v", v, ok)
	}
	for name, c := range map[string]struct {
		args  []string
		files []*os.File
	}{
		"too few arguments": {[]string{"7"}, two},
		"too few files":     {[]string{"7", "spin"}, two[:1]},
		"not a number":      {[]string{"seven", "spin"}, two},
	} {
		if _, ok := childArgs("t", "x", c.args, c.files, 2, 2, 0); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}
