// Package watch turns successive /proc readings of a live process into a
// switching profile — per thread, per interval: voluntary and involuntary
// switches, migrations, CPU time and run-queue wait, plus the cgroup's CPU
// throttling — and reads that profile: what the figures suggest, with the
// numbers behind it. It needs no root for the user's own processes.
package watch

import (
	"sort"
	"time"
)

// Thread is one thread's (or, folded, one thread name's or one process's)
// counts over an interval. Counts are deltas, not rates, so profiles add up;
// the rate methods divide by the profile's seconds.
type Thread struct {
	PID, TID int
	Name     string
	// Threads is how many threads this row folds (1 for a plain thread).
	Threads int

	Vol, Invol uint64 // voluntary / involuntary context switches
	Migrations uint64 // CPU migrations (sched), valid when HasSched
	CPUNs      uint64 // time on a CPU (schedstat), valid when HasSchedstat
	RunqNs     uint64 // time runnable but waiting for a CPU (schedstat)

	HasSched, HasSchedstat bool
	// Started: the thread appeared during the interval (counted from 0).
	// Exited: it was gone by the end; its counts after the previous
	// reading are lost, because the kernel drops them with the thread.
	Started, Exited bool
}

// Switches is voluntary plus involuntary.
func (t Thread) Switches() uint64 { return t.Vol + t.Invol }

// add folds o into t; a figure stays available only if every part had it.
func (t *Thread) add(o Thread) {
	if t.Threads == 0 {
		t.HasSched, t.HasSchedstat = o.HasSched, o.HasSchedstat
	} else {
		t.HasSched = t.HasSched && o.HasSched
		t.HasSchedstat = t.HasSchedstat && o.HasSchedstat
	}
	t.Threads += max(o.Threads, 1)
	t.Vol += o.Vol
	t.Invol += o.Invol
	t.Migrations += o.Migrations
	t.CPUNs += o.CPUNs
	t.RunqNs += o.RunqNs
}

// Cgroup is the CPU controller's state over an interval.
type Cgroup struct {
	Available bool
	Version   int    // 1 or 2
	Dir       string // the cgroup directory read
	Quota     string // "max" or "QUOTA PERIOD" in µs (cpu.max form)
	// Throttled periods and time in the interval (cpu.stat).
	ThrottledPeriods int64
	ThrottledUs      int64
}

// Profile is the switching profile of the watched processes over one
// interval, or over a whole watch (Accumulate).
type Profile struct {
	Start, End time.Time
	Seconds    float64
	CPUs       int // CPUs the readings compare runnable threads against
	Procs      int // processes seen
	Threads    []Thread
	Total      Thread
	// Children are the watched processes' descendants, counted apart
	// from Threads and Total (Watcher.Children).
	Children Children
	Cgroup   Cgroup
	Notes    []string
}

// Children sums the switches of the watched processes' descendants: a
// parent that hardly switches while its children do points at them.
type Children struct {
	Procs int    // most child processes seen at once
	Total Thread // their counts, all threads together
	// Busiest is the child PID with the most switches, 0 when none.
	Busiest int
	perPID  map[int]uint64
}

// busiest picks the child with the most switches (the lowest PID of a tie).
func (c *Children) busiest() {
	c.Busiest = 0
	for pid, n := range c.perPID {
		if b := c.perPID[c.Busiest]; c.Busiest == 0 || n > b || (n == b && pid < c.Busiest) {
			c.Busiest = pid
		}
	}
}

// Rate is x per second of the profile.
func (p *Profile) Rate(x uint64) float64 {
	if p.Seconds <= 0 {
		return 0
	}
	return float64(x) / p.Seconds
}

// key identifies a thread across snapshots.
type key struct{ PID, TID int }

// Accumulate adds interval iv to the whole-watch profile sum, thread by
// thread, so threads that exited mid-watch keep their counts.
func (sum *Profile) Accumulate(iv Profile) {
	if sum.Start.IsZero() {
		sum.Start = iv.Start
	}
	sum.End = iv.End
	sum.Seconds += iv.Seconds
	sum.CPUs = iv.CPUs
	idx := map[key]int{}
	for i, t := range sum.Threads {
		idx[key{t.PID, t.TID}] = i
	}
	for _, t := range iv.Threads {
		k := key{t.PID, t.TID}
		i, ok := idx[k]
		if !ok {
			nt := Thread{PID: t.PID, TID: t.TID, Name: t.Name}
			sum.Threads = append(sum.Threads, nt)
			i = len(sum.Threads) - 1
			idx[k] = i
		}
		s := &sum.Threads[i]
		n := s.Threads
		s.add(t)
		s.Threads = max(n, 1) // a thread stays one thread however many intervals
		s.Name = t.Name
		s.Exited = s.Exited || t.Exited
		s.Started = s.Started || t.Started
	}
	sum.total()
	sum.Procs = max(sum.Procs, iv.Procs)
	if iv.Children.Procs > 0 || iv.Children.Total.Threads > 0 {
		c := &sum.Children
		c.Procs = max(c.Procs, iv.Children.Procs)
		if c.Total.Name == "" {
			c.Total.Name = "children"
		}
		n := c.Total.Threads
		c.Total.add(iv.Children.Total)
		c.Total.Threads = max(n, iv.Children.Total.Threads) // threads at once, not summed over intervals
		if c.perPID == nil {
			c.perPID = map[int]uint64{}
		}
		for pid, sw := range iv.Children.perPID {
			c.perPID[pid] += sw
		}
		c.busiest()
	}
	if iv.Cgroup.Available {
		c := sum.Cgroup
		sum.Cgroup = iv.Cgroup
		sum.Cgroup.ThrottledPeriods += c.ThrottledPeriods
		sum.Cgroup.ThrottledUs += c.ThrottledUs
	}
	for _, n := range iv.Notes {
		if !contains(sum.Notes, n) {
			sum.Notes = append(sum.Notes, n)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// total recomputes p.Total from the threads.
func (p *Profile) total() {
	p.Total = Thread{Name: "total"}
	for _, t := range p.Threads {
		p.Total.add(t)
	}
}

// ByName folds threads of the same name into one row each (Go and Java
// processes have hundreds of same-named threads); Threads counts them.
func (p Profile) ByName() Profile {
	out := p
	out.Threads = nil
	idx := map[string]int{}
	for _, t := range p.Threads {
		i, ok := idx[t.Name]
		if !ok {
			out.Threads = append(out.Threads, Thread{Name: t.Name})
			i = len(out.Threads) - 1
			idx[t.Name] = i
		}
		r := &out.Threads[i]
		r.add(t)
		r.Exited = r.Exited || t.Exited
		r.Started = r.Started || t.Started
	}
	return out
}

// Sort orders the thread rows by what matters: "switches" (the default) or
// "runq" (run-queue wait), largest first, ties by TID then name.
func (p *Profile) Sort(by string) {
	val := func(t Thread) uint64 { return t.Switches() }
	if by == "runq" {
		val = func(t Thread) uint64 { return t.RunqNs }
	}
	sort.SliceStable(p.Threads, func(i, j int) bool {
		a, b := p.Threads[i], p.Threads[j]
		if va, vb := val(a), val(b); va != vb {
			return va > vb
		}
		if a.TID != b.TID {
			return a.TID < b.TID
		}
		return a.Name < b.Name
	})
}

// Top keeps the first n rows (n ≤ 0 keeps all); Total is unchanged.
func (p *Profile) Top(n int) (hidden int) {
	if n > 0 && len(p.Threads) > n {
		hidden = len(p.Threads) - n
		p.Threads = p.Threads[:n]
	}
	return hidden
}

// SortKeys are the values Sort accepts.
var SortKeys = []string{"switches", "runq"}
