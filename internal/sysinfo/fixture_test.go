package sysinfo

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/cgroup"
	"github.com/ctxlab/ctxlab/internal/result"
)

// fixture is the roots of testdata/<name>: proc, sys and the cgroup mount.
func fixture(name string) Roots {
	d := filepath.Join("testdata", name)
	return Roots{Proc: filepath.Join(d, "proc"), Sys: filepath.Join(d, "sys"), CgroupMount: filepath.Join(d, "cgroup")}
}

// TestDetectAtReadsTheFixture: every file DetectAt reads under /proc and
// /sys, from testdata/host — a 4-CPU, 2-core host with four caches (L2 shared by 2 CPUs, L3 by 4; and a
// fifth whose size is not a size), a governor, EEVDF's base slice, the
// sysctls and a v2 cgroup with a half-CPU quota.
func TestDetectAtReadsTheFixture(t *testing.T) {
	h := DetectAt(fixture("host"), 1)
	if want := []int{0, 1, 2, 3}; !reflect.DeepEqual(h.OnlineCPUs, want) {
		t.Errorf("online = %v, want %v", h.OnlineCPUs, want)
	}
	if h.Cores != 2 || h.ThreadsPerCore != 2 {
		t.Errorf("topology = %d cores × %d threads, want 2 × 2", h.Cores, h.ThreadsPerCore)
	}
	if h.CPUModel != "Fixture CPU @ 1.00GHz" || !h.Hypervisor {
		t.Errorf("cpuinfo: model %q, hypervisor %v", h.CPUModel, h.Hypervisor)
	}
	want := []result.Cache{
		{Level: 1, Type: "Data", SizeB: 48 * result.KiB},
		{Level: 1, Type: "Instruction", SizeB: 32 * result.KiB},
		{Level: 2, Type: "Unified", SizeB: result.MiB, SharedCPUs: 2},
		{Level: 3, Type: "Unified", SizeB: 32 * result.MiB, SharedCPUs: 4},
	}
	if !reflect.DeepEqual(h.Caches, want) {
		t.Errorf("caches = %+v, want %+v", h.Caches, want)
	}
	if h.LLCBytes() != 32*result.MiB {
		t.Errorf("LLC = %d", h.LLCBytes())
	}
	if !hasNote(h.Notes, `cache index4 left out: cache size: "lots" is not a size`) {
		t.Errorf("notes %q: want one for index4's size", h.Notes)
	}
	if h.PerfParanoid != -1 || h.ThreadsMax != 12345 {
		t.Errorf("sysctls: perf_event_paranoid %d, threads-max %d; want -1, 12345", h.PerfParanoid, h.ThreadsMax)
	}
	if h.MemAvailableB != 1024000*1024 {
		t.Errorf("MemAvailable = %d", h.MemAvailableB)
	}
	if h.Governor != "powersave" {
		t.Errorf("governor = %q", h.Governor)
	}
	if h.Scheduler != "EEVDF" || h.SchedSliceNs != 3000000 {
		t.Errorf("scheduler = %q, slice %d", h.Scheduler, h.SchedSliceNs)
	}
	if h.CgroupErr != nil || h.CgroupVersion != 2 || h.CPUQuota != "50000 100000" {
		t.Errorf("cgroup: v%d quota %q err %v; want v2, quota 50000 100000", h.CgroupVersion, h.CPUQuota, h.CgroupErr)
	}
	if got := h.CgroupText(); got != "v2, CPU quota 50000 100000" {
		t.Errorf("CgroupText = %q", got)
	}
}

// TestDetectAtCgroupUnknown: when cgroup discovery fails for a reason
// other than there being no CPU cgroup, the version and quota are unknown
// and say why — never v0 and "max".
func TestDetectAtCgroupUnknown(t *testing.T) {
	h := DetectAt(fixture("badcgroup"), 1)
	if h.CgroupErr == nil || !errors.Is(h.CgroupErr, cgroup.ErrParse) {
		t.Fatalf("CgroupErr = %v, want a parse error", h.CgroupErr)
	}
	if h.CgroupVersion != 0 || !strings.HasPrefix(h.CPUQuota, "unknown (") || h.CPUQuota == "max" {
		t.Errorf("cgroup v%d, quota %q; want no version and an unknown quota", h.CgroupVersion, h.CPUQuota)
	}
	got := h.CgroupText()
	if !strings.HasPrefix(got, "unknown (") || !strings.Contains(got, "/proc/1/cgroup") || strings.Contains(got, "max") {
		t.Errorf("CgroupText = %q, want unknown (<reason naming /proc/1/cgroup>)", got)
	}
	// No CPU cgroup at all is not unknown: no quota applies.
	h = DetectAt(Roots{Proc: filepath.Join("testdata", "host", "proc"), Sys: t.TempDir(), CgroupMount: t.TempDir()}, 1)
	if h.CgroupErr != nil || h.CPUQuota != "max" || h.CgroupVersion != 2 {
		t.Errorf("no cpu.max anywhere: v%d quota %q err %v; want v2, max, no error", h.CgroupVersion, h.CPUQuota, h.CgroupErr)
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func TestParseCacheSize(t *testing.T) {
	for in, want := range map[string]int64{"32K\n": 32 * result.KiB, "1024K": result.MiB, "8M\n": 8 * result.MiB, "0K": 0, "512": 512} {
		got, err := ParseCacheSize([]byte(in))
		if err != nil || got != want {
			t.Errorf("ParseCacheSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "K", "-1K", "lots", "32 K", "99999999999999999999K"} {
		if n, err := ParseCacheSize([]byte(bad)); err == nil {
			t.Errorf("ParseCacheSize(%q) = %d, want an error", bad, n)
		}
	}
}

func TestParseSysfsInt(t *testing.T) {
	for in, want := range map[string]int64{"3\n": 3, "3000000": 3000000, " -1 \n": -1} {
		if got, err := ParseSysfsInt([]byte(in)); err != nil || got != want {
			t.Errorf("ParseSysfsInt(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "3K", "x", "1 2"} {
		if _, err := ParseSysfsInt([]byte(bad)); err == nil {
			t.Errorf("ParseSysfsInt(%q) accepted", bad)
		}
	}
}

// FuzzParseCacheSize: any input fails or gives a size ≥ 0 that
// result.SizeName writes and result.ParseSize reads back.
func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"32K\n", "1024K", "8M", "0K", "lots", "-1K", "99999999999999999999K", "9007199254740992G"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseCacheSize(b)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("%q: negative size %d", b, n)
		}
		if back, err := result.ParseSize(result.SizeName(n)); err != nil || back != n {
			t.Fatalf("%q: %d does not round-trip: %d, %v", b, n, back, err)
		}
	})
}

// FuzzParseSysfsInt: any input fails or gives an integer that formats
// back to the trimmed input's value.
func FuzzParseSysfsInt(f *testing.F) {
	for _, s := range []string{"3\n", "-1", "", "x", "9223372036854775808"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseSysfsInt(b)
		if err != nil {
			return
		}
		if m, err := ParseSysfsInt([]byte(strings.TrimSpace(string(b)))); err != nil || m != n {
			t.Fatalf("%q: %d, trimmed %d, %v", b, n, m, err)
		}
	})
}
