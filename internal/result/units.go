package result

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Binary size units: the one definition of KiB, MiB and GiB.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// ByteUnits are the units byte counts are scaled to (FormatBytes, chart
// axes), largest first.
var ByteUnits = []struct {
	Size float64
	Name string
}{{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}

// FormatBytes renders a byte count for people, with a binary unit and
// three significant digits: 512 B, 16 KiB, 1.5 MiB, 2.25 GiB.
func FormatBytes(b float64) string {
	for _, u := range ByteUnits {
		if math.Abs(b) >= u.Size {
			v := b / u.Size
			if math.Abs(v) >= 100 {
				return fmt.Sprintf("%.0f %s", v, u.Name) // 1023 KiB, never 1.02e+03 KiB
			}
			return fmt.Sprintf("%.3g %s", v, u.Name)
		}
	}
	return fmt.Sprintf("%.0f B", b)
}

// SizeName writes a size the way arm names and options do, exactly and
// without a space: 0, 4096, 16KiB, 2MiB, 1GiB. ParseSize reads it back.
func SizeName(b int64) string {
	switch {
	case b >= GiB && b%GiB == 0:
		return fmt.Sprintf("%dGiB", b/GiB)
	case b >= MiB && b%MiB == 0:
		return fmt.Sprintf("%dMiB", b/MiB)
	case b >= KiB && b%KiB == 0:
		return fmt.Sprintf("%dKiB", b/KiB)
	}
	return strconv.FormatInt(b, 10)
}

// ParseSize reads a size a user wrote: a whole number of bytes, or with
// KiB/K/k, MiB/M, GiB/G or B after it (binary multiples): 16KiB, 2M, 4096.
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	num := s
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", KiB}, {"MiB", MiB}, {"GiB", GiB}, {"K", KiB}, {"M", MiB}, {"G", GiB}, {"k", KiB}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult { // the product must not wrap into range
		return 0, fmt.Errorf("%q is not a size; want e.g. 16KiB, 2MiB or 4096", s)
	}
	return n * mult, nil
}

// FormatNs renders a duration in ns with a scaled unit and three
// significant digits: 850 ns, 4.21 µs, 12.3 ms.
func FormatNs(ns float64) string {
	a := math.Abs(ns) // -18.6 µs, never -1.86e+04 ns
	div, name := nsScale(a)
	if a/div >= 999.5 && div < 1e9 { // 999.7 ns reads 1 µs, never 1e+03 ns
		div, name = nsScale(div * 1000)
	}
	return fmt.Sprintf("%.3g %s", ns/div, name)
}

// nsScale is the unit FormatNs writes ns in, and its size in ns.
func nsScale(ns float64) (float64, string) {
	switch {
	case ns >= 1e9:
		return 1e9, "s"
	case ns >= 1e6:
		return 1e6, "ms"
	case ns >= 1e3:
		return 1e3, "µs"
	}
	return 1, "ns"
}

// FormatRange renders lo–hi without a unit, in the unit FormatValue
// writes ref in, so a range reads beside its median: "7.1–7.62" beside
// "7.38 µs". Each end has three significant digits (whole numbers from 100).
func FormatRange(lo, hi, ref float64, unit string) string {
	div := 1.0
	switch {
	case unit == "" || strings.HasPrefix(unit, "ns/"):
		div, _ = nsScale(ref)
	case unit == "B/op" || unit == "bytes":
		for _, u := range ByteUnits {
			if math.Abs(ref) >= u.Size {
				div = u.Size
				break
			}
		}
	}
	f := func(v float64) string {
		if v /= div; math.Abs(v) >= 100 {
			return fmt.Sprintf("%.0f", v)
		}
		return fmt.Sprintf("%.3g", v)
	}
	return f(lo) + "–" + f(hi)
}

// FormatValue renders v in the arm's unit, scaling ns-based units.
func FormatValue(v float64, unit string) string {
	if unit == "" || unit == "ns/op" {
		return FormatNs(v)
	}
	if unit == "B/op" || unit == "bytes" {
		return FormatBytes(v)
	}
	if unit == "×" {
		return fmt.Sprintf("%.2f×", v)
	}
	if per, ok := strings.CutPrefix(unit, "ns/"); ok {
		return FormatNs(v) + "/" + per // 38.4 µs/element, never 3.844e+04 ns/element
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

// FormatCount renders a count with k, M or G from 10 000 up: 9999, 134k, 1.4M.
func FormatCount(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.3gG", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.3gM", n/1e6)
	case n >= 1e4:
		return fmt.Sprintf("%.3gk", n/1e3)
	case n >= 100:
		return fmt.Sprintf("%.0f", n)
	}
	return fmt.Sprintf("%.3g", n)
}

// ShortDuration is d as time.Duration writes it, without the zero minutes
// and seconds that follow hours or minutes: 24h, 1h30m, 1m, 90ms. Flag
// ranges and the exporter's help say durations this one way.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ShortOp is what one op is, without its parenthetical note: "1 ms timer
// sleep (percentiles: wake delay beyond the 1 ms)" is "1 ms timer sleep",
// a label for a row or a rate ("per 1 ms timer sleep"), never glued to a
// unit; "op" when the arm says nothing.
func ShortOp(op string) string {
	if i := strings.Index(op, " ("); i > 0 {
		op = op[:i]
	}
	if op == "" {
		return "op"
	}
	return op
}
