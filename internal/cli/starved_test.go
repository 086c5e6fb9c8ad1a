package cli

import (
	"fmt"
	"testing"

	"github.com/ctxlab/ctxlab/internal/testload"
)

// Tests that drive a busy program (a CPython thread spinning beside a
// loop, a handler doing CPU work) can check a reading about its CPU use
// only when its threads got the CPU they wanted: on a loaded machine (4
// spinning hogs on 2 CPUs, the test at nice 19) a busy thread was seen on
// a CPU 0.5% of the run and the loop's thread waiting for one 98% of it,
// and the readings rightly did not fire, since what the program's threads
// waited for was the machine, not the GIL or a handler.
//
// maxRunqShare is how much of the run a thread may spend runnable but
// waiting for a CPU (schedstat run_delay) before the check skips: beyond
// a quarter, the machine, not the program, shaped the lag the readings
// read. On an idle CPU it is a few percent.
const maxRunqShare = 0.25

// runqWait is the largest share of the run that one of the program's
// threads spent waiting for a CPU, as the probe's schedstat figures give
// it (py-loop's runq_share, py-thread's runnable_share less cpu_share),
// and which thread that was; ok is false when no such figure was read.
func runqWait(recs map[string][]map[string]any) (share float64, who string, ok bool) {
	for _, l := range recs["py-loop"] {
		if known, _ := l["runq_known"].(bool); !known {
			continue
		}
		if s, has := l["runq_share"].(float64); has && (!ok || s > share) {
			share, who, ok = s, fmt.Sprintf("the loop's thread %v", l["thread"]), true
		}
	}
	for _, th := range recs["py-thread"] {
		run, has1 := th["runnable_share"].(float64)
		cpu, has2 := th["cpu_share"].(float64)
		if has1 && has2 && (!ok || run-cpu > share) {
			share, who, ok = run-cpu, fmt.Sprintf("thread %v (on a CPU %.1f%% of the run)", th["name"], 100*cpu), true
		}
	}
	return share, who, ok
}

// skipIfStarved skips t when one of the program's threads waited for a
// CPU more than maxRunqShare of the run: what the check after it reads
// needs the threads to have run when they wanted to.
func skipIfStarved(t *testing.T, recs map[string][]map[string]any, what string) {
	t.Helper()
	share, who, ok := runqWait(recs)
	if ok && share > maxRunqShare {
		t.Skipf("the machine did not give the program the CPU %s needs: %s waited for a CPU %.0f%% of the run (over %.0f%%; load average %s)",
			what, who, 100*share, 100*maxRunqShare, testload.Load1())
	}
}
