package procstat

import (
	"errors"
	"testing"
)

func TestParseSchedstat(t *testing.T) {
	r, w, s, err := ParseSchedstat([]byte("123456 7890 42\n"))
	if err != nil || r != 123456 || w != 7890 || s != 42 {
		t.Fatalf("got %d %d %d %v", r, w, s, err)
	}
	for _, bad := range []string{"", "1 2", "1 2 3 4", "1 x 3", "-1 2 3"} {
		if _, _, _, err := ParseSchedstat([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("%q: err %v, want ErrParse", bad, err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ParseSchedstat([]byte("1 2 3\n")) }); n != 0 {
		t.Errorf("ParseSchedstat allocates %v times", n)
	}
}
