package watch

import (
	"github.com/ctxlab/ctxlab/internal/cgroup"
	"github.com/ctxlab/ctxlab/internal/procstat"
)

// DefaultCgroupRoot is where cgroup hierarchies are mounted.
const DefaultCgroupRoot = cgroup.DefaultMount

// CgroupDir is a process's CPU cgroup: the v2 directory with cpu.max, or
// the v1 cpu controller's directory (found and read by package cgroup).
type CgroupDir struct {
	Version int
	Dir     string
}

// CgroupCounters is one reading of a CPU cgroup.
type CgroupCounters struct {
	OK          bool
	Version     int
	Dir         string
	Quota       string
	Throttled   int64 // nr_throttled
	ThrottledUs int64 // throttled_usec (v2) or throttled_time/1000 (v1)
}

// FindCgroup locates pid's CPU cgroup under mount (normally
// /sys/fs/cgroup) with cgroup.Find's rules.
func FindCgroup(root procstat.Root, mount string, pid int) (*CgroupDir, error) {
	d, err := cgroup.Find(string(root), mount, pid)
	if err != nil {
		return nil, err
	}
	return &CgroupDir{Version: d.Version, Dir: d.Path}, nil
}

// Read reads the quota and throttling counters now.
func (c *CgroupDir) Read() CgroupCounters {
	out := CgroupCounters{Version: c.Version, Dir: c.Dir, Quota: "max"}
	d := cgroup.Dir{Version: c.Version, Path: c.Dir}
	cs, err := d.ReadCPUStat()
	if err != nil {
		return out
	}
	out.Throttled, out.ThrottledUs = int64(cs.NrThrottled), int64(cs.ThrottledUsec+cs.ThrottledTime/1000)
	out.OK = true
	if q, err := d.ReadQuota(); err == nil {
		out.Quota = q.String()
	}
	return out
}

// QuotaCPUs is the quota in CPUs ("50000 100000" → 0.5), 0 when unlimited;
// quota is in cpu.max form, as CgroupCounters.Quota holds it.
func QuotaCPUs(quota string) float64 {
	q, err := cgroup.ParseCPUMax([]byte(quota))
	if err != nil {
		return 0
	}
	c, _ := q.Cores()
	return c
}
