package experiments

import (
	"os"
	"strings"
	"testing"
)

// A child role's arguments: the count, the inherited files and each whole
// number checked, the numbers returned in the order asked, and an error
// that names the role and what it wants.
func TestChildArgs(t *testing.T) {
	two := []*os.File{os.Stdin, os.Stdout}
	if v, err := childArgs("t", "x", []string{"spin", "4096"}, nil, 2, 0, 1); err != nil || len(v) != 1 || v[0] != 4096 {
		t.Errorf("good arguments: %v, %v", v, err)
	}
	if v, err := childArgs("t", "x", []string{"7"}, two, 1, 2, 0); err != nil || v[0] != 7 {
		t.Errorf("good arguments and files: %v, %v", v, err)
	}
	for name, c := range map[string]struct {
		args  []string
		files []*os.File
		want  string
	}{
		"too few arguments": {[]string{"7"}, two, "hog child: want a count and a kind"},
		"too few files":     {[]string{"7", "spin"}, two[:1], "hog child: want a count and a kind"},
		"not a number":      {[]string{"seven", "spin"}, two, `hog child: strconv.ParseInt: parsing "seven"`},
	} {
		if _, err := childArgs("hog", "a count and a kind", c.args, c.files, 2, 2, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", name, err, c.want)
		}
	}
}
