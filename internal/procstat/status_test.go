package procstat

import (
	"errors"
	"os"
	"testing"
)

func TestUmask(t *testing.T) {
	if m, err := fixtures.ReadUmask(100); err != nil || m != 0o022 {
		t.Errorf("ReadUmask(100) = %o, %v", m, err)
	}
	if _, err := ParseUmask([]byte("Name:\tx\n")); !errors.Is(err, ErrNoField) {
		t.Errorf("no Umask line: %v", err)
	}
	for _, bad := range []string{"Umask:\t9\n", "Umask:\t\n", "Umask:\t1777\n"} {
		if _, err := ParseUmask([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("ParseUmask(%q) = %v, want ErrParse", bad, err)
		}
	}
}

func FuzzParseUmask(f *testing.F) {
	b, err := os.ReadFile("testdata/proc/100/status")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseUmask(b)
		if err != nil && !errors.Is(err, ErrParse) && !errors.Is(err, ErrNoField) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if m > 0o777 {
			t.Fatalf("umask %o", m)
		}
	})
}
