package cgroup

import (
	"bytes"
	"fmt"
	"strconv"
)

// CPUStat is what ctxlab uses of a cgroup's cpu.stat (v2, or the v1 cpu
// controller's); fields keep the kernel's names and units.
type CPUStat struct {
	UsageUsec     uint64 // v2 only
	NrPeriods     uint64
	NrThrottled   uint64
	ThrottledUsec uint64 // v2
	ThrottledTime uint64 // v1, in ns
}

// ThrottledSeconds is the time the cgroup spent throttled (throttled_usec
// on v2, throttled_time on v1).
func (s CPUStat) ThrottledSeconds() float64 {
	return float64(s.ThrottledUsec)/1e6 + float64(s.ThrottledTime)/1e9
}

// ParseCPUStat parses a cgroup cpu.stat ("key value" lines). Keys it does
// not use are skipped; a key it uses with a value that is not a count is
// an error.
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
	for _, line := range bytes.Split(b, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		var dst *uint64
		switch string(f[0]) {
		case "usage_usec":
			dst = &s.UsageUsec
		case "nr_periods":
			dst = &s.NrPeriods
		case "nr_throttled":
			dst = &s.NrThrottled
		case "throttled_usec":
			dst = &s.ThrottledUsec
		case "throttled_time":
			dst = &s.ThrottledTime
		default:
			continue
		}
		if len(f) != 2 {
			return CPUStat{}, fmt.Errorf("%w: cpu.stat line %q", ErrParse, line)
		}
		v, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			return CPUStat{}, fmt.Errorf("%w: cpu.stat %s %q", ErrParse, f[0], f[1])
		}
		*dst = v
	}
	return s, nil
}

// ReadCPUStat reads and parses the directory's cpu.stat.
func (d Dir) ReadCPUStat() (CPUStat, error) {
	b, err := d.readFile("cpu.stat")
	if err != nil {
		return CPUStat{}, err
	}
	return ParseCPUStat(b)
}
