package runner

import (
	"fmt"
	"runtime/metrics"
	"sort"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// A probe reads one kind of figure just outside the clock at the start
// and the end of every timed repetition, over exactly the arm's declared
// participants, and fills its part of the result. Wall time is the
// measure.B timer itself; the probes add what the OS and the Go runtime
// counted meanwhile. begin may be called again before end (ResetTimer):
// the later reading is the baseline. mark and rollback bracket one
// repetition: a repetition that fails (a timeout, a broken worker) is
// rolled back, so what the probes counted covers exactly the repetitions
// whose ops the result counts.
type probe interface {
	begin()
	end()
	mark()
	rollback()
	fill(r *result.Arm, rec *exp.Record)
	close()
}

// probes is the list the runner brackets every repetition with.
type probes []probe

func (ps probes) snap(begin bool) {
	if begin {
		for _, p := range ps {
			p.begin()
		}
		return
	}
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].end()
	}
}

func (ps probes) mark() {
	for _, p := range ps {
		p.mark()
	}
}

func (ps probes) rollback() {
	for _, p := range ps {
		p.rollback()
	}
}

func (ps probes) fill(r *result.Arm, rec *exp.Record) {
	for _, p := range ps {
		p.fill(r, rec)
	}
}

func (ps probes) close() {
	for _, p := range ps {
		p.close()
	}
}

// taskKey names one thread: of ctxlab (pid = selfPID) or of a child.
type taskKey struct{ pid, tid int }

// cpuSource is where a reading's CPU time came from.
type cpuSource uint8

const (
	cpuNone        cpuSource = iota
	cpuSchedstat             // /proc/<pid>/task/<tid>/schedstat
	cpuThreadClock           // the thread's CPU clock (clock_gettime), schedstat unreadable
	cpuTicks                 // /proc/<pid>/task/<tid>/stat utime+stime, schedstat unreadable
	cpuProcess               // CLOCK_PROCESS_CPUTIME_ID or getrusage: a whole process
)

// taskVals are one thread's (or a whole process's) cumulative counts.
type taskVals struct {
	vol, invol int64
	migr       int64
	haveMigr   bool
	cpu, runq  int64
	cpuSrc     cpuSource // cpuNone: cpu not read
	haveRunq   bool      // runq read (schedstat)
	child      bool      // a child process's thread
}

// taskReading is one snapshot of every participant, plus the whole
// process and its children for the cross-check.
type taskReading struct {
	tasks map[taskKey]taskVals
	// whole is ctxlab's getrusage(RUSAGE_SELF) switches plus every thread
	// of the declared child processes: what the participants' sum must
	// never exceed.
	whole taskVals
	// noRunq: a whole-process participant's threads could not be listed,
	// so its run-queue wait is unknown (absent, not 0).
	noRunq bool
}

// taskProbe counts OS context switches (voluntary and involuntary),
// migrations, on-CPU time and run-queue wait of the participants:
// threads from /proc/self/task/<tid>/{status,sched,schedstat}, child
// processes from every one of their threads, the whole process from
// getrusage(RUSAGE_SELF) and CLOCK_PROCESS_CPUTIME_ID, reaped children
// from getrusage(RUSAGE_CHILDREN).
type taskProbe struct {
	parts exp.Participants
	root  procstat.Root // the proc tree (fixtures in tests)
	base  taskReading
	// acc accumulates deltas over the timed repetitions.
	acc      taskVals
	childAcc taskVals
	whole    taskVals
	migrOK   bool // migrations were counted for at least one task
	cpuOK    bool // every participant's CPU time was read
	runqOK   bool
	// lost counts participant threads that vanished between begin and end.
	lost int
	// sources has bit 1<<s set for each cpuSource a counted CPU time came
	// from; tickReads counts the thread-repetitions read in clock ticks.
	sources   uint8
	tickReads int
	// threadCPU is each declared thread's CPU time.
	threadCPU map[int]int64
	// saved is the state at the last mark.
	saved *taskProbe
}

func newTaskProbe(parts exp.Participants) *taskProbe {
	return &taskProbe{parts: parts, root: procstat.DefaultRoot, cpuOK: true, runqOK: true}
}

// tickNs is one clock tick of /proc's utime and stime, in ns.
const tickNs = int64(1e9 / procstat.UserHZ)

// readTask reads one thread's counts. Its CPU time comes from schedstat;
// where that file is unreadable (a kernel without CONFIG_SCHED_INFO, some
// containers), from the thread's CPU clock for a thread of this process,
// or from stat's utime+stime in clock ticks for another process's thread
// (whose clock the kernel does not let us read). Run-queue wait comes
// only from schedstat.
func (p *taskProbe) readTask(pid, tid int, child bool) (taskVals, bool) {
	t, err := p.root.ReadTask(pid, tid)
	if err != nil {
		return taskVals{}, false
	}
	v := taskVals{vol: int64(t.Voluntary), invol: int64(t.Involuntary), child: child}
	if t.HasSched {
		v.migr, v.haveMigr = int64(t.Migrations), true
	}
	switch {
	case t.HasSchedstat:
		v.cpu, v.runq, v.cpuSrc, v.haveRunq = int64(t.RunNs), int64(t.RunqNs), cpuSchedstat, true
	case pid == selfPID:
		if ns, err := measure.ThreadCPUNs(tid); err == nil {
			v.cpu, v.cpuSrc = ns, cpuThreadClock
		}
	case t.HasTicks:
		v.cpu, v.cpuSrc = int64(t.CPUTicks)*tickNs, cpuTicks
	}
	return v, true
}

// read takes one snapshot. The probe's own reading costs CPU time on the
// thread that reads, which may be a participant (a bench that resets the
// timer on its worker thread) or part of the whole process: so the calling
// thread and the process-wide clocks are read last when a repetition
// begins and first when it ends, leaving the reading itself outside.
func (p *taskProbe) read(begin bool) taskReading {
	rd := taskReading{tasks: map[taskKey]taskVals{}}
	me := measure.Gettid()
	mine := false
	if !p.parts.Process {
		for _, tid := range p.parts.TIDs {
			mine = mine || tid == me
		}
	}
	self := func() {
		if vol, invol, err := measure.SelfSwitches(); err == nil {
			rd.whole.vol += vol
			rd.whole.invol += invol
			if p.parts.Process {
				v := taskVals{vol: vol, invol: invol}
				if cpu, err := measure.ProcessCPUNs(); err == nil {
					v.cpu, v.cpuSrc = cpu, cpuProcess
				}
				rd.tasks[taskKey{selfPID, 0}] = v // 0: the process as a whole
			}
		}
		if mine {
			if v, ok := p.readTask(selfPID, me, false); ok {
				rd.tasks[taskKey{selfPID, me}] = v
			}
		}
	}
	others := func() {
		if p.parts.Process {
			// Migrations and run-queue wait: summed over the live threads.
			if tasks, err := p.root.ReadTasks(selfPID); err == nil {
				for _, t := range tasks {
					// A thread without sched still has its run-queue wait
					// (or lacks it: then the arm's is absent, not 0).
					rd.tasks[taskKey{selfPID, t.TID}] = taskVals{migr: int64(t.Migrations), haveMigr: t.HasSched, runq: int64(t.RunqNs), haveRunq: t.HasSchedstat}
				}
			} else {
				rd.noRunq = true
			}
		}
		for _, tid := range p.parts.TIDs {
			if p.parts.Process || tid == me {
				continue
			}
			if v, ok := p.readTask(selfPID, tid, false); ok {
				rd.tasks[taskKey{selfPID, tid}] = v
			}
		}
		for _, pid := range p.parts.PIDs {
			tids, err := p.root.TIDs(pid)
			if err != nil {
				continue
			}
			for _, tid := range tids {
				if v, ok := p.readTask(pid, tid, true); ok {
					rd.tasks[taskKey{pid, tid}] = v
					rd.whole.vol += v.vol
					rd.whole.invol += v.invol
				}
			}
		}
		if p.parts.Children {
			if u, err := measure.ChildrenUsage(); err == nil {
				rd.tasks[taskKey{-1, 0}] = taskVals{vol: u.Voluntary, invol: u.Involuntary, cpu: u.CPUNs, cpuSrc: cpuProcess, child: true}
				rd.whole.vol += u.Voluntary
				rd.whole.invol += u.Involuntary
			}
		}
	}
	if begin {
		others()
		self()
	} else {
		self()
		others()
	}
	return rd
}

func (p *taskProbe) begin() { p.base = p.read(true) }

func (p *taskProbe) end() {
	now := p.read(false)
	p.whole.vol += now.whole.vol - p.base.whole.vol
	p.whole.invol += now.whole.invol - p.base.whole.invol
	if p.base.noRunq || now.noRunq {
		p.runqOK = false
	}
	for k, b := range p.base.tasks {
		n, ok := now.tasks[k]
		if !ok {
			// A thread of a whole-process participant may exit (spawn):
			// its switches and CPU time stay in the process-wide entry.
			if !(p.parts.Process && k.pid == selfPID) {
				p.lost++
			}
			continue
		}
		acc := &p.acc
		if b.child {
			acc = &p.childAcc
		}
		whole := p.parts.Process && k.pid == selfPID
		perThread := !whole || k.tid != 0
		// A whole-process participant's switches and CPU time come from
		// its process-wide entry (tid 0: exited threads included); its
		// live threads add migrations and run-queue wait.
		if !whole || k.tid == 0 {
			acc.vol += n.vol - b.vol
			acc.invol += n.invol - b.invol
		}
		if b.haveMigr && n.haveMigr {
			acc.migr += n.migr - b.migr
			p.migrOK = true
		}
		// Run-queue wait: every thread's, from schedstat, or none.
		if perThread && k.pid != -1 {
			if b.haveRunq && n.haveRunq {
				acc.runq += n.runq - b.runq
			} else {
				p.runqOK = false
			}
		}
		if whole && k.tid != 0 {
			continue // a live thread of a whole process: its CPU time is in tid 0's
		}
		// CPU time: both readings from the same source, or none.
		if b.cpuSrc == cpuNone || b.cpuSrc != n.cpuSrc {
			p.cpuOK = false
			continue
		}
		d := n.cpu - b.cpu
		acc.cpu += d
		p.sources |= 1 << b.cpuSrc
		if b.cpuSrc == cpuTicks {
			p.tickReads++
		}
		if !whole && k.pid == selfPID {
			if p.threadCPU == nil {
				p.threadCPU = map[int]int64{}
			}
			p.threadCPU[k.tid] += d
		}
	}
}

func (p *taskProbe) fill(r *result.Arm, rec *exp.Record) {
	rec.CPUNs, rec.RunqNs = -1, -1
	ops := float64(rec.Ops)
	if ops <= 0 {
		return
	}
	empty := !p.parts.Process && len(p.parts.TIDs) == 0 && len(p.parts.PIDs) == 0 && !p.parts.Children
	if empty {
		r.Notes = append(r.Notes, "this arm declares no participating thread or process: no switches or CPU time counted")
		return
	}
	vol, invol := p.acc.vol+p.childAcc.vol, p.acc.invol+p.childAcc.invol
	r.Switches = &result.Switches{
		Voluntary: float64(vol) / ops, Involuntary: float64(invol) / ops,
		ChildVoluntary: float64(p.childAcc.vol) / ops, ChildInvoluntary: float64(p.childAcc.invol) / ops,
	}
	if p.migrOK {
		m := float64(p.acc.migr+p.childAcc.migr) / ops
		r.Migrations = &m
	}
	if p.cpuOK {
		cpu := p.acc.cpu + p.childAcc.cpu
		rec.CPUNs = cpu
		rec.ThreadCPUNs = p.threadCPU
		v := float64(cpu) / ops
		r.CPUNsPerOp = &v
		if p.sources&(1<<cpuThreadClock) != 0 {
			r.Notes = append(r.Notes, "CPU time per op from the threads' own CPU clocks (clock_gettime): /proc/…/schedstat is unreadable here")
		}
		if p.sources&(1<<cpuTicks) != 0 {
			res := float64(int64(p.tickReads)*tickNs) / ops
			r.Notes = append(r.Notes, fmt.Sprintf("CPU time per op of child processes' threads from /proc/<pid>/task/<tid>/stat utime+stime (schedstat unreadable): clock ticks of %s, so up to ±%s per op here",
				result.FormatNs(float64(tickNs)), result.FormatNs(res)))
		}
	} else {
		r.Notes = append(r.Notes, "CPU time per op not counted: a participant's CPU time was unreadable (/proc/…/schedstat, its CPU clock and /proc/…/stat)")
	}
	if p.runqOK && !p.parts.Children {
		rec.RunqNs = p.acc.runq + p.childAcc.runq
		v := float64(rec.RunqNs) / ops
		r.RunqNsPerOp = &v
	} else if !p.parts.Children {
		r.Notes = append(r.Notes, "run-queue wait not counted: a participant's /proc/…/schedstat is unreadable here")
	}
	if p.lost > 0 {
		r.Notes = append(r.Notes, "a participating thread ended during a repetition: its last counts are missing")
	}
}

func (p *taskProbe) mark() {
	if p.saved == nil {
		p.saved = &taskProbe{}
	}
	cpu := p.saved.threadCPU
	clear(cpu)
	*p.saved = *p
	p.saved.saved = nil
	if p.threadCPU != nil {
		if cpu == nil {
			cpu = map[int]int64{}
		}
		for k, v := range p.threadCPU {
			cpu[k] = v
		}
	}
	p.saved.threadCPU = cpu
}

func (p *taskProbe) rollback() {
	if p.saved == nil {
		return
	}
	s := p.saved
	p.acc, p.childAcc, p.whole = s.acc, s.childAcc, s.whole
	p.migrOK, p.cpuOK, p.runqOK, p.lost = s.migrOK, s.cpuOK, s.runqOK, s.lost
	p.sources, p.tickReads = s.sources, s.tickReads
	clear(p.threadCPU)
	for k, v := range s.threadCPU {
		p.threadCPU[k] = v
	}
}

func (p *taskProbe) close() {}

// totals are the participants' and the whole process's switch counts over
// the timed repetitions, for Observation.
func (p *taskProbe) totals() (parts, whole int64) {
	return p.acc.vol + p.acc.invol + p.childAcc.vol + p.childAcc.invol, p.whole.vol + p.whole.invol
}

// schedProbe reads the Go runtime's /sched/latencies:seconds histogram
// (how long goroutines waited to run) around the timed repetitions.
type schedProbe struct {
	sample []metrics.Sample
	base   []uint64
	acc    *metrics.Float64Histogram
	saved  []uint64 // acc's counts at the last mark (nil: acc was nil)
}

const schedMetric = "/sched/latencies:seconds"

func newSchedProbe() *schedProbe {
	return &schedProbe{sample: []metrics.Sample{{Name: schedMetric}}}
}

func (p *schedProbe) read() *metrics.Float64Histogram {
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return p.sample[0].Value.Float64Histogram()
}

func (p *schedProbe) begin() {
	if h := p.read(); h != nil {
		p.base = append(p.base[:0], h.Counts...)
	}
}

func (p *schedProbe) end() {
	h := p.read()
	if h == nil || len(h.Counts) != len(p.base) {
		return
	}
	if p.acc == nil {
		p.acc = &metrics.Float64Histogram{Buckets: append([]float64(nil), h.Buckets...), Counts: make([]uint64, len(h.Counts))}
	}
	for i, c := range h.Counts {
		if c >= p.base[i] {
			p.acc.Counts[i] += c - p.base[i]
		}
	}
}

func (p *schedProbe) mark() {
	p.saved = p.saved[:0]
	if p.acc != nil {
		p.saved = append(p.saved, p.acc.Counts...)
	}
}

func (p *schedProbe) rollback() {
	if p.acc == nil {
		return
	}
	if len(p.saved) != len(p.acc.Counts) {
		p.acc = nil // nothing was accumulated before the mark
		return
	}
	copy(p.acc.Counts, p.saved)
}

func (p *schedProbe) fill(r *result.Arm, rec *exp.Record) { rec.SchedLatencies = p.acc }
func (p *schedProbe) close()                              {}

// participantTIDs are every thread the participants have now: the declared
// threads, each child's threads, and for a whole-process participant every
// thread of ctxlab.
func participantTIDs(parts exp.Participants) []int {
	var tids []int
	if parts.Process {
		if self, err := procstat.DefaultRoot.TIDs(selfPID); err == nil {
			tids = append(tids, self...)
		}
	}
	tids = append(tids, parts.TIDs...)
	for _, pid := range parts.PIDs {
		if ct, err := procstat.DefaultRoot.TIDs(pid); err == nil {
			tids = append(tids, ct...)
		}
	}
	sort.Ints(tids)
	return uniq(tids)
}

// participantCPUs is the union of the CPUs the participants may run on
// (sched_getaffinity of each thread): the workers' CPUs, not the harness's.
func participantCPUs(parts exp.Participants) []int {
	set := map[int]bool{}
	for _, tid := range participantTIDs(parts) {
		cpus, err := measure.TaskAffinity(tid)
		if err != nil {
			continue
		}
		for _, c := range cpus {
			set[c] = true
		}
	}
	var out []int
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}
