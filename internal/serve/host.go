package serve

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/procfs"
)

// Host signals: what explains a change in the probes. /proc/stat gives the
// host-wide switch count, the run queue and steal; the cgroup's cpu.stat
// gives throttling under a CPU quota; per-CPU perf software counters give
// migrations where perf_event_paranoid allows system-wide counting.
var (
	descHostSwitches = prometheus.NewDesc("ctxlab_host_context_switches_total",
		"Context switches on the whole host since boot (/proc/stat ctxt); rate() gives switches per second.", nil, nil)
	descHostRunning = prometheus.NewDesc("ctxlab_host_procs_running",
		"Runnable threads on the host now (/proc/stat procs_running): the run queue.", nil, nil)
	descHostBlocked = prometheus.NewDesc("ctxlab_host_procs_blocked",
		"Threads blocked on I/O now (/proc/stat procs_blocked).", nil, nil)
	descHostSteal = prometheus.NewDesc("ctxlab_host_cpu_steal_seconds_total",
		"CPU time the hypervisor gave to others, summed over CPUs (/proc/stat steal).", nil, nil)
	descHostCPUs = prometheus.NewDesc("ctxlab_host_cpus",
		"CPUs listed in /proc/stat; divides the steal rate into a fraction.", nil, nil)
	descHostMigrations = prometheus.NewDesc("ctxlab_host_cpu_migrations_total",
		"Task migrations between CPUs on the whole host since the exporter started (perf cpu-migrations per CPU, summed).", nil, nil)
	descSignal = prometheus.NewDesc("ctxlab_host_signal_supported",
		"1 when a host signal can be read here, 0 when not (the log and the index page say why).", []string{"signal"}, nil)
	descCgPeriods = prometheus.NewDesc("ctxlab_cgroup_cpu_periods_total",
		"CFS enforcement periods of ctxlab's cgroup (cpu.stat nr_periods).", nil, nil)
	descCgThrottled = prometheus.NewDesc("ctxlab_cgroup_cpu_throttled_periods_total",
		"Periods in which ctxlab's cgroup was throttled by its CPU quota (cpu.stat nr_throttled).", nil, nil)
	descCgThrottledSec = prometheus.NewDesc("ctxlab_cgroup_cpu_throttled_seconds_total",
		"Time ctxlab's cgroup spent throttled (cpu.stat throttled_usec on v2, throttled_time on v1).", nil, nil)
	descCgQuota = prometheus.NewDesc("ctxlab_cgroup_cpu_quota_cores",
		"The cgroup's CPU quota in cores (quota/period); absent when there is no quota.", nil, nil)
)

// HostCollector reads the host signals at scrape time.
type HostCollector struct {
	fs        procfs.FS
	fsErr     error
	cgroupDir string
	cgroupVer int
	migr      *migrationCounter // nil when unsupported
	// Unsupported maps a signal to why it cannot be read here.
	Unsupported map[string]string
	mu          sync.Mutex
}

// NewHostCollector reads /proc under procRoot ("" = /proc) and the cgroup
// directory cgroupDir (v1 cpu controller or v2 unified; "" = none).
// migrationCPUs are the CPUs to count migrations on (nil: do not try).
func NewHostCollector(procRoot, cgroupDir string, cgroupVersion int, migrationCPUs []int) *HostCollector {
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	h := &HostCollector{cgroupDir: cgroupDir, cgroupVer: cgroupVersion, Unsupported: map[string]string{}}
	h.fs, h.fsErr = procfs.NewFS(procRoot)
	if h.fsErr != nil {
		h.Unsupported["stat"] = h.fsErr.Error()
	}
	if cgroupDir == "" {
		h.Unsupported["cgroup_throttling"] = "ctxlab's cgroup CPU controller was not found"
	} else if _, err := os.Stat(filepath.Join(cgroupDir, "cpu.stat")); err != nil {
		h.Unsupported["cgroup_throttling"] = "no cpu.stat in " + cgroupDir
	}
	if len(migrationCPUs) > 0 {
		m, err := openMigrationCounter(migrationCPUs)
		if err != nil {
			h.Unsupported["migrations"] = err.Error()
		} else {
			h.migr = m
		}
	} else {
		h.Unsupported["migrations"] = "not requested"
	}
	return h
}

// Close releases the perf counters.
func (h *HostCollector) Close() {
	if h.migr != nil {
		h.migr.close()
	}
}

// Describe implements prometheus.Collector.
func (h *HostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHostSwitches, descHostRunning, descHostBlocked, descHostSteal, descHostCPUs,
		descHostMigrations, descSignal, descCgPeriods, descCgThrottled, descCgThrottledSec, descCgQuota} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A signal that fails to read is
// left out of this scrape; the others are still reported.
func (h *HostCollector) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range []string{"stat", "migrations", "cgroup_throttling"} {
		_, bad := h.Unsupported[s]
		ch <- prometheus.MustNewConstMetric(descSignal, prometheus.GaugeValue, b2f(!bad), s)
	}
	if h.fsErr == nil {
		if st, err := h.fs.Stat(); err == nil {
			ch <- prometheus.MustNewConstMetric(descHostSwitches, prometheus.CounterValue, float64(st.ContextSwitches))
			ch <- prometheus.MustNewConstMetric(descHostRunning, prometheus.GaugeValue, float64(st.ProcessesRunning))
			ch <- prometheus.MustNewConstMetric(descHostBlocked, prometheus.GaugeValue, float64(st.ProcessesBlocked))
			ch <- prometheus.MustNewConstMetric(descHostSteal, prometheus.CounterValue, st.CPUTotal.Steal)
			ch <- prometheus.MustNewConstMetric(descHostCPUs, prometheus.GaugeValue, float64(len(st.CPU)))
		}
	}
	if h.migr != nil {
		if n, err := h.migr.read(); err == nil {
			ch <- prometheus.MustNewConstMetric(descHostMigrations, prometheus.CounterValue, float64(n))
		}
	}
	if _, bad := h.Unsupported["cgroup_throttling"]; !bad {
		if b, err := os.ReadFile(filepath.Join(h.cgroupDir, "cpu.stat")); err == nil {
			cs := parseCPUStat(b)
			ch <- prometheus.MustNewConstMetric(descCgPeriods, prometheus.CounterValue, float64(cs.NrPeriods))
			ch <- prometheus.MustNewConstMetric(descCgThrottled, prometheus.CounterValue, float64(cs.NrThrottled))
			ch <- prometheus.MustNewConstMetric(descCgThrottledSec, prometheus.CounterValue, cs.ThrottledSeconds)
		}
		if q, ok := readQuota(h.cgroupDir, h.cgroupVer); ok {
			ch <- prometheus.MustNewConstMetric(descCgQuota, prometheus.GaugeValue, q)
		}
	}
}

// CPUStat is the throttling part of a cgroup cpu.stat file; field names
// follow the kernel's.
type CPUStat struct {
	NrPeriods        uint64
	NrThrottled      uint64
	ThrottledSeconds float64 // throttled_usec (v2) or throttled_time in ns (v1)
}

// parseCPUStat parses cgroup v1 or v2 cpu.stat; unknown keys are ignored.
func parseCPUStat(b []byte) CPUStat {
	var s CPUStat
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		switch string(f[0]) {
		case "nr_periods":
			s.NrPeriods = v
		case "nr_throttled":
			s.NrThrottled = v
		case "throttled_usec":
			s.ThrottledSeconds = float64(v) / 1e6
		case "throttled_time":
			s.ThrottledSeconds = float64(v) / 1e9
		}
	}
	return s
}

// readQuota returns the CPU quota in cores, ok=false when there is none.
func readQuota(dir string, version int) (float64, bool) {
	switch version {
	case 2:
		b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
		if err != nil {
			return 0, false
		}
		return parseCPUMax(b)
	case 1:
		q, err1 := readInt64(filepath.Join(dir, "cpu.cfs_quota_us"))
		p, err2 := readInt64(filepath.Join(dir, "cpu.cfs_period_us"))
		if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
			return 0, false
		}
		return float64(q) / float64(p), true
	}
	return 0, false
}

// parseCPUMax parses cgroup v2 cpu.max ("max 100000" or "50000 100000").
func parseCPUMax(b []byte) (float64, bool) {
	f := bytes.Fields(b)
	if len(f) < 1 || string(f[0]) == "max" {
		return 0, false
	}
	q, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil || !(q > 0) || math.IsInf(q, 0) {
		return 0, false
	}
	period := 100000.0
	if len(f) > 1 {
		if p, err := strconv.ParseFloat(string(f[1]), 64); err == nil && p > 0 && !math.IsInf(p, 0) {
			period = p
		}
	}
	return q / period, true
}

func readInt64(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}
