// Package sysinfo describes the host as ctxlab sees it: CPUs, caches,
// kernel, virtualisation, limits, cgroup quota, and the noise signals
// (load, steal, throttling) sampled around each arm. It parses no kernel
// file itself: /proc files come through prometheus/procfs and procstat,
// cgroup files through the cgroup package.
package sysinfo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
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
}

// Detect reads the host. Failures to read optional facts become notes.
func Detect() *Host {
	h := &Host{}
	e := &h.Env
	e.Hostname, _ = os.Hostname()
	e.GoVersion = runtime.Version()
	e.GOMAXPROCS = runtime.GOMAXPROCS(0)
	e.LogicalCPUs = runtime.NumCPU()
	if online, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
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
	if fs, err := procfs.NewFS(string(procstat.DefaultRoot)); err == nil {
		if info, err := fs.CPUInfo(); err == nil {
			e.CPUModel, e.Hypervisor = cpuModel(info)
		}
	}
	e.Cores, e.ThreadsPerCore = topology(e.OnlineCPUs)
	e.Caches = caches()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		e.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	e.PerfParanoid = readInt("/proc/sys/kernel/perf_event_paranoid", 99)
	e.ThreadsMax = int64(readInt("/proc/sys/kernel/threads-max", 0))
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &rl) == nil {
		if rl.Cur > 1<<62 {
			e.NprocLimit = -1 // unlimited
		} else {
			e.NprocLimit = int64(rl.Cur)
		}
	}
	if mi, err := procfs.NewDefaultFS(); err == nil {
		if m, err := mi.Meminfo(); err == nil && m.MemAvailable != nil {
			e.MemAvailableB = int64(*m.MemAvailable) * 1024
		}
	}
	if g, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); err == nil {
		e.Governor = strings.TrimSpace(string(g))
	}
	h.Cgroup, _ = cgroup.Find(string(procstat.DefaultRoot), cgroup.DefaultMount, os.Getpid())
	e.CgroupVersion = h.Cgroup.Version
	e.CPUQuota = "max"
	if q, err := h.Cgroup.ReadQuota(); err == nil {
		e.CPUQuota = q.String()
	}
	e.Scheduler, e.SchedSliceNs = scheduler()
	n := Sample(h)
	e.Load1 = n.Load1
	if n.Total > 0 {
		e.StealPct = 100 * n.Steal / n.Total
	}
	return h
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

func topology(cpus []int) (cores, tpc int) {
	seen := map[string]bool{}
	for _, c := range cpus {
		base := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/", c)
		pkg, err1 := os.ReadFile(base + "physical_package_id")
		core, err2 := os.ReadFile(base + "core_id")
		if err1 != nil || err2 != nil {
			return len(cpus), 1
		}
		seen[strings.TrimSpace(string(pkg))+"/"+strings.TrimSpace(string(core))] = true
	}
	if len(seen) == 0 {
		return len(cpus), 1
	}
	return len(seen), len(cpus) / len(seen)
}

func caches() []result.Cache {
	var out []result.Cache
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*")
	for _, d := range dirs {
		lvl := readInt(filepath.Join(d, "level"), 0)
		typ, _ := os.ReadFile(filepath.Join(d, "type"))
		size, _ := os.ReadFile(filepath.Join(d, "size"))
		out = append(out, result.Cache{Level: lvl, Type: strings.TrimSpace(string(typ)), SizeB: parseSize(strings.TrimSpace(string(size)))})
	}
	return out
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

func parseSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1024, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n * mult
}

func readInt(path string, def int) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return def
	}
	return n
}

// scheduler tells EEVDF (which shows se.slice in /proc/<pid>/sched) from
// CFS, and returns the slice where the kernel exposes it.
func scheduler() (string, int64) {
	if b, err := os.ReadFile("/sys/kernel/debug/sched/base_slice_ns"); err == nil {
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return "EEVDF", n
	}
	pid := os.Getpid()
	if sc, err := procstat.DefaultRoot.ReadSched(pid, pid); err == nil {
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
	var n Noise
	if fs, err := procfs.NewDefaultFS(); err == nil {
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
