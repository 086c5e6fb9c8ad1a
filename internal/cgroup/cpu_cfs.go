package cgroup

import (
	"bytes"
	"fmt"
	"strconv"
)

// ParseCFSBandwidth parses cgroup v1 cpu.cfs_quota_us (-1 = no quota) and
// cpu.cfs_period_us, one number each, into the cpu.max form.
func ParseCFSBandwidth(quota, period []byte) (CPUMax, error) {
	q, err := strconv.ParseInt(string(bytes.TrimSpace(quota)), 10, 64)
	if err != nil || q == 0 || q < -1 {
		return CPUMax{}, fmt.Errorf("%w: cpu.cfs_quota_us %q", ErrParse, quota)
	}
	p, err := strconv.ParseInt(string(bytes.TrimSpace(period)), 10, 64)
	if err != nil || p <= 0 {
		return CPUMax{}, fmt.Errorf("%w: cpu.cfs_period_us %q", ErrParse, period)
	}
	return CPUMax{Max: q, Period: p}, nil
}
