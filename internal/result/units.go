package result

import (
	"fmt"
	"strings"
)

// FormatNs renders a duration in ns with a scaled unit and three
// significant digits: 850 ns, 4.21 µs, 12.3 ms.
func FormatNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	}
	return fmt.Sprintf("%.3g ns", ns)
}

// FormatValue renders v in the arm's unit, scaling ns-based units.
func FormatValue(v float64, unit string) string {
	if unit == "" || unit == "ns/op" {
		return FormatNs(v)
	}
	if unit == "B/op" || unit == "bytes" {
		switch {
		case v >= 1<<30:
			return fmt.Sprintf("%.3g GiB", v/(1<<30))
		case v >= 1<<20:
			return fmt.Sprintf("%.3g MiB", v/(1<<20))
		case v >= 1<<10:
			return fmt.Sprintf("%.3g KiB", v/(1<<10))
		}
		return fmt.Sprintf("%.0f B", v)
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
