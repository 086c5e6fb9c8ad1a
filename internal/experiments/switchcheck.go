package experiments

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/result"
)

// maxNoSwitch is the most OS switches per op of a handoff that causes
// none: a goroutine handoff at GOMAXPROCS=1, an asyncio task's, a
// Gosched, a lone sched_yield, two threads spinning on two CPUs. What is
// left is the odd tick, a runtime thread or other load on the CPU.
const maxNoSwitch = 0.05

// noSwitchCheck is the one check that arm a, what it does (the check's
// subject: "a goroutine handoff at GOMAXPROCS=1"), causes no OS switch:
// fewer than maxNoSwitch per op, per naming the op ("round trip",
// "yield", "call"). a.Switches must be set.
func noSwitchCheck(a result.Arm, what, per string) result.Check {
	sw := a.Switches.Total()
	return result.Check{
		Name:   fmt.Sprintf("%s causes no OS switch (< %.2f per %s)", what, maxNoSwitch, per),
		Holds:  sw < maxNoSwitch,
		Detail: fmt.Sprintf("%s: %.4f switches per %s", a.Name, sw, per),
		Arms:   []string{a.Name},
	}
}
