package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// DefaultCgroupRoot is where cgroup hierarchies are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// CgroupDir is a process's CPU cgroup: the v2 directory with cpu.max, or
// the v1 cpu controller's directory with cpu.cfs_quota_us.
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
// /sys/fs/cgroup): the unified v2 one when it has cpu.max, else the v1 cpu
// controller's.
func FindCgroup(root procstat.Root, mount string, pid int) (*CgroupDir, error) {
	paths, err := root.ReadCgroup(pid)
	if err != nil {
		return nil, err
	}
	var v1 *CgroupDir
	for _, c := range paths {
		if c.ID == 0 && len(c.Controllers) == 0 {
			for _, m := range []string{mount, filepath.Join(mount, "unified")} {
				d := filepath.Join(m, c.Path)
				if _, err := os.Stat(filepath.Join(d, "cpu.max")); err == nil {
					return &CgroupDir{Version: 2, Dir: d}, nil
				}
			}
			continue
		}
		for _, ctl := range c.Controllers {
			if ctl != "cpu" {
				continue
			}
			for _, m := range []string{filepath.Join(mount, "cpu"), filepath.Join(mount, strings.Join(c.Controllers, ","))} {
				d := filepath.Join(m, c.Path)
				if _, err := os.Stat(filepath.Join(d, "cpu.stat")); err == nil && v1 == nil {
					v1 = &CgroupDir{Version: 1, Dir: d}
				}
			}
		}
	}
	if v1 != nil {
		return v1, nil
	}
	return nil, errors.New("no CPU cgroup with cpu.stat found")
}

// Read reads the quota and throttling counters now.
func (c *CgroupDir) Read() CgroupCounters {
	out := CgroupCounters{Version: c.Version, Dir: c.Dir, Quota: "max"}
	b, err := os.ReadFile(filepath.Join(c.Dir, "cpu.stat"))
	if err != nil {
		return out
	}
	out.Throttled, out.ThrottledUs = sysinfo.ParseCPUStat(b)
	out.OK = true
	switch c.Version {
	case 2:
		if q, err := os.ReadFile(filepath.Join(c.Dir, "cpu.max")); err == nil {
			if s, err := ParseCPUMax(q); err == nil {
				out.Quota = s
			}
		}
	case 1:
		q, _ := os.ReadFile(filepath.Join(c.Dir, "cpu.cfs_quota_us"))
		p, _ := os.ReadFile(filepath.Join(c.Dir, "cpu.cfs_period_us"))
		if s, err := ParseCFSQuota(q, p); err == nil {
			out.Quota = s
		}
	}
	return out
}

// ParseCPUMax validates a v2 cpu.max ("max 100000" or "50000 100000") and
// returns it in the form ctxlab shows: "max" or "QUOTA PERIOD".
func ParseCPUMax(b []byte) (string, error) {
	f := strings.Fields(string(b))
	if len(f) < 1 || len(f) > 2 {
		return "", fmt.Errorf("cpu.max %q: want QUOTA [PERIOD]", b)
	}
	period := int64(100000)
	if len(f) == 2 {
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n <= 0 {
			return "", fmt.Errorf("cpu.max period %q", f[1])
		}
		period = n
	}
	if f[0] == "max" {
		return "max", nil
	}
	q, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || q <= 0 {
		return "", fmt.Errorf("cpu.max quota %q", f[0])
	}
	return fmt.Sprintf("%d %d", q, period), nil
}

// ParseCFSQuota turns v1 cpu.cfs_quota_us (-1 = none) and cpu.cfs_period_us
// into the cpu.max form.
func ParseCFSQuota(quota, period []byte) (string, error) {
	q, err := strconv.ParseInt(strings.TrimSpace(string(quota)), 10, 64)
	if err != nil {
		return "", fmt.Errorf("cpu.cfs_quota_us %q", quota)
	}
	if q < 0 {
		return "max", nil
	}
	p, err := strconv.ParseInt(strings.TrimSpace(string(period)), 10, 64)
	if err != nil || p <= 0 {
		return "", fmt.Errorf("cpu.cfs_period_us %q", period)
	}
	if q == 0 {
		return "", fmt.Errorf("cpu.cfs_quota_us 0")
	}
	return fmt.Sprintf("%d %d", q, p), nil
}

// QuotaCPUs is the quota in CPUs ("50000 100000" → 0.5), 0 when unlimited.
func QuotaCPUs(quota string) float64 {
	f := strings.Fields(quota)
	if len(f) != 2 {
		return 0
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || p <= 0 {
		return 0
	}
	return q / p
}
