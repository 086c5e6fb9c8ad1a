// Package procstat is the one reader of /proc for ctxlab: per-thread
// scheduling figures (status, sched, schedstat), process identity (stat),
// memory (status VmRSS, smaps_rollup, meminfo), a thread's state and system
// call, and the umask. Where prometheus/procfs parses a file (status, stat,
// schedstat, smaps_rollup, meminfo) it is used; the files it does not cover
// (sched, syscall, status's Umask line) have a pure ParseX([]byte) here,
// one per file, tested against the fake /proc in testdata and fuzzed. Parse
// errors wrap ErrParse. It imports nothing internal.
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// ErrParse is wrapped by every parse error.
var ErrParse = errors.New("procstat: cannot parse")

// Root is the proc filesystem mount point; tests point it at fixtures.
type Root string

// DefaultRoot is the real /proc.
const DefaultRoot Root = "/proc"

// Task is one thread's scheduling counters at one moment. Fields that the
// kernel does not expose here have their Has* flag false.
type Task struct {
	PID, TID    int
	Comm        string
	Voluntary   uint64 // voluntary_ctxt_switches
	Involuntary uint64 // nonvoluntary_ctxt_switches

	HasSched   bool
	Migrations uint64  // se.nr_migrations
	WaitSumNs  float64 // se.statistics.wait_sum / stats.wait_sum, if present

	HasSchedstat bool
	RunNs        uint64 // time on CPU
	RunqNs       uint64 // time waiting on a run queue
	Timeslices   uint64

	// HasTicks is set when schedstat is unreadable and stat's utime and
	// stime were read instead: CPUTicks is their sum, in clock ticks
	// (UserHZ a second).
	HasTicks bool
	CPUTicks uint64
}

// UserHZ is the unit of /proc's clock-tick fields (stat's utime, stime):
// USER_HZ, 100 a second on every architecture Linux runs ctxlab on (alpha
// alone differs); prometheus/procfs assumes the same.
const UserHZ = 100

// Sched is what ctxlab needs of /proc/…/sched (CONFIG_SCHED_DEBUG).
type Sched struct {
	Migrations        uint64
	HasWaitSum        bool
	WaitSumNs         float64
	HasSwitches       bool
	Switches          uint64
	VoluntarySwitches uint64
	InvoluntarySwitch uint64
	HasSlice          bool   // se.slice is there: an EEVDF kernel
	SliceNs           uint64 // se.slice
}

// ParseSched parses /proc/…/sched. Kernels before 6.6 name the statistics
// "se.statistics.x", later ones "stats.x"; both are accepted. Times are in ms
// with a fractional part.
func ParseSched(data []byte) (Sched, error) {
	var s Sched
	seenMig := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "se.nr_migrations":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return s, fmt.Errorf("%w: sched %s %q", ErrParse, k, v)
			}
			s.Migrations, seenMig = n, true
		case "se.statistics.wait_sum", "stats.wait_sum":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				return s, fmt.Errorf("%w: sched %s %q", ErrParse, k, v)
			}
			s.WaitSumNs, s.HasWaitSum = f*1e6, true
		case "nr_switches":
			n, _ := strconv.ParseUint(v, 10, 64)
			s.Switches, s.HasSwitches = n, true
		case "nr_voluntary_switches":
			s.VoluntarySwitches, _ = strconv.ParseUint(v, 10, 64)
		case "nr_involuntary_switches":
			s.InvoluntarySwitch, _ = strconv.ParseUint(v, 10, 64)
		case "se.slice":
			s.SliceNs, _ = strconv.ParseUint(v, 10, 64)
			s.HasSlice = true
		}
	}
	if !seenMig {
		return s, fmt.Errorf("%w: sched has no se.nr_migrations", ErrParse)
	}
	return s, nil
}

// ReadSched reads and parses /proc/<pid>/task/<tid>/sched.
func (r Root) ReadSched(pid, tid int) (Sched, error) {
	data, err := os.ReadFile(filepath.Join(string(r), strconv.Itoa(pid), "task", strconv.Itoa(tid), "sched"))
	if err != nil {
		return Sched{}, err
	}
	return ParseSched(data)
}

// TIDs lists the thread ids of process pid, sorted.
func (r Root) TIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join(string(r), strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, t)
		}
	}
	sort.Ints(out)
	return out, nil
}

// ReadTask reads one thread's counters (status and schedstat through
// prometheus/procfs, sched with ParseSched; stat's utime+stime only where
// schedstat is unreadable). A thread that has exited gives
// an error satisfying errors.Is(err, os.ErrNotExist). sched and schedstat are
// optional: their absence only clears the Has* flags.
func (r Root) ReadTask(pid, tid int) (Task, error) {
	t := Task{PID: pid, TID: tid}
	fs, err := procfs.NewFS(string(r))
	if err != nil {
		return t, err
	}
	p, err := fs.Thread(pid, tid)
	if err != nil {
		return t, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return t, err
	}
	t.Comm, t.Voluntary, t.Involuntary = st.Name, st.VoluntaryCtxtSwitches, st.NonVoluntaryCtxtSwitches
	if s, err := r.ReadSched(pid, tid); err == nil {
		t.HasSched, t.Migrations, t.WaitSumNs = true, s.Migrations, s.WaitSumNs
	}
	if ss, err := p.Schedstat(); err == nil {
		t.HasSchedstat, t.RunNs, t.RunqNs, t.Timeslices = true, ss.RunningNanoseconds, ss.WaitingNanoseconds, ss.RunTimeslices
	} else if st, err := safeStat(p); err == nil {
		// No schedstat (CONFIG_SCHED_INFO off, some containers): the
		// thread's CPU time in clock ticks is what is left.
		t.HasTicks, t.CPUTicks = true, uint64(st.UTime)+uint64(st.STime)
	}
	return t, nil
}

// ReadTasks reads every thread of pid; threads that exit while being read
// are left out, not reported as errors.
func (r Root) ReadTasks(pid int) ([]Task, error) {
	tids, err := r.TIDs(pid)
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(tids))
	for _, tid := range tids {
		t, err := r.ReadTask(pid, tid)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
				continue
			}
			// ESRCH surfaces as a read error on a vanished task.
			if _, statErr := os.Stat(filepath.Join(string(r), strconv.Itoa(pid), "task", strconv.Itoa(tid))); statErr != nil {
				continue
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ReadThreadsCPU is each thread's time on CPU in ns
// (/proc/<pid>/task/<tid>/schedstat), by TID; threads that exit while
// being read, or whose schedstat is unreadable, are left out.
func (r Root) ReadThreadsCPU(pid int) (map[int]uint64, error) {
	tids, err := r.TIDs(pid)
	if err != nil {
		return nil, err
	}
	fs, err := procfs.NewFS(string(r))
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint64, len(tids))
	for _, tid := range tids {
		p, err := fs.Thread(pid, tid)
		if err != nil {
			continue
		}
		if ss, err := p.Schedstat(); err == nil {
			out[tid] = ss.RunningNanoseconds
		}
	}
	return out, nil
}
