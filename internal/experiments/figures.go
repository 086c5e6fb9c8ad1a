package experiments

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The small figures several experiments' readings share.

// swText is an arm's OS switches per op, one decimal, "?" when not counted.
func swText(a result.Arm) string {
	if a.Switches == nil {
		return "?"
	}
	return fmt.Sprintf("%.1f", a.Switches.Total())
}

// pct is a against b as a signed percentage ("+12%"), "?" without b.
func pct(a, b float64) string {
	if b <= 0 {
		return "?"
	}
	return fmt.Sprintf("%+.0f%%", 100*(a/b-1))
}

// fmtThousands writes n with a space between thousands: "10 000".
func fmtThousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// intsText is a list of ints as a comma-separated list: "0,2,3".
func intsText(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}
