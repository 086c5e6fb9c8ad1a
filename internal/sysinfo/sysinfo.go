// Package sysinfo describes the host as ctxlab sees it: CPUs, caches,
// kernel, virtualisation, limits, cgroup quota, and the noise signals
// (load, steal, throttling) sampled around each arm. /proc files, the
// /proc/sys scalars and sysfs CPU topology come through prometheus/procfs
// and procstat, cgroup files through the cgroup package; the sysfs files
// procfs does not cover have one pure parser each here (ParseCPUList,
// ParseCacheSize, ParseSysfsInt, ParseConfigHZ), sizes through
// result.ParseSize. DetectAt reads them from fixture roots in tests.
package sysinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/sysfs"
	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/cgroup"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Host is the machine's fixed facts plus helpers to validate requests.
type Host struct {
	result.Env
	// Cgroup is this process's CPU cgroup (v2, or the v1 cpu controller);
	// its Path is "" when none was found.
	Cgroup cgroup.Dir
	// CgroupErr says why the cgroup is unknown: discovery failed for a
	// reason other than there being no CPU cgroup (an unreadable or
	// malformed /proc/<pid>/cgroup, say). Nil when it was found, or when
	// the process has no CPU cgroup (then no CPU quota applies).
	CgroupErr error
}

// Roots are where Detect reads the kernel's files; tests point them at
// fixture trees.
type Roots struct {
	Proc        string // normally /proc
	Sys         string // normally /sys
	CgroupMount string // normally /sys/fs/cgroup
}

// DefaultRoots are the running kernel's.
var DefaultRoots = Roots{Proc: string(procstat.DefaultRoot), Sys: "/sys", CgroupMount: cgroup.DefaultMount}

// Detect reads the host. Failures to read optional facts become notes.
func Detect() *Host { return DetectAt(DefaultRoots, os.Getpid()) }

// DetectAt reads the host from the files under r, taking pid as the
// process whose cgroup and scheduler to read. What is not a file (the Go
// runtime, uname, rlimits) is this process's.
func DetectAt(r Roots, pid int) *Host {
	h := &Host{}
	e := &h.Env
	e.Hostname, _ = os.Hostname()
	e.GoVersion = runtime.Version()
	e.GOMAXPROCS = runtime.GOMAXPROCS(0)
	e.CgoEnabled = buildSetting("CGO_ENABLED")
	e.LogicalCPUs = runtime.NumCPU()
	cpuDir := filepath.Join(r.Sys, "devices", "system", "cpu")
	if online, err := os.ReadFile(filepath.Join(cpuDir, "online")); err == nil {
		if cpus, err := ParseCPUList(strings.TrimSpace(string(online))); err == nil {
			e.OnlineCPUs = cpus
		}
	}
	if len(e.OnlineCPUs) == 0 {
		for i := 0; i < e.LogicalCPUs; i++ {
			e.OnlineCPUs = append(e.OnlineCPUs, i)
		}
		e.Notes = append(e.Notes, "online CPUs unknown; assuming 0.."+strconv.Itoa(e.LogicalCPUs-1))
	}
	pfs, pfsErr := procfs.NewFS(r.Proc)
	if pfsErr == nil {
		if info, err := pfs.CPUInfo(); err == nil {
			e.CPUModel, e.Hypervisor = cpuModel(info)
		}
	}
	e.Cores, e.ThreadsPerCore = topology(cpuDir, e.OnlineCPUs)
	var notes []string
	e.Caches, notes = caches(filepath.Join(cpuDir, "cpu0", "cache"))
	e.Notes = append(e.Notes, notes...)
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		e.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	e.PerfParanoid = sysctl(pfs, pfsErr, "kernel.perf_event_paranoid", 99)
	e.ThreadsMax = int64(sysctl(pfs, pfsErr, "kernel.threads-max", 0))
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil {
		if rl.Cur > 1<<62 {
			e.NprocLimit = -1 // unlimited
		} else {
			e.NprocLimit = int64(rl.Cur)
		}
	}
	if pfsErr == nil {
		if m, err := pfs.Meminfo(); err == nil && m.MemAvailable != nil {
			e.MemAvailableB = int64(*m.MemAvailable) * 1024
		}
	}
	if g, err := os.ReadFile(filepath.Join(cpuDir, "cpu0", "cpufreq", "scaling_governor")); err == nil {
		e.Governor = strings.TrimSpace(string(g))
	}
	h.detectCgroup(r, pid)
	e.Scheduler, e.SchedSliceNs = scheduler(r, pid)
	n := sample(h, pfs, pfsErr)
	e.Load1 = n.Load1
	if n.Total > 0 {
		e.StealPct = 100 * n.Steal / n.Total
	}
	return h
}

// detectCgroup finds pid's CPU cgroup and its quota. No CPU cgroup means
// no quota ("max"); a discovery or quota read that fails for any other
// reason leaves both unknown and says why, never a guessed "max".
func (h *Host) detectCgroup(r Roots, pid int) {
	e := &h.Env
	d, err := cgroup.Find(r.Proc, r.CgroupMount, pid)
	if err != nil && !errors.Is(err, cgroup.ErrNotFound) {
		h.CgroupErr = err
		e.CPUQuota = "unknown (" + err.Error() + ")"
		return
	}
	h.Cgroup = d
	e.CgroupVersion = d.Version
	e.CPUQuota = "max"
	if d.Path == "" {
		return
	}
	q, err := d.ReadQuota()
	if err != nil {
		e.CPUQuota = "unknown (" + err.Error() + ")"
		return
	}
	e.CPUQuota = q.String()
}

// CgroupText is the cgroup as env shows it: "v2, CPU quota max", or
// "unknown (<reason>)" when discovery failed.
func (h *Host) CgroupText() string {
	if h.CgroupErr != nil {
		return "unknown (" + h.CgroupErr.Error() + ")"
	}
	return fmt.Sprintf("v%d, CPU quota %s", h.CgroupVersion, h.CPUQuota)
}

// sysctl is /proc/sys/<name with / for .> as procfs reads it: its one
// integer, or def when it cannot be read.
func sysctl(fs procfs.FS, fsErr error, name string, def int) int {
	if fsErr != nil {
		return def
	}
	v, err := fs.SysctlInts(name)
	if err != nil || len(v) != 1 {
		return def
	}
	return v[0]
}

// MaxCPUs is the most CPUs a Linux kernel can be built for
// (CONFIG_NR_CPUS ≤ 8192); CPU numbers are 0..MaxCPUs-1.
const MaxCPUs = 8192

// ParseCPUList parses a kernel CPU list such as "0-3,8,10-11" into sorted,
// distinct CPU numbers. Every number is checked against MaxCPUs before
// anything is expanded, so a range like 0-99999999 costs nothing.
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty CPU list")
	}
	var seen [MaxCPUs]bool
	cpu := func(x, part string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if errors.Is(err, strconv.ErrRange) || n >= MaxCPUs {
			return 0, fmt.Errorf("CPU %s in list %q is beyond the largest CPU number Linux supports (%d)", strings.TrimSpace(x), s, MaxCPUs-1)
		}
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad CPU %q in list %q; want CPU numbers 0..%d such as 0,2-3", part, s, MaxCPUs-1)
		}
		return n, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := cpu(lo, part)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = cpu(hi, part); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("bad CPU range %q in list %q: the end is below the start", part, s)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	var out []int
	for c, ok := range seen {
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// ValidateCPUs checks that every CPU in cpus is online and returns an error
// naming the bad one and the allowed set.
func (h *Host) ValidateCPUs(cpus []int) error {
	online := map[int]bool{}
	for _, c := range h.OnlineCPUs {
		online[c] = true
	}
	for _, c := range cpus {
		if !online[c] {
			return fmt.Errorf("CPU %d is not online; online CPUs are %s", c, FormatCPUList(h.OnlineCPUs))
		}
	}
	return nil
}

// FormatCPUList renders cpus as a kernel-style list ("0-3,6").
func FormatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}

// cpuModel is the first CPU's model name and whether the kernel flags a
// hypervisor, from /proc/cpuinfo as procfs parses it.
func cpuModel(info []procfs.CPUInfo) (model string, hypervisor bool) {
	for _, c := range info {
		if model == "" {
			model = c.ModelName
		}
		if slices.Contains(c.Flags, "hypervisor") {
			hypervisor = true
		}
	}
	return model, hypervisor
}

// topology counts the distinct (package, core) pairs of cpus from each
// one's topology directory under cpuDir, as procfs's sysfs package reads it.
func topology(cpuDir string, cpus []int) (cores, tpc int) {
	seen := map[string]bool{}
	for _, c := range cpus {
		t, err := sysfs.CPU(filepath.Join(cpuDir, "cpu"+strconv.Itoa(c))).Topology()
		if err != nil {
			return len(cpus), 1
		}
		seen[t.PhysicalPackageID+"/"+t.CoreID] = true
	}
	if len(seen) == 0 {
		return len(cpus), 1
	}
	return len(seen), len(cpus) / len(seen)
}

// caches reads dir/index*/{level,type,size} (sysfs, cpu0's caches). An
// index whose level or size does not parse is left out with a note.
func caches(dir string) (out []result.Cache, notes []string) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "index[0-9]*"))
	for _, d := range dirs {
		lb, err1 := os.ReadFile(filepath.Join(d, "level"))
		typ, err2 := os.ReadFile(filepath.Join(d, "type"))
		sb, err3 := os.ReadFile(filepath.Join(d, "size"))
		if err := errors.Join(err1, err2, err3); err != nil {
			notes = append(notes, "cache "+filepath.Base(d)+" unreadable: "+err.Error())
			continue
		}
		lvl, err1 := ParseSysfsInt(lb)
		size, err2 := ParseCacheSize(sb)
		if err := errors.Join(err1, err2); err != nil || lvl < 0 || lvl > 9 {
			if err == nil {
				err = fmt.Errorf("level %d is not a cache level", lvl)
			}
			notes = append(notes, "cache "+filepath.Base(d)+" left out: "+err.Error())
			continue
		}
		c := result.Cache{Level: int(lvl), Type: strings.TrimSpace(string(typ)), SizeB: size}
		if b, err := os.ReadFile(filepath.Join(d, "shared_cpu_list")); err == nil {
			c.SharedCPUs = CountCPUList(b)
		}
		out = append(out, c)
	}
	return out, notes
}

// CountCPUList is how many CPUs a sysfs CPU list names ("0-3,8\n": 5),
// 0 when it does not parse.
func CountCPUList(b []byte) int {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z, err2 := a, error(nil)
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return 0
		}
		n += z - a + 1
	}
	return n
}

// ParseCacheSize reads a sysfs cache size file (cache/index*/size, e.g.
// "32K\n") with result.ParseSize, the one size parser.
func ParseCacheSize(b []byte) (int64, error) {
	n, err := result.ParseSize(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("cache size: %w", err)
	}
	return n, nil
}

// ParseSysfsInt reads a sysfs file that holds one decimal integer (a cache
// level, the scheduler's base_slice_ns).
func ParseSysfsInt(b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

// LLCBytes is the size of the largest cache, or 32 MiB when unknown.
func (h *Host) LLCBytes() int64 {
	var max int64
	for _, c := range h.Caches {
		if c.SizeB > max {
			max = c.SizeB
		}
	}
	if max == 0 {
		return 32 << 20
	}
	return max
}

// scheduler tells EEVDF (which shows se.slice in /proc/<pid>/sched) from
// CFS, and returns the slice where the kernel exposes it.
func scheduler(r Roots, pid int) (string, int64) {
	if b, err := os.ReadFile(filepath.Join(r.Sys, "kernel", "debug", "sched", "base_slice_ns")); err == nil {
		if n, err := ParseSysfsInt(b); err == nil && n > 0 {
			return "EEVDF", n
		}
	}
	if sc, err := procstat.Root(r.Proc).ReadSched(pid, pid); err == nil {
		if sc.HasSlice {
			return "EEVDF", int64(sc.SliceNs)
		}
		return "CFS", 0
	}
	return "", 0
}

// Noise is a sample of the host's noise signals at one moment.
type Noise struct {
	Load1        float64
	Steal, Total float64 // CPU seconds, all CPUs, since boot
	ProcsRunning uint64
	Throttled    int64 // periods
	ThrottledUs  int64
}

// Sample reads the noise signals now.
func Sample(h *Host) Noise {
	fs, err := procfs.NewDefaultFS()
	return sample(h, fs, err)
}

func sample(h *Host, fs procfs.FS, err error) Noise {
	var n Noise
	if err == nil {
		if la, err := fs.LoadAvg(); err == nil {
			n.Load1 = la.Load1
		}
		if st, err := fs.Stat(); err == nil {
			c := st.CPUTotal
			n.Steal = c.Steal
			n.Total = c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
			n.ProcsRunning = st.ProcessesRunning
		}
	}
	if h != nil {
		if cs, err := h.Cgroup.ReadCPUStat(); err == nil {
			n.Throttled, n.ThrottledUs = int64(cs.NrThrottled), int64(cs.ThrottledUsec+cs.ThrottledTime/1000)
		}
	}
	return n
}

// buildSetting is the value of key in the binary's build settings, or ""
// where the build did not record it.
func buildSetting(key string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
