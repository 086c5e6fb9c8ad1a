// Package testload tells a test whether the machine gave it the CPU it
// needed, so that a test whose figure depends on getting a CPU (an op that
// must fit ten times in a repetition, a probe that must finish) skips with
// the measured reason on a loaded host instead of failing, and fails as
// before where the CPU was there. Only tests import it.
//
// Two measures, both from the kernel, neither from ctxlab's own figures:
// the run-queue wait of this process's threads (schedstat run_delay,
// summed over them) and the machine's CPU pressure (PSI
// /proc/pressure/cpu "some": the share of time at least one runnable task
// waited for a CPU). Either one over its threshold while the test ran is
// a machine too busy for the test's figure.
package testload

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// Thresholds: this process's threads waited for a CPU more than OwnShare
// of the wall time (summed over the threads, so it can pass 1), or the
// machine had a runnable task waiting more than PressureShare of it.
const (
	OwnShare      = 0.25
	PressureShare = 0.5
)

// Watch is a reading taken when a test starts what needs the CPU.
type Watch struct {
	t0          time.Time
	wait0       time.Duration
	pressure0   time.Duration
	hasPressure bool
}

// Start reads the counters.
func Start() Watch {
	w := Watch{t0: time.Now(), wait0: ownWait()}
	w.pressure0, w.hasPressure = pressure()
	return w
}

// Started is when Start read the counters.
func (w Watch) Started() time.Time { return w.t0 }

// Starved says whether the machine kept the test from the CPU since
// Start, and in words what it measured.
func (w Watch) Starved() (bool, string) {
	wall := time.Since(w.t0)
	if wall <= 0 {
		return false, ""
	}
	own := float64(ownWait()-w.wait0) / float64(wall)
	why := fmt.Sprintf("in %v this process's threads waited for a CPU %.0f%% of the time", wall.Round(time.Millisecond), 100*own)
	starved := own > OwnShare
	if p, ok := pressure(); ok && w.hasPressure {
		share := float64(p-w.pressure0) / float64(wall)
		why += fmt.Sprintf(", and some task on the machine waited for one %.0f%% of it (PSI)", 100*share)
		starved = starved || share > PressureShare
	}
	return starved, why + "; load average " + Load1()
}

// SkipIfStarved skips t, saying what did not get the CPU and why, when
// the machine was too busy since Start.
func (w Watch) SkipIfStarved(t testing.TB, what string) {
	t.Helper()
	if starved, why := w.Starved(); starved {
		t.Skipf("the machine did not give %s the CPU it needs: %s", what, why)
	}
}

// ownWait is the run-queue wait of this process's live threads.
func ownWait() time.Duration {
	tasks, _ := procstat.DefaultRoot.ReadTasks(os.Getpid())
	var d time.Duration
	for _, t := range tasks {
		d += time.Duration(t.RunqNs)
	}
	return d
}

// pressure is PSI's cumulative "some" CPU stall time, if the kernel has
// it (procfs parses /proc/pressure/cpu).
func pressure() (time.Duration, bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, false
	}
	st, err := fs.PSIStatsForResource("cpu")
	if err != nil || st.Some == nil {
		return 0, false
	}
	return time.Duration(st.Some.Total) * time.Microsecond, true
}

// Load1 is the 1-minute load average in words, for skip messages (procfs
// parses /proc/loadavg).
func Load1() string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "unknown"
	}
	la, err := fs.LoadAvg()
	if err != nil {
		return "unknown"
	}
	return strconv.FormatFloat(la.Load1, 'f', 2, 64)
}
