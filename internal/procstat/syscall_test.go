package procstat

import (
	"errors"
	"os"
	"testing"
)

func TestTaskStateAndSyscall(t *testing.T) {
	if s, err := fixtures.ReadTaskState(100, 100); err != nil || s != "S" {
		t.Errorf("ReadTaskState(100, 100) = %q, %v", s, err)
	}
	if sc, err := fixtures.ReadSyscall(100, 100); err != nil || sc != (Syscall{Nr: 202}) {
		t.Errorf("ReadSyscall(100, 100) = %+v, %v", sc, err)
	}
	if sc, err := fixtures.ReadSyscall(100, 101); err != nil || !sc.Running {
		t.Errorf("ReadSyscall(100, 101) = %+v, %v", sc, err)
	}
	if sc, err := ParseSyscall([]byte("-1 0x7ffd1000 0x7f0000abcd\n")); err != nil || sc != (Syscall{Nr: -1}) {
		t.Errorf("blocked outside a syscall = %+v, %v", sc, err)
	}
	for _, bad := range []string{"", "\n", "x 0x1", "-2 0x1"} {
		if _, err := ParseSyscall([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("ParseSyscall(%q) = %v, want ErrParse", bad, err)
		}
	}
}

func FuzzParseSyscall(f *testing.F) {
	for _, p := range []string{"testdata/proc/100/task/100/syscall", "testdata/proc/100/task/101/syscall"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := ParseSyscall(b)
		if err != nil && !errors.Is(err, ErrParse) {
			t.Fatalf("error %v does not wrap ErrParse", err)
		}
		if err == nil && (sc.Nr < -1 || sc.Running && sc.Nr != -1) {
			t.Fatalf("ParseSyscall(%q) = %+v", b, sc)
		}
	})
}
