package measure

import (
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// epoch anchors Now; time.Since on a monotonic time reads only the
// monotonic clock (one vDSO call), which is what we want in timed loops.
var epoch = time.Now()

// Now returns monotonic nanoseconds since process start. It does not allocate.
func Now() int64 { return int64(time.Since(epoch)) }

// MonoNow is CLOCK_MONOTONIC in ns: one clock for every process, so a
// stamp taken in a child can be compared with a reading here.
func MonoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// ClockCost measures the cost of one Now() call in ns: the median over
// several batches, so a preempted batch does not skew it.
func ClockCost() float64 {
	const batch = 20000
	var costs []float64
	for r := 0; r < 9; r++ {
		t0 := Now()
		var sink int64
		for i := 0; i < batch; i++ {
			sink += Now()
		}
		t1 := Now()
		_ = sink
		costs = append(costs, float64(t1-t0)/batch)
	}
	sort.Float64s(costs)
	return costs[len(costs)/2]
}
