package watch

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// ErrGone is wrapped by Step when the main watched process has exited or
// its PID now belongs to another process; the profile returned with it is
// the last one.
var ErrGone = errors.New("watched process is gone")

// snapshot is every watched thread's counters at one moment.
type snapshot struct {
	at     time.Time
	tasks  map[key]procstat.Task
	procs  int
	cgroup CgroupCounters
	// kids are the threads of the watched processes' descendants, when
	// Watcher.Children counts them apart; kidProcs how many processes.
	kids     map[key]procstat.Task
	kidProcs int
}

// Watcher samples a set of processes and turns successive samples into
// interval profiles, accumulating the whole watch in Summary.
type Watcher struct {
	Root procstat.Root
	// CPUs the readings compare runnable threads against.
	CPUs int
	// Descendants also samples every descendant of the main process
	// (diagnose), found anew at each step.
	Descendants bool
	// Children counts the switches of the watched processes' descendants
	// apart from the profile's threads (Profile.Children), found anew at
	// each step: a parent that hardly switches can point at children that
	// do. Unused with Descendants, which samples them as threads.
	Children bool
	// Cgroup is the main process's CPU cgroup; nil when none was found.
	Cgroup *CgroupDir

	main   int
	pids   []int
	starts map[int]uint64 // start time per PID, to detect reuse
	prev   *snapshot
	// Summary is the whole watch so far.
	Summary Profile
	// GoneReason says why the watch ended, once Step returned ErrGone.
	GoneReason string
}

// NewWatcher checks that every PID exists and can be read, records its
// start time. The first PID is the main one (its cgroup and, with
// Descendants, its descendants are read); the watch ends when it is gone, or,
// with several PIDs and no Descendants, when all of them are. Errors wrap procstat.ErrNoProcess for a
// PID that does not exist.
func NewWatcher(root procstat.Root, pids []int) (*Watcher, error) {
	if len(pids) == 0 {
		return nil, errors.New("no process to watch")
	}
	w := &Watcher{Root: root, CPUs: runtime.NumCPU(), main: pids[0], pids: pids, starts: map[int]uint64{}}
	for _, pid := range pids {
		p, err := root.ReadProc(pid)
		if err != nil {
			return nil, err
		}
		if _, err := root.ReadTasks(pid); err != nil {
			return nil, fmt.Errorf("PID %d: cannot read its threads: %w", pid, err)
		}
		w.starts[pid] = p.StartTicks
	}
	if cg, err := FindCgroup(root, DefaultCgroupRoot, w.main); err == nil {
		w.Cgroup = cg
	}
	return w, nil
}

// Begin takes the baseline reading; Step measures from it.
func (w *Watcher) Begin() {
	s, _ := w.read()
	w.prev = &s
}

// live returns the PIDs to read now and whether the main one is still the
// process first seen (same start time).
func (w *Watcher) live() (pids []int, mainOK bool, reason string) {
	mainOK = true
	check := func(pid int) bool {
		p, err := w.Root.ReadProc(pid)
		if err != nil {
			if pid == w.main {
				mainOK, reason = false, fmt.Sprintf("process %d has exited", pid)
			}
			return false
		}
		if p.State == "Z" { // exited, not yet reaped: read it one last time
			if pid == w.main {
				mainOK, reason = false, fmt.Sprintf("process %d has exited", pid)
			}
			return true
		}
		st, seen := w.starts[pid]
		if !seen {
			w.starts[pid] = p.StartTicks
			return true
		}
		if st != p.StartTicks {
			if pid == w.main {
				mainOK, reason = false, fmt.Sprintf("process %d has exited and its PID now belongs to another process (%s, start time changed)", pid, p.Comm)
			}
			return false
		}
		return true
	}
	for _, pid := range w.pids {
		if check(pid) {
			pids = append(pids, pid)
		}
	}
	if len(w.pids) > 1 && !w.Descendants { // several peers (--name): the watch lasts while any is alive
		for _, pid := range pids {
			if p, err := w.Root.ReadProc(pid); err == nil && p.State == "Z" {
				continue
			}
			return pids, true, ""
		}
		return pids, false, "every watched process has exited"
	}
	if w.Descendants && mainOK {
		ds, err := w.Root.DescendantsOf(w.main) // children lists: not every process's stat each interval
		if err == nil {
			for _, d := range ds {
				if !containsInt(pids, d) && check(d) {
					pids = append(pids, d)
				}
			}
		}
	}
	return pids, mainOK, reason
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// read takes one snapshot of the live PIDs.
func (w *Watcher) read() (snapshot, bool) {
	pids, mainOK, reason := w.live()
	s := snapshot{at: time.Now(), tasks: map[key]procstat.Task{}}
	for _, pid := range pids {
		ts, err := w.Root.ReadTasks(pid)
		if err != nil {
			continue // exited between the check and the read
		}
		s.procs++
		for _, t := range ts {
			s.tasks[key{pid, t.TID}] = t
		}
	}
	if w.Children && !w.Descendants {
		s.kids = map[key]procstat.Task{}
		if all, err := w.Root.Procs(); err == nil {
			seen := map[int]bool{}
			for _, pid := range pids {
				for _, d := range procstat.Descendants(all, pid) {
					if seen[d] || containsInt(w.pids, d) {
						continue
					}
					seen[d] = true
					ts, err := w.Root.ReadTasks(d)
					if err != nil {
						continue
					}
					s.kidProcs++
					for _, t := range ts {
						s.kids[key{d, t.TID}] = t
					}
				}
			}
		}
	}
	if w.Cgroup != nil {
		s.cgroup = w.Cgroup.Read()
	}
	if !mainOK {
		w.GoneReason = reason
	}
	return s, mainOK
}

// Step reads the processes again and returns the profile of the interval
// since the previous reading; it also adds it to Summary. With ErrGone the
// main process has exited (or its PID was reused) and the profile covers
// what could still be read.
func (w *Watcher) Step() (Profile, error) {
	if w.prev == nil {
		w.Begin()
	}
	cur, ok := w.read()
	p := Delta(*w.prev, cur, w.CPUs)
	w.prev = &cur
	w.Summary.Accumulate(p)
	if !ok {
		return p, fmt.Errorf("%w: %s", ErrGone, w.GoneReason)
	}
	return p, nil
}

// Delta is the profile between two snapshots. A thread in cur but not prev
// started in the interval and counts from zero; one whose counters went
// backwards is a reused TID and counts from zero too; one in prev but not
// cur exited and shows as such with no counts.
func Delta(prev, cur snapshot, cpus int) Profile {
	p := Profile{Start: prev.at, End: cur.at, Seconds: cur.at.Sub(prev.at).Seconds(), CPUs: cpus, Procs: cur.procs}
	p.Threads = deltaThreads(prev.tasks, cur.tasks)
	if cur.kids != nil {
		p.Children = Children{Procs: cur.kidProcs, Total: Thread{Name: "children"}, perPID: map[int]uint64{}}
		for _, t := range deltaThreads(prev.kids, cur.kids) {
			p.Children.Total.add(t)
			p.Children.perPID[t.PID] += t.Switches()
		}
		p.Children.busiest()
	}
	p.total()
	p.Sort("switches")
	if cur.cgroup.OK && prev.cgroup.OK {
		p.Cgroup = Cgroup{Available: true, Version: cur.cgroup.Version, Dir: cur.cgroup.Dir, Quota: cur.cgroup.Quota,
			ThrottledPeriods: max(cur.cgroup.Throttled-prev.cgroup.Throttled, 0),
			ThrottledUs:      max(cur.cgroup.ThrottledUs-prev.cgroup.ThrottledUs, 0)}
	}
	for _, t := range p.Threads {
		if !t.HasSchedstat && !t.Exited {
			p.Notes = appendOnce(p.Notes, "run-queue wait and CPU time unavailable for some threads (no /proc/…/schedstat: kernel without CONFIG_SCHED_INFO)")
		}
		if !t.HasSched && !t.Exited {
			p.Notes = appendOnce(p.Notes, "migrations unavailable for some threads (no /proc/…/sched: kernel without CONFIG_SCHED_DEBUG)")
		}
	}
	return p
}

// deltaThreads is each thread's counts between two readings (see Delta).
func deltaThreads(prevTasks, curTasks map[key]procstat.Task) []Thread {
	var out []Thread
	for k, c := range curTasks {
		t := Thread{PID: k.PID, TID: k.TID, Name: c.Comm, Threads: 1, HasSched: c.HasSched, HasSchedstat: c.HasSchedstat}
		b, seen := prevTasks[k]
		if !seen || c.Voluntary < b.Voluntary || c.Involuntary < b.Involuntary || c.RunNs < b.RunNs {
			b, t.Started = procstat.Task{}, true
		}
		t.Vol, t.Invol = c.Voluntary-b.Voluntary, c.Involuntary-b.Involuntary
		if c.HasSched && (b.HasSched || t.Started) && c.Migrations >= b.Migrations {
			t.Migrations = c.Migrations - b.Migrations
		} else {
			t.HasSched = false
		}
		if c.HasSchedstat && (b.HasSchedstat || t.Started) && c.RunqNs >= b.RunqNs {
			t.CPUNs, t.RunqNs = c.RunNs-b.RunNs, c.RunqNs-b.RunqNs
		} else {
			t.HasSchedstat = false
		}
		out = append(out, t)
	}
	for k, b := range prevTasks {
		if _, ok := curTasks[k]; !ok {
			out = append(out, Thread{PID: k.PID, TID: k.TID, Name: b.Comm, Threads: 1,
				HasSched: b.HasSched, HasSchedstat: b.HasSchedstat, Exited: true})
		}
	}
	return out
}

func appendOnce(ss []string, s string) []string {
	if contains(ss, s) {
		return ss
	}
	return append(ss, s)
}
