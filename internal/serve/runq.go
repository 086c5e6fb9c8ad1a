package serve

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

var selfPID = os.Getpid()

// runq is the run-queue wait and switch-ins of every thread of some
// processes at one moment, by thread id (/proc/<pid>/task/<tid>/schedstat:
// time on CPU, time waiting runnable, timeslices run).
type runq map[int]runqStat

type runqStat struct{ waitNs, slices uint64 }

// runqDelta is what the threads waited and how often they ran between two readings.
type runqDelta struct{ waitNs, slices uint64 }

// readRunq reads the schedstat of every thread of pids under procRoot
// ("" = /proc). Threads that vanish meanwhile are left out; a kernel
// without schedstat gives an empty reading.
func readRunq(procRoot string, pids []int) runq {
	if procRoot == "" {
		procRoot = string(procstat.DefaultRoot)
	}
	out := runq{}
	for _, pid := range pids {
		tids, err := procstat.Root(procRoot).TIDs(pid)
		if err != nil {
			continue
		}
		for _, tid := range tids {
			b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "task", strconv.Itoa(tid), "schedstat"))
			if err != nil {
				continue
			}
			if _, wait, slices, err := procstat.ParseSchedstat(b); err == nil {
				out[tid] = runqStat{wait, slices}
			}
		}
	}
	return out
}

// since is the change from an earlier reading. A thread that started in
// between counts from zero (it is the probe's); one that has exited is
// gone from both sides, so its part is lost rather than counted wrong.
func (r runq) since(before runq) runqDelta {
	var d runqDelta
	for tid, s := range r {
		b := before[tid]
		if s.waitNs < b.waitNs || s.slices < b.slices {
			continue // a reused thread id
		}
		d.waitNs += s.waitNs - b.waitNs
		d.slices += s.slices - b.slices
	}
	return d
}
