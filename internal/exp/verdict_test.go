package exp

import (
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// TestPickFindsPythonAllArms: under --python all a CPython arm's name ends
// in "/py=VERSION"; the verdict's rows name the plain arm and must still
// find it (the first interpreter's), while an exact name wins.
func TestPickFindsPythonAllArms(t *testing.T) {
	arm := func(name string, ns float64) result.Arm {
		return result.Arm{Name: name, Median: ns, Status: result.StatusOK}
	}
	run := &result.Run{Arms: []result.Arm{
		arm("pingpong/pythread/simplequeue/same-cpu/py=3.11", 7000),
		arm("pingpong/pythread/simplequeue/same-cpu/py=3.13t", 9000),
		arm("pingpong/thread/futex/same-cpu", 5000),
		{Name: "pingpong/pytask/asyncio-queue/same-cpu/py=3.11", Status: result.StatusFailed},
	}}
	v := NewVerdictRun(run)
	if a, ok := v.Pick("pingpong/pythread/simplequeue/same-cpu"); !ok || a.Median != 7000 {
		t.Errorf("Pick(plain name) = %v, %v; want the py=3.11 arm", a.Name, ok)
	}
	if a, ok := v.Pick("pingpong/thread/futex/same-cpu"); !ok || a.Median != 5000 {
		t.Errorf("Pick(exact) = %v, %v", a.Name, ok)
	}
	if _, ok := v.Pick("pingpong/pytask/asyncio-queue/same-cpu"); ok {
		t.Error("Pick found an arm that was not measured")
	}
	if _, ok := v.Pick("pingpong/pythread/simplequeue"); ok {
		t.Error("Pick matched a prefix of an arm's name")
	}
}

// Compare is the one rule for wording a ratio: within SameWithin it is
// "about the same", so 1× never reads as lower or higher ("(1× lower)"
// was a p99 of 59 ms against 57 ms), and past it the multiple is at least
// 1.1.
func TestCompareWording(t *testing.T) {
	for _, tc := range []struct {
		x, ref float64
		want   string
	}{
		{57, 59, "about the same"},
		{59, 57, "about the same"},
		{100, 100, "about the same"},
		{92, 100, "about the same"},
		{100, 90, "1.1× higher"},
		{1, 9.4, "9.4× lower"},
		{6.32, 59.2, "9.4× lower"},
		{22.3, 59.2, "2.7× lower"},
		{409, 1, "409× higher"},
		{0, 1, "not comparable"},
	} {
		if got := Compare(tc.x, tc.ref, "higher", "lower"); got != tc.want {
			t.Errorf("Compare(%v, %v) = %q, want %q", tc.x, tc.ref, got, tc.want)
		}
	}
}

// Figure puts both ends of the spread in the median's own unit, three
// significant digits, never an exponent.
func TestFigureSpreadInTheMediansUnit(t *testing.T) {
	arm := func(median, lo, hi float64, unit string) result.Arm {
		return result.Arm{Median: median, Min: lo, Max: hi, Unit: unit}
	}
	for _, tc := range []struct {
		a    result.Arm
		want string
	}{
		{arm(1927.47, 923.13, 2671.97, "ns/op"), "1.93 µs (0.923–2.67)"},
		{arm(551.78, 460.46, 1699.39, "ns/op"), "552 ns (460–1700)"},
		{arm(6690, 6680, 6780, ""), "6.69 µs (6.68–6.78)"},
		{arm(4.34, 4.06, 5.61, "ns/element"), "4.34 ns/element (4.06–5.61)"},
		{arm(1884.16, 1880.06, 1998.85, "B/op"), "1.84 KiB (1.84–1.95)"},
		{arm(21e6, 15.86e6, 39.79e6, "ns/op"), "21 ms (15.9–39.8)"},
		{arm(9.74, 0.0000123, 12.58, "ns/op"), "9.74 ns (0.000012–12.6)"},
	} {
		if got := Figure(tc.a); got != tc.want {
			t.Errorf("Figure(%v) = %q, want %q", tc.a.Median, got, tc.want)
		}
	}
	if got := Change(32500, 32300); got != "32.5 → 32.3 µs" {
		t.Errorf("Change = %q", got)
	}
	if got := Change(134e3, 19.7e6); got != "134 µs → 19.7 ms" {
		t.Errorf("Change = %q", got)
	}
}
