package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		tree    string
		version int
		dir     string // under the tree's mnt; "" = none found
		quota   string
		cores   float64
		stat    CPUStat
	}{
		{"v2", 2, "user.slice/app.service", "150000 100000", 1.5,
			CPUStat{UsageUsec: 987654, NrPeriods: 800, NrThrottled: 12, ThrottledUsec: 250000}},
		{"v1", 1, "cpu,cpuacct/docker/abc", "50000 100000", 0.5,
			CPUStat{NrPeriods: 1200, NrThrottled: 37, ThrottledTime: 4500000000}},
		{"hybrid", 1, "cpu/user.slice", "max", 0, CPUStat{}},
		{"container", 1, "cpu,cpuacct", "200000 100000", 2,
			CPUStat{NrPeriods: 10, NrThrottled: 4, ThrottledTime: 5000000}},
		{"missing", 2, "", "", 0, CPUStat{}},
	} {
		t.Run(tc.tree, func(t *testing.T) {
			root := filepath.Join("testdata", tc.tree)
			mnt := filepath.Join(root, "mnt")
			d, err := Find(filepath.Join(root, "proc"), mnt, 1)
			if d.Version != tc.version {
				t.Errorf("version %d, want %d", d.Version, tc.version)
			}
			if tc.dir == "" {
				if !errors.Is(err, ErrNotFound) || d.Path != "" {
					t.Fatalf("Find = %+v, %v; want ErrNotFound", d, err)
				}
				if _, err := d.ReadCPUStat(); !errors.Is(err, ErrNotFound) {
					t.Errorf("ReadCPUStat of no directory = %v", err)
				}
				return
			}
			if err != nil || d.Path != filepath.Join(mnt, tc.dir) {
				t.Fatalf("Find = %+v, %v; want %s", d, err, filepath.Join(mnt, tc.dir))
			}
			q, err := d.ReadQuota()
			if err != nil || q.String() != tc.quota {
				t.Errorf("quota %q, %v; want %q", q, err, tc.quota)
			}
			if c, ok := q.Cores(); c != tc.cores || ok != (tc.cores > 0) {
				t.Errorf("cores %v, %v; want %v", c, ok, tc.cores)
			}
			s, err := d.ReadCPUStat()
			if err != nil || s != tc.stat {
				t.Errorf("cpu.stat %+v, %v; want %+v", s, err, tc.stat)
			}
		})
	}
	if _, err := Find("testdata/v2/proc", "testdata/v2/mnt", 999); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Find of a missing PID = %v, want ErrNotExist", err)
	}
}

func TestThrottledSeconds(t *testing.T) {
	if s := (CPUStat{ThrottledUsec: 250000}).ThrottledSeconds(); s != 0.25 {
		t.Errorf("v2: %v", s)
	}
	if s := (CPUStat{ThrottledTime: 4500000000}).ThrottledSeconds(); s != 4.5 {
		t.Errorf("v1: %v", s)
	}
}

func TestParseCPUMax(t *testing.T) {
	for in, want := range map[string]string{"max 100000\n": "max", "max": "max", "150000 100000": "150000 100000", "20000": "20000 100000"} {
		if got, err := ParseCPUMax([]byte(in)); err != nil || got.String() != want {
			t.Errorf("ParseCPUMax(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x 100000", "1 0", "1 2 3", "-5 100000", "0 100000", "NaN 100000", "Inf 100000", "max -1"} {
		if _, err := ParseCPUMax([]byte(in)); !errors.Is(err, ErrParse) {
			t.Errorf("ParseCPUMax(%q) = %v, want ErrParse", in, err)
		}
	}
}

func TestParseCFSBandwidth(t *testing.T) {
	if q, err := ParseCFSBandwidth([]byte("-1\n"), []byte("100000\n")); err != nil || !q.Unlimited() || q.String() != "max" {
		t.Errorf("-1 = %+v, %v", q, err)
	}
	for _, bad := range [][2]string{{"0", "100000"}, {"-2", "100000"}, {"x", "100000"}, {"50000", "0"}, {"50000", ""}} {
		if _, err := ParseCFSBandwidth([]byte(bad[0]), []byte(bad[1])); !errors.Is(err, ErrParse) {
			t.Errorf("ParseCFSBandwidth(%q, %q) = %v, want ErrParse", bad[0], bad[1], err)
		}
	}
}

func TestParseCPUStat(t *testing.T) {
	if _, err := ParseCPUStat([]byte("garbage\n\nnr_bursts x\n")); err != nil {
		t.Errorf("unused keys: %v", err)
	}
	for _, bad := range []string{"nr_periods x\n", "nr_throttled -1\n", "throttled_usec 1 2\n", "nr_periods\n"} {
		if _, err := ParseCPUStat([]byte(bad)); !errors.Is(err, ErrParse) {
			t.Errorf("ParseCPUStat(%q) = %v, want ErrParse", bad, err)
		}
	}
}

func seed(f *testing.F, files ...string) {
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseCPUMax(f *testing.F) {
	seed(f, "testdata/v2/mnt/user.slice/app.service/cpu.max")
	f.Add([]byte("max 100000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseCPUMax(b)
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			return
		}
		if c, ok := q.Cores(); q.Period <= 0 || ok != !q.Unlimited() || ok && !(c > 0) {
			t.Fatalf("ParseCPUMax(%q) = %+v: cores %v, %v", b, q, c, ok)
		}
		if back, err := ParseCPUMax([]byte(q.String())); err != nil || back.String() != q.String() {
			t.Fatalf("%q does not parse back: %+v, %v", q.String(), back, err)
		}
	})
}

func FuzzParseCFSBandwidth(f *testing.F) {
	f.Add([]byte("-1\n"), []byte("100000\n"))
	f.Add([]byte("50000"), []byte("100000"))
	f.Fuzz(func(t *testing.T, q, p []byte) {
		m, err := ParseCFSBandwidth(q, p)
		if err != nil {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			return
		}
		if c, ok := m.Cores(); ok != !m.Unlimited() || ok && !(c > 0) {
			t.Fatalf("ParseCFSBandwidth(%q, %q) = %+v", q, p, m)
		}
	})
}

func FuzzParseCPUStat(f *testing.F) {
	seed(f, "testdata/v1/mnt/cpu,cpuacct/docker/abc/cpu.stat", "testdata/v2/mnt/user.slice/app.service/cpu.stat")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseCPUStat(b)
		if err != nil && !errors.Is(err, ErrParse) {
			t.Fatalf("error %v does not wrap ErrParse", err)
		}
		if s.ThrottledSeconds() < 0 {
			t.Fatalf("negative throttled time %v", s.ThrottledSeconds())
		}
	})
}

// FuzzFind feeds arbitrary /proc/<pid>/cgroup files (parsed by procfs)
// through Find over the v1 fixture's mount: it returns a directory or an
// error, never panics, and a directory it returns is one of the mount's.
func FuzzFind(f *testing.F) {
	seed(f, "testdata/v1/proc/1/cgroup", "testdata/v2/proc/1/cgroup", "testdata/hybrid/proc/1/cgroup")
	root := f.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "1"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(root, "1", "cgroup"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Find(root, "testdata/v1/mnt", 1)
		if err != nil {
			if !errors.Is(err, ErrParse) && !errors.Is(err, ErrNotFound) {
				t.Fatalf("Find: %v", err)
			}
			return
		}
		if rel, err := filepath.Rel("testdata/v1/mnt", d.Path); err != nil || rel == ".." || len(rel) > 1 && rel[:2] == ".." {
			t.Fatalf("Find = %+v: outside the mount", d)
		}
	})
}
