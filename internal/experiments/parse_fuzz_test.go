package experiments

import (
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// FuzzParseSizes: --set cachecost.w is refused or yields sizes within the
// sweep's range; an overflowing product (9223372036854775807GiB) never
// wraps into range.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"16KiB,2MiB", "4096", "1GiB", "9223372036854775807GiB", "8589934592G", "17179869185GiB", "-1K", "1,,2", "0B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws, err := parseSizes(s)
		if err != nil {
			return
		}
		if len(ws) == 0 || len(ws) > maxSweepSizes {
			t.Fatalf("%q: %d sizes", s, len(ws))
		}
		for _, w := range ws {
			if w < minSweepW || w > maxSweepW {
				t.Fatalf("%q: size %d out of %d..%d", s, w, minSweepW, maxSweepW)
			}
		}
	})
}

// FuzzOptIntList: a list --set option is refused or every value is in range.
func FuzzOptIntList(f *testing.F) {
	for _, s := range []string{"1,10,50", "0", "1001", "99999999999999999999", " 5 ", "1,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vs, err := exp.IntListOption("k", "", 1, 1000).Parse(s)
		if err != nil {
			return
		}
		if len(vs) == 0 || len(vs) > exp.MaxOptionList {
			t.Fatalf("%q: %d values", s, len(vs))
		}
		for _, v := range vs {
			if v < 1 || v > 1000 {
				t.Fatalf("%q: %d out of range", s, v)
			}
		}
		if _, err := exp.IntOption("k", "", 1, 1000).Parse(s); err == nil && len(vs) != 1 {
			t.Fatalf("%q: one int and a list of %d", s, len(vs))
		}
	})
}
