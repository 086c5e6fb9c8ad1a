package experiments

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// The --set option parsers hop, concurrency and callchain share.

// hopOptInt reads an integer --set option, default def, allowed lo..hi.
func hopOptInt(p exp.Params, key string, def, lo, hi int) (int, error) {
	s, ok := p.Extra[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("--set %s=%s: %q is not a whole number; want %d..%d", key, s, s, lo, hi)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("--set %s=%d: must be in %d..%d", key, n, lo, hi)
	}
	return n, nil
}

// maxOptList bounds a list option: each value is at least one arm.
const maxOptList = 64

// hopOptIntList reads a comma-separated list of integers, each in lo..hi.
func hopOptIntList(p exp.Params, key string, def []int, lo, hi int) ([]int, error) {
	s, ok := p.Extra[key]
	if !ok {
		return def, nil
	}
	if n := strings.Count(s, ",") + 1; n > maxOptList {
		return nil, fmt.Errorf("--set %s: %d values; at most %d, each %d..%d", key, n, maxOptList, lo, hi)
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--set %s=%s: %q is not a whole number; want a list like 1,10,50 with values %d..%d", key, s, part, lo, hi)
		}
		if n < lo || n > hi {
			return nil, fmt.Errorf("--set %s=%s: %d must be in %d..%d", key, s, n, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}
