package experiments

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What pingpong finds across mech's rows: every kernel mechanism between
// two threads side by side, and the spinning rows' floor against the
// cheapest kernel handoff. Both lists come from the rows, so a new
// mechanism appears here by its row alone.

// mechFindings are pingpong's findings over mech's rows.
func mechFindings(by armIndex) []string {
	var out []string
	if line := kernelHandoffs(by); line != "" {
		out = append(out, line)
	}
	return append(out, spinFloors(by)...)
}

// kernelHandoffs lists every kernel mechanism's unpinned round trip
// between two threads, cheapest first, and how far apart they are.
func kernelHandoffs(by armIndex) string {
	var got []result.Arm
	for _, row := range mech.On(mech.SubThread) {
		if a, ok := by.get(ppPlaced(mech.SubThread, row.Name, "unpinned")); ok && row.Wait.Kernel() && a.Median > 0 {
			got = append(got, a)
		}
	}
	if len(got) < 2 {
		return ""
	}
	lo, hi := got[0], got[0]
	parts := make([]string, len(got))
	for i, a := range got {
		parts[i] = fmt.Sprintf("%s %s (%s switches)", a.Mechanism, result.FormatNs(a.Median), swText(a))
		if a.Median < lo.Median {
			lo = a
		}
		if a.Median > hi.Median {
			hi = a
		}
	}
	return fmt.Sprintf("kernel handoffs between two threads, unpinned: %s; %s is %.1f× %s",
		strings.Join(parts, " · "), hi.Mechanism, hi.Median/lo.Median, lo.Mechanism)
}

// spinFloors reads each spinning row across two CPUs against the
// cheapest kernel handoff across the same two: what the kernel's handoff
// costs beside moving a cache line from one core to another and back.
func spinFloors(by armIndex) []string {
	var kernel result.Arm
	for _, row := range mech.On(mech.SubThread) {
		a, ok := by.get(ppPlaced(mech.SubThread, row.Name, "cross-cpu"))
		if ok && row.Wait.Kernel() && a.Median > 0 && (kernel.Median == 0 || a.Median < kernel.Median) {
			kernel = a
		}
	}
	var out []string
	for _, row := range mech.On(mech.SubThread) {
		s, ok := by.get(ppPlaced(mech.SubThread, row.Name, "cross-cpu"))
		if row.Wait != mech.WaitSpin || !ok || s.Median <= 0 {
			continue
		}
		// The typical op where it was sampled: the median of means per op
		// carries every time the partner was preempted.
		typical := fmt.Sprintf("%s a way", result.FormatNs(s.Median/2))
		if s.Percentiles != nil && s.Percentiles.P50 > 0 {
			typical = fmt.Sprintf("p50 %s, %s a way", result.FormatNs(s.Percentiles.P50), result.FormatNs(s.Percentiles.P50/2))
		}
		line := fmt.Sprintf("the hardware's floor: two threads on two CPUs spinning on one cache line (%s) hand a value there and back in %s (%s), with %s OS switches (published: tens of ns within a core complex, ~50–200 ns across)",
			s.Mechanism, result.FormatNs(s.Median), typical, swText(s))
		if kernel.Median > 0 {
			line += fmt.Sprintf("; the cheapest kernel handoff across the same two CPUs, %s, costs %s (%.1f×)",
				kernel.Mechanism, result.FormatNs(kernel.Median), kernel.Median/s.Median)
		}
		out = append(out, line)
	}
	return out
}
