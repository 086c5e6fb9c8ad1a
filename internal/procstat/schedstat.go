package procstat

import "fmt"

// ParseSchedstat parses /proc/…/schedstat ("run_ns runq_wait_ns
// timeslices") without allocating, so a worker can read its own figures
// between batches of timed work.
func ParseSchedstat(b []byte) (runNs, waitNs, slices uint64, err error) {
	var v [3]uint64
	k, digits := 0, false
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if k >= 3 {
				return 0, 0, 0, fmt.Errorf("%w: schedstat has more than 3 fields", ErrParse)
			}
			v[k] = v[k]*10 + uint64(c-'0')
			digits = true
		case c == ' ' || c == '\n':
			if digits {
				k++
				digits = false
			}
		default:
			return 0, 0, 0, fmt.Errorf("%w: schedstat byte %q", ErrParse, c)
		}
	}
	if digits {
		k++
	}
	if k != 3 {
		return 0, 0, 0, fmt.Errorf("%w: schedstat has %d fields, want 3", ErrParse, k)
	}
	return v[0], v[1], v[2], nil
}
