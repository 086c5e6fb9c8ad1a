package experiments

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The seeds' Event pair: asyncio.Event between two tasks against
// threading.Event between two threads (published 5.3 µs against 9.3 µs,
// CPython 3.13 on 8 cores).
var (
	asyncioEventArm   = ppPlaced("pytask", "asyncio-event", "unpinned")
	threadingEventArm = ppPlaced("pythread", "event", "unpinned")
)

// eventPairChecks: the asyncio.Event round trip stays on one thread (≈ 0
// OS switches), the threading.Event one blocks and wakes a thread each way
// (≈ 2).
func eventPairChecks(arms []result.Arm) []result.Check {
	by := okArms(arms)
	var out []result.Check
	for _, py := range interpreterTags(arms) {
		a, okA := by.get(asyncioEventArm.WithInterpreter(py))
		t, okT := by.get(threadingEventArm.WithInterpreter(py))
		if !okA || !okT || a.Switches == nil || t.Switches == nil {
			continue
		}
		as, ts := a.Switches.Total(), t.Switches.Total()
		out = append(out, result.Check{
			Name:  "asyncio.Event hands over with no OS switch (< 0.05 per round trip), threading.Event with about 2 (≥ 1.5)",
			Holds: as < maxNoSwitch && ts >= minPyThreadSwitches,
			Detail: fmt.Sprintf("asyncio.Event %s, %.3f switches per round trip; threading.Event %s, %.2f switches%s (published 5.3 µs against 9.3 µs)",
				result.FormatNs(a.Median), as, result.FormatNs(t.Median), ts, onInterpreter(py)),
			Arms: []string{a.Name, t.Name},
		})
	}
	return out
}

func eventPairFindings(by armIndex, py string) []string {
	a, okA := by.get(asyncioEventArm.WithInterpreter(py))
	t, okT := by.get(threadingEventArm.WithInterpreter(py))
	if !okA || !okT {
		return nil
	}
	return []string{fmt.Sprintf("Event pair%s: asyncio.Event %s (%s switches) against threading.Event %s (%s switches) per round trip — %.1f× (published 5.3 against 9.3 µs, 1.8×)",
		onInterpreter(py), result.FormatNs(a.Median), swText(a), result.FormatNs(t.Median), swText(t), t.Median/a.Median)}
}
