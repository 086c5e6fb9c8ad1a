package serve

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Cgroup throttling of ctxlab's own cgroup: the one host signal the probes
// need that node_exporter cannot give (it reports the host, not the cgroup
// ctxlab runs in). A throttled period stretches a probe's ops, so a
// latency rise that comes with throttling is a quota, not the host.
var (
	descCgPeriods = prometheus.NewDesc("ctxlab_cgroup_cpu_periods_total",
		"CFS enforcement periods of ctxlab's cgroup (cpu.stat nr_periods).", nil, nil)
	descCgThrottled = prometheus.NewDesc("ctxlab_cgroup_cpu_throttled_periods_total",
		"Periods in which ctxlab's cgroup, its probes included, was throttled by its CPU quota (cpu.stat nr_throttled).", nil, nil)
	descCgThrottledSec = prometheus.NewDesc("ctxlab_cgroup_cpu_throttled_seconds_total",
		"Time ctxlab's cgroup, its probes included, spent throttled (cpu.stat throttled_usec on v2, throttled_time on v1).", nil, nil)
	descCgQuota = prometheus.NewDesc("ctxlab_cgroup_cpu_quota_cores",
		"The CPU quota of ctxlab's cgroup in cores (quota/period); absent when there is no quota.", nil, nil)
)

// CgroupCollector reads ctxlab's cgroup cpu.stat at scrape time.
type CgroupCollector struct {
	dir     string
	version int
	// Unsupported says why throttling cannot be read here ("" = it can).
	Unsupported string
}

// NewCgroupCollector reads the cgroup directory dir (v1 cpu controller or
// v2 unified; "" = none found).
func NewCgroupCollector(dir string, version int) *CgroupCollector {
	c := &CgroupCollector{dir: dir, version: version}
	if dir == "" {
		c.Unsupported = "ctxlab's cgroup CPU controller was not found"
	} else if _, err := os.Stat(filepath.Join(dir, "cpu.stat")); err != nil {
		c.Unsupported = "no cpu.stat in " + dir
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *CgroupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCgPeriods, descCgThrottled, descCgThrottledSec, descCgQuota} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A file that fails to read is
// left out of this scrape.
func (c *CgroupCollector) Collect(ch chan<- prometheus.Metric) {
	if c.Unsupported != "" {
		return
	}
	if b, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat")); err == nil {
		cs := parseCPUStat(b)
		ch <- prometheus.MustNewConstMetric(descCgPeriods, prometheus.CounterValue, float64(cs.NrPeriods))
		ch <- prometheus.MustNewConstMetric(descCgThrottled, prometheus.CounterValue, float64(cs.NrThrottled))
		ch <- prometheus.MustNewConstMetric(descCgThrottledSec, prometheus.CounterValue, cs.ThrottledSeconds)
	}
	if q, ok := readQuota(c.dir, c.version); ok {
		ch <- prometheus.MustNewConstMetric(descCgQuota, prometheus.GaugeValue, q)
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
