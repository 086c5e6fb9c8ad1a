package exp

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// A busy machine: other work shares its CPUs, so an op's wall time holds
// the time its participants waited behind that work, which changes from
// run to run, while their CPU time per op does not. The verdict then
// leads with CPU time and names the wait (Busy, CostSplit).
const (
	// BusyLoadPerCPU: a 1-minute load average over this many runnable
	// tasks per online CPU when the run started; it decides only where no
	// arm measured its own run-queue wait (the average lags a minute).
	BusyLoadPerCPU = 1.0
	// BusyStealPct: the hypervisor stole more than this share of CPU time
	// during an arm (the runner's noise threshold).
	BusyStealPct = 5.0
	// BusyWaitShare: the measured arms' participants spent, at the median,
	// more than this share of an op's wall time runnable but waiting for a
	// CPU (schedstat run_delay).
	BusyWaitShare = 0.2
)

// Busy says whether the run's machine was busy with other work, and why in
// short words ("load 10.8 on 2 CPUs, run-queue wait 41% of wall": the
// median over the measured arms of their participants' run-queue wait,
// summed over them, per op over the op's wall time, so it can pass 100%
// when several wait at once); "" and false on a quiet machine.
func Busy(run *result.Run) (string, bool) {
	var why []string
	cpus := len(run.Env.OnlineCPUs)
	if cpus == 0 {
		cpus = run.Env.LogicalCPUs
	}
	steal, stolen := 0.0, 0
	var shares []float64
	for _, a := range run.Arms {
		if !Measured(a) {
			continue
		}
		if a.Noise.StealPct > BusyStealPct {
			stolen++
			steal = max(steal, a.Noise.StealPct)
		}
		if s, ok := WaitShare(a); ok {
			shares = append(shares, s)
		}
	}
	if stolen > 0 {
		why = append(why, fmt.Sprintf("steal up to %.0f%%", steal))
	}
	// The load average is the last minute's, work that ended before the run
	// began included (a build, a test suite): where the arms measured their
	// own wait for a CPU, that decides, and the load is only said beside it.
	loaded := cpus > 0 && run.Env.Load1 > BusyLoadPerCPU*float64(cpus)
	if len(shares) > 0 {
		sort.Float64s(shares)
		if m := shares[len(shares)/2]; m > BusyWaitShare {
			if loaded {
				why = append([]string{fmt.Sprintf("load %.1f on %d CPUs", run.Env.Load1, cpus)}, why...)
			}
			why = append(why, fmt.Sprintf("run-queue wait %.0f%% of wall", 100*m))
		}
	} else if loaded {
		why = append([]string{fmt.Sprintf("load %.1f on %d CPUs", run.Env.Load1, cpus)}, why...)
	}
	return strings.Join(why, ", "), len(why) > 0
}

// WaitShare is the share of an arm's wall time per op (its median) that
// its participants spent runnable but waiting for a CPU; ok is false
// without a run-queue figure or a time unit.
func WaitShare(a result.Arm) (float64, bool) {
	if a.RunqNsPerOp == nil || a.Median <= 0 || !strings.HasPrefix(unitOf(a), "ns/") {
		return 0, false
	}
	return *a.RunqNsPerOp / a.Median, true
}

func unitOf(a result.Arm) string {
	if a.Unit == "" {
		return "ns/op"
	}
	return a.Unit
}

// CostSplit is an arm's op split into its CPU cost and the wait: "6.2 µs
// of CPU; 19 µs wall here now, 13 µs of it waiting behind other work". ok
// is false when the arm has no CPU time per op or no time unit. The wait is
// the participants' run-queue wait (schedstat run_delay), said where CPU
// and wait together fit in the wall time.
func CostSplit(a result.Arm) (string, bool) {
	if a.CPUNsPerOp == nil || *a.CPUNsPerOp <= 0 || !strings.HasPrefix(unitOf(a), "ns/") {
		return "", false
	}
	s := fmt.Sprintf("%s of CPU; %s wall here now", result.FormatNs(*a.CPUNsPerOp), result.FormatNs(a.Median))
	// The wait is said only where CPU and wait fit in the wall time: on one
	// CPU a woken thread also waits, runnable, for its waker to block, and
	// the participants' waits add up.
	if a.RunqNsPerOp != nil && *a.CPUNsPerOp+*a.RunqNsPerOp <= 1.2*a.Median {
		s += fmt.Sprintf(", %s of it waiting behind other work", result.FormatNs(*a.RunqNsPerOp))
	}
	return s, true
}
