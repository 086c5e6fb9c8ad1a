package procstat

import (
	"errors"
	"os"
	"testing"
)

func TestMemory(t *testing.T) {
	if rss, err := fixtures.ReadRSS(100); err != nil || rss != 1776*1024 {
		t.Errorf("ReadRSS(100) = %d, %v", rss, err)
	}
	if pss, err := fixtures.ReadPss(100); err != nil || pss != 900*1024 {
		t.Errorf("ReadPss(100) = %d, %v", pss, err)
	}
	if ks, err := fixtures.ReadKernelStack(); err != nil || ks != 5120*1024 {
		t.Errorf("ReadKernelStack = %d, %v", ks, err)
	}
	if _, err := fixtures.ReadRSS(999); !errors.Is(err, ErrNoProcess) {
		t.Errorf("ReadRSS(999) = %v, want ErrNoProcess", err)
	}
	if _, err := Root(t.TempDir()).ReadKernelStack(); err == nil {
		t.Error("ReadKernelStack without meminfo succeeded")
	}
}

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
