package experiments

import (
	"fmt"
	"maps"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The seeds' remedy for GIL contention: the busy pure-Python loop moved
// into a child process (driver param busy_in=process), beside each
// unpinned busy-thread arm.

// busyInProcess is a busy-thread arm's twin with the spin in a process.
func busyInProcess(a pyArm) pyArm {
	b := a
	b.key = a.key + "/in=process"
	b.params = maps.Clone(a.params)
	b.params["busy_in"] = "process"
	b.quick, b.freeThreaded = false, false
	return b
}

// busyProcessFactor: the remedy brings the round trip's p99 back within
// this factor of the no-busy arm's.
const busyProcessFactor = 2.0

// busyProcessBaseline names the no-busy arm a remedy arm compares with.
func busyProcessBaseline(key string) string {
	return busyBaseline(strings.TrimSuffix(key, "/in=process"))
}

func busyProcessChecks(arms []result.Arm) []result.Check {
	by := okArms(arms)
	var out []result.Check
	for _, a := range arms {
		key, py := pyKey(a.Name)
		if a.Status != result.StatusOK || a.Params["busy_in"] != "process" || a.Percentiles == nil {
			continue
		}
		b, ok := by[withPy(busyProcessBaseline(key), py)]
		if !ok || b.Percentiles == nil || b.Percentiles.P99 <= 0 {
			continue
		}
		thread := ""
		if t, ok := by[withPy(strings.TrimSuffix(key, "/in=process"), py)]; ok && t.Percentiles != nil {
			thread = fmt.Sprintf("; the same spin in a thread: p50 %s, p99 %s", result.FormatNs(t.Percentiles.P50), result.FormatNs(t.Percentiles.P99))
		}
		ft := ""
		if a.Params["gil"] == "disabled" {
			ft = " (free-threaded build: the busy thread itself makes no difference here either)"
		}
		out = append(out, result.Check{
			Name:  fmt.Sprintf("the remedy: the busy loop in a child process brings the round-trip p99 back within %.0f× of no busy worker", busyProcessFactor),
			Holds: a.Percentiles.P99 <= busyProcessFactor*b.Percentiles.P99,
			Detail: fmt.Sprintf("%s: p50 %s, p99 %s = %.2f× the p99 with no busy worker (%s: p50 %s, p99 %s)%s%s", a.Name,
				result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99), a.Percentiles.P99/b.Percentiles.P99,
				b.Name, result.FormatNs(b.Percentiles.P50), result.FormatNs(b.Percentiles.P99), thread, ft),
			Arms: []string{a.Name, b.Name},
		})
	}
	return out
}

func busyProcessFindings(arms []result.Arm) []string {
	by := okArms(arms)
	var out []string
	for _, a := range arms {
		key, py := pyKey(a.Name)
		if a.Status != result.StatusOK || a.Params["busy_in"] != "process" || a.Percentiles == nil {
			continue
		}
		t, ok := by[withPy(strings.TrimSuffix(key, "/in=process"), py)]
		if !ok || t.Percentiles == nil {
			continue
		}
		out = append(out, fmt.Sprintf("busy loop in a process instead of a thread%s (%s, switch interval %s): round trip p50 %s → %s, p99 %s → %s",
			pySuffixText(py), a.Substrate, a.Params["switch_interval"], result.FormatNs(t.Percentiles.P50), result.FormatNs(a.Percentiles.P50),
			result.FormatNs(t.Percentiles.P99), result.FormatNs(a.Percentiles.P99)))
	}
	return out
}
