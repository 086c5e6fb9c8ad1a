package serve

import (
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxlab/ctxlab/internal/cgroup"
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

// CgroupCollector reads ctxlab's cgroup cpu.stat and quota at scrape time
// (parsed by package cgroup).
type CgroupCollector struct {
	dir cgroup.Dir
	// Unsupported says why throttling cannot be read here ("" = it can).
	Unsupported string
}

// NewCgroupCollector reads the CPU cgroup dir (v1 cpu controller or v2
// unified; an empty Path = none found).
func NewCgroupCollector(dir cgroup.Dir) *CgroupCollector {
	c := &CgroupCollector{dir: dir}
	if dir.Path == "" {
		c.Unsupported = "ctxlab's cgroup CPU controller was not found"
	} else if _, err := os.Stat(filepath.Join(dir.Path, "cpu.stat")); err != nil {
		c.Unsupported = "no cpu.stat in " + dir.Path
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *CgroupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCgPeriods, descCgThrottled, descCgThrottledSec, descCgQuota} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A file that fails to read or
// parse is left out of this scrape.
func (c *CgroupCollector) Collect(ch chan<- prometheus.Metric) {
	if c.Unsupported != "" {
		return
	}
	if cs, err := c.dir.ReadCPUStat(); err == nil {
		ch <- prometheus.MustNewConstMetric(descCgPeriods, prometheus.CounterValue, float64(cs.NrPeriods))
		ch <- prometheus.MustNewConstMetric(descCgThrottled, prometheus.CounterValue, float64(cs.NrThrottled))
		ch <- prometheus.MustNewConstMetric(descCgThrottledSec, prometheus.CounterValue, cs.ThrottledSeconds())
	}
	if q, err := c.dir.ReadQuota(); err == nil {
		if cores, ok := q.Cores(); ok {
			ch <- prometheus.MustNewConstMetric(descCgQuota, prometheus.GaugeValue, cores)
		}
	}
}
