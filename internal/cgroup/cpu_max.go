package cgroup

import (
	"bytes"
	"fmt"
	"strconv"
)

// DefaultPeriod is the CFS bandwidth period the kernel uses when none is
// given, in µs.
const DefaultPeriod = 100000

// CPUMax is a CPU quota in cgroup v2 cpu.max form ("$MAX $PERIOD", in µs);
// v1's cpu.cfs_quota_us and cpu.cfs_period_us become the same.
type CPUMax struct {
	Max    int64 // quota per period in µs; -1 = "max", no quota
	Period int64 // µs, > 0
}

// Unlimited says there is no quota.
func (c CPUMax) Unlimited() bool { return c.Max < 0 }

// String is the form ctxlab shows and stores: "max", or "QUOTA PERIOD".
func (c CPUMax) String() string {
	if c.Unlimited() {
		return "max"
	}
	return fmt.Sprintf("%d %d", c.Max, c.Period)
}

// Cores is the quota in CPUs (50000/100000 → 0.5); ok is false without one.
func (c CPUMax) Cores() (float64, bool) {
	if c.Unlimited() || c.Period <= 0 {
		return 0, false
	}
	return float64(c.Max) / float64(c.Period), true
}

// ParseCPUMax parses cgroup v2 cpu.max: "max 100000" or "50000 100000"
// (a missing period is the kernel's default). The quota must be "max" or a
// positive number of µs, the period a positive number of µs.
func ParseCPUMax(b []byte) (CPUMax, error) {
	f := bytes.Fields(b)
	if len(f) < 1 || len(f) > 2 {
		return CPUMax{}, fmt.Errorf("%w: cpu.max %q: want MAX [PERIOD]", ErrParse, b)
	}
	c := CPUMax{Max: -1, Period: DefaultPeriod}
	if len(f) == 2 {
		p, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil || p <= 0 {
			return CPUMax{}, fmt.Errorf("%w: cpu.max period %q", ErrParse, f[1])
		}
		c.Period = p
	}
	if string(f[0]) == "max" {
		return c, nil
	}
	q, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil || q <= 0 {
		return CPUMax{}, fmt.Errorf("%w: cpu.max quota %q", ErrParse, f[0])
	}
	c.Max = q
	return c, nil
}

// ReadQuota reads the quota: cpu.max on v2, cpu.cfs_quota_us and
// cpu.cfs_period_us on v1.
func (d Dir) ReadQuota() (CPUMax, error) {
	if d.Version == 1 {
		q, err := d.readFile("cpu.cfs_quota_us")
		if err != nil {
			return CPUMax{}, err
		}
		p, err := d.readFile("cpu.cfs_period_us")
		if err != nil {
			return CPUMax{}, err
		}
		return ParseCFSBandwidth(q, p)
	}
	b, err := d.readFile("cpu.max")
	if err != nil {
		return CPUMax{}, err
	}
	return ParseCPUMax(b)
}
