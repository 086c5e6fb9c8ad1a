package experiments

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// yield: K workers give up the CPU in a loop; op = one yield (SPEC §5.3).
// A batch of b.N yields is split evenly over the K workers, which all start
// together; ns/op is the batch's wall time ÷ b.N, so with P CPUs yielding
// at once it is about the CPU cost of a yield ÷ P. The CPU cost itself
// (the runner's CPU time of the participants over the timed repetitions ÷
// yields) is reported as cpu-ns/yield.
func init() {
	exp.Register(&exp.Spec{
		Name:       "yield",
		Order:      30,
		References: yieldRefs,
		Summary:    "K workers yielding in a loop: the cheapest switch, and how it changes with K",
		Op:         "yield",
		OpLabels:   []exp.OpLabel{{Label: "yield"}},
		Doc: `K goroutines each call runtime.Gosched() in a loop (K = 1…10000, at
GOMAXPROCS 1 and all CPUs); K locked OS threads each call sched_yield(2),
all on one CPU (K = 2…1000) or one per CPU. One thread alone on a CPU
calling sched_yield is the system-call floor: with nothing else to run the
kernel returns at once, so it is NOT a context switch (its switches per op
show it). A batch of b.N yields is split evenly over the K workers, which
start together; ns/op is wall time ÷ yields (all workers together), and the
metric cpu-ns/yield is the CPU time the process spent per yield.
Thread arms run at GOMAXPROCS K+1 so every thread has a P of its own and Go's
scheduler stays out of the way. --workers replaces the K list.
CPython: K asyncio tasks each await asyncio.sleep(0) (pytask/sleep0, K = 1,
100, 10000; 10 and 1000 with --full).
` + cpythonDoc,
		Arms:     withCPython(yieldArms, yieldPyPlan),
		Checks:   cpythonChecks(yieldChecks, nil),
		Findings: cpythonFindings(yieldFindings, yieldPyRefs.findings),
		Metrics:  append(append([]exp.Metric(nil), yieldMetrics...), cpythonMetrics...),
	})
}

var yieldDefaultK = []int{1, 10, 100, 1000, 10000}
var yieldThreadK = []int{2, 10, 100, 1000}

// yieldGoKey is a goroutine arm's key: yield/goroutine/gosched/k=K/gomaxprocs=G.
func yieldGoKey(k int, gomaxprocs string) exp.ArmKey {
	return exp.Key("yield", exp.Seg("goroutine"), exp.Seg("gosched"), exp.KV("k", k), exp.KV("gomaxprocs", gomaxprocs))
}

// yieldThreadKey is a thread arm's key: yield/thread/sched_yield/k=K/PLACEMENT.
func yieldThreadKey(k int, placement string) exp.ArmKey {
	return exp.Key("yield", exp.Seg("thread"), exp.Seg("sched_yield"), exp.KV("k", k), exp.Seg(placement))
}

var quickYield = keysOf(
	yieldGoKey(1, "1"), yieldGoKey(100, "1"), yieldGoKey(10000, "1"), yieldGoKey(100, "all"),
	yieldThreadKey(1, "alone"), yieldThreadKey(10, "same-cpu"),
)

func yieldArms(p exp.Params) ([]exp.Arm, error) {
	host := p.Host
	if host == nil {
		host = sysinfo.Detect()
	}
	all := len(p.CPUs)
	gks, tks := yieldDefaultK, yieldThreadK
	if p.Workers != nil {
		gks, tks = p.Workers, nil
		for _, k := range p.Workers {
			if err := workerLimit("yield", "goroutine", "gosched", k, host); err != nil {
				return nil, err
			}
			if k >= 2 {
				if err := workerLimit("yield", "thread", "sched_yield", k, host); err != nil {
					return nil, err
				}
				tks = append(tks, k)
			}
		}
	}
	var arms []exp.Arm
	unp := exp.Unpinned(p)
	c0 := []int{p.CPUs[0]}
	for _, k := range gks {
		for _, g := range []struct {
			name string
			n    int
		}{{"1", 1}, {"all", all}} {
			key := yieldGoKey(k, g.name)
			arms = append(arms, exp.Arm{
				Name: key.String(), Substrate: "goroutine", Mechanism: "gosched",
				Params:     map[string]string{"k": strconv.Itoa(k), "gomaxprocs": strconv.Itoa(g.n)},
				GOMAXPROCS: g.n, Placement: unp.Name, CPUs: unp.Process, Quick: quickYield.has(key),
				Open: func(ctx context.Context) (exp.Bench, error) { return OpenYield(ctx, k, false, nil) },
			})
		}
	}
	type tarm struct {
		k         int
		placement string
		cpus      []int   // the process's CPUs for the arm
		pins      [][]int // per-thread CPUs (nil = the process's)
	}
	tas := []tarm{{1, "alone", c0, [][]int{c0}}}
	if all >= 2 {
		var pins [][]int
		for _, c := range p.CPUs {
			pins = append(pins, []int{c})
		}
		tas = append(tas, tarm{all, "own-cpu", p.CPUs, pins})
	}
	for _, k := range tks {
		tas = append(tas, tarm{k, "same-cpu", c0, nil})
	}
	for _, t := range tas {
		key := yieldThreadKey(t.k, t.placement)
		arms = append(arms, exp.Arm{
			Name: key.String(), Substrate: "thread", Mechanism: "sched_yield",
			Params:     map[string]string{"k": strconv.Itoa(t.k), "placement": t.placement},
			GOMAXPROCS: t.k + 1, Placement: t.placement, CPUs: t.cpus, Quick: quickYield.has(key),
			Open: func(ctx context.Context) (exp.Bench, error) { return OpenYield(ctx, t.k, true, t.pins) },
		})
	}
	return arms, nil
}

// yieldWorker is one yielding worker; it waits for a gate, yields quota
// times (fewer if the bench is closed), and reports back.
type yieldWorker struct {
	start  chan chan struct{}
	quota  int
	yields int64 // total yields made, read after Close
	_      [48]byte
}

// Yield is an opened yield arm: its workers are goroutines or locked
// threads (yieldKind). Counts are valid after Close.
type Yield struct {
	K       int // workers
	kind    yieldKind
	workers []*yieldWorker
	batch   sync.WaitGroup
	exited  sync.WaitGroup
	stop    uint32 // non-zero: cut the batch short (atomic)

	mu     sync.Mutex
	closed bool
	once   sync.Once
}

// yieldKind is what a worker is: how it sets itself up on its goroutine
// and how it yields, in a loop of its own so no yield pays a call more.
type yieldKind interface {
	// begin runs on worker i's goroutine before its first batch.
	begin(i int) error
	// yields yields n times, fewer once stop is set; it returns how many.
	yields(n int, stop *uint32) int
	participants() exp.Participants
	tids() []int
	// end runs once every worker is gone.
	end()
}

// OpenYield starts k yielding workers: goroutines, or locked threads
// (pinned per pins[i%len(pins)] when pins is not nil).
func OpenYield(ctx context.Context, k int, threads bool, pins [][]int) (*Yield, error) {
	if k < 1 {
		return nil, fmt.Errorf("yield: %d workers: need at least 1", k)
	}
	var kind yieldKind = goroutineYields{}
	if threads {
		kind = &threadYields{pins: pins, tid: make([]int, k), restoreMaxThr: raiseMaxThreads(k)}
	}
	y := &Yield{K: k, kind: kind}
	errc := make(chan error, 1)
	for i := 0; i < k; i++ {
		if err := ctx.Err(); err != nil {
			y.Close()
			return nil, err
		}
		w := &yieldWorker{start: make(chan chan struct{})}
		y.workers = append(y.workers, w)
		ready := make(chan struct{})
		y.exited.Add(1)
		go func() {
			defer y.exited.Done()
			if err := kind.begin(i); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
			close(ready)
			y.work(w)
		}()
		<-ready
	}
	select {
	case err := <-errc:
		y.Close()
		return nil, err
	default:
	}
	return y, nil
}

func (y *Yield) work(w *yieldWorker) {
	for gate := range w.start {
		<-gate
		w.yields += int64(y.kind.yields(w.quota, &y.stop))
		y.batch.Done()
	}
}

// goroutineYields: goroutines calling runtime.Gosched.
type goroutineYields struct{}

func (goroutineYields) begin(int) error { return nil }

func (goroutineYields) yields(n int, stop *uint32) int {
	i := 0
	for i < n {
		runtime.Gosched()
		i++
		if i&63 == 0 && atomic.LoadUint32(stop) != 0 {
			break
		}
	}
	return i
}

// Participants: goroutine workers run on the runtime's threads (the
// whole process).
func (goroutineYields) participants() exp.Participants { return exp.WholeProcess() }
func (goroutineYields) tids() []int                    { return nil }
func (goroutineYields) end()                           {}

// threadYields: locked threads calling sched_yield(2), each pinned as
// pins says.
type threadYields struct {
	pins          [][]int
	tid           []int // worker i's OS thread
	restoreMaxThr func()
}

func (t *threadYields) begin(i int) error {
	runtime.LockOSThread() // never unlocked: the thread dies with the worker
	t.tid[i] = unix.Gettid()
	var pin []int
	if len(t.pins) > 0 {
		pin = t.pins[i%len(t.pins)]
	}
	return measure.PinThread(pin)
}

func (t *threadYields) yields(n int, stop *uint32) int { return mech.Yields(n, stop) }

// Participants: thread workers are their own locked threads.
func (t *threadYields) participants() exp.Participants { return exp.Threads(t.tids()...) }

func (t *threadYields) tids() []int {
	var out []int
	for _, tid := range t.tid {
		if tid != 0 {
			out = append(out, tid)
		}
	}
	return out
}

func (t *threadYields) end() {
	if t.restoreMaxThr != nil {
		t.restoreMaxThr()
	}
}

// Run makes b.N yields in all, split over the workers, started together.
func (y *Yield) Run(b *measure.B) error {
	y.mu.Lock()
	if y.closed {
		y.mu.Unlock()
		return mech.ErrStopped
	}
	gate := make(chan struct{})
	q, r := b.N/y.K, b.N%y.K
	for i, w := range y.workers {
		w.quota = q
		if i < r {
			w.quota++
		}
		if w.quota == 0 {
			continue
		}
		y.batch.Add(1)
		w.start <- gate
	}
	y.mu.Unlock()
	b.ResetTimer() // every worker has its quota and waits at the gate
	close(gate)
	y.batch.Wait()
	b.StopTimer()
	if atomic.LoadUint32(&y.stop) != 0 {
		return mech.ErrStopped
	}
	return nil
}

// Participants: the whole process for goroutine workers, the locked
// threads for thread workers.
func (y *Yield) Participants() exp.Participants { return y.kind.participants() }

// TIDs are the OS threads of thread workers (none for goroutines).
func (y *Yield) TIDs() []int { return y.kind.tids() }

// Yields returns each worker's count of yields (valid after Close).
func (y *Yield) Yields() []int64 {
	out := make([]int64, len(y.workers))
	for i, w := range y.workers {
		out[i] = w.yields
	}
	return out
}

// Close cuts any batch short and waits for every worker (and its thread) to end.
func (y *Yield) Close() error {
	y.once.Do(func() {
		atomic.StoreUint32(&y.stop, 1)
		y.mu.Lock()
		y.closed = true
		for _, w := range y.workers {
			close(w.start)
		}
		y.mu.Unlock()
		y.exited.Wait()
		y.kind.end()
	})
	return nil
}

// Analyze adds the CPU cost per yield (the runner's CPU time of the
// participants over the timed repetitions) and, for the lone thread, says
// that its figure is the system call, not a switch.
func (y *Yield) Analyze(rec *exp.Record, a *result.Arm) {
	if rec.Ops > 0 && rec.CPUNs > 0 {
		a.SetMetric("cpu-ns/yield", float64(rec.CPUNs)/float64(rec.Ops))
	}
	if _, threads := y.kind.(*threadYields); threads && y.K == 1 {
		a.Notes = append(a.Notes, "the syscall floor: one thread alone calling sched_yield; with nothing else runnable on its CPU the kernel returns at once — this is NOT a context switch")
	}
}

// Thresholds of the yield checks.
const (
	minSameCPUSwitches = 0.5 // K ≥ 2 threads on one CPU: ≈ 1 switch per yield
)

func yieldChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Switches == nil {
			continue
		}
		sw := a.Switches.Total()
		k, _ := strconv.Atoi(a.Params["k"])
		switch {
		case a.Substrate == "thread" && k == 1:
			out = append(out, result.Check{
				Name:   fmt.Sprintf("a lone thread's sched_yield is the syscall floor, not a switch (< %.2f OS switches per yield)", maxNoSwitch),
				Holds:  sw < maxNoSwitch, // a lone sched_yield: ≈ 0 switches per yield
				Detail: fmt.Sprintf("%s: %s per yield, %.3f switches per yield (other load on the CPU makes this fail)", a.Name, result.FormatNs(a.Median), sw),
				Arms:   []string{a.Name},
			})
		case a.Substrate == "thread" && a.Placement == "same-cpu":
			out = append(out, result.Check{
				Name:   "K ≥ 2 threads yielding on one CPU switch on (almost) every yield (≥ 0.5 OS switches per yield)",
				Holds:  sw >= minSameCPUSwitches,
				Detail: fmt.Sprintf("%s: %.2f switches per yield (%.2f involuntary)", a.Name, sw, a.Switches.Involuntary),
				Arms:   []string{a.Name},
			})
		case a.Substrate == "goroutine" && a.GOMAXPROCS == 1:
			out = append(out, noSwitchCheck(a, "runtime.Gosched at GOMAXPROCS=1", "yield"))
		}
	}
	return out
}

// yieldFindings reads how the cost per yield moves with K per series
// (published shape: falls from 1 to ~100 workers, then rises).
func yieldFindings(arms []result.Arm) []string {
	type key struct{ sub, variant string }
	series := map[key][]result.Arm{}
	var keys []key
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		k := key{a.Substrate, "gomaxprocs=" + a.Params["gomaxprocs"]}
		if a.Substrate == "thread" {
			if a.Placement != "same-cpu" {
				continue
			}
			k.variant = "same-cpu"
		}
		if _, ok := series[k]; !ok {
			keys = append(keys, k)
		}
		series[k] = append(series[k], a)
	}
	kOf := func(a result.Arm) int { n, _ := strconv.Atoi(a.Params["k"]); return n }
	var out []string
	for _, k := range keys {
		s := series[k]
		if len(s) < 2 {
			continue
		}
		sort.Slice(s, func(i, j int) bool { return kOf(s[i]) < kOf(s[j]) })
		best := s[0]
		for _, a := range s {
			if a.Median < best.Median {
				best = a
			}
		}
		line := fmt.Sprintf("%s %s: ", k.sub, k.variant)
		for i, a := range s {
			if i > 0 {
				line += ", "
			}
			line += fmt.Sprintf("K=%d %s", kOf(a), result.FormatNs(a.Median))
		}
		line += fmt.Sprintf(" per yield; cheapest at K=%d (published shape: falls from 1 to ~100 workers, then rises)", kOf(best))
		out = append(out, line)
	}
	for _, a := range arms {
		if a.Status == result.StatusOK && a.Substrate == "thread" && a.Params["k"] == "1" {
			out = append(out, fmt.Sprintf("syscall floor: a lone sched_yield costs %s and is not a switch; compare thread yields on one CPU above", result.FormatNs(a.Median)))
		}
	}
	return out
}

// yieldMetrics declares the figures yield arms add beside the median.
var yieldMetrics = []exp.Metric{
	{Name: "cpu-ns/yield", Unit: "ns", Better: exp.LowerIsBetter, CPUPerOp: true, Doc: "CPU time per yield, all workers together (the runner's cpu_ns_per_op: the process CPU clock for goroutines, schedstat for threads)"},
}

// yieldPyPlan is K asyncio tasks yielding with asyncio.sleep(0) (SPEC §5.9).
func yieldPyPlan(exp.Params) []pyArm {
	var out []pyArm
	for _, k := range []int{1, 10, 100, 1000, 10000} {
		out = append(out, pyArm{key: yieldPyKey(k), sub: "pytask", mech: "sleep0", op: "yield",
			bench: "yield.task", params: map[string]string{"k": strconv.Itoa(k)}, place: "unpinned", full: k == 10 || k == 1000})
	}
	return out
}

// yieldPyKey is an asyncio arm's key: yield/pytask/sleep0/k=K.
func yieldPyKey(k int) exp.ArmKey {
	return exp.Key("yield", exp.Seg("pytask"), exp.Seg("sleep0"), exp.KV("k", k))
}

// yieldPyRefs are SPEC §8's figures for asyncio yields.
var yieldPyRefs = pyRefs{GIL: []pyRef{
	{yieldPyKey(1), "1.61 µs per yield"},
	{yieldPyKey(10), "0.76 µs per yield"},
	{yieldPyKey(100), "0.67 µs per yield"},
	{yieldPyKey(1000), "0.67 µs per yield"},
	{yieldPyKey(10000), "1.78 µs per yield"},
}}

// yieldRefs are SPEC §8's published yields per task, beside the asyncio arms.
var yieldRefs = []exp.Reference{
	{Substrates: []string{"pytask"}, Param: "k", Value: "1", Ns: 1610, Text: "CPython 3.14: yield per task, 1 task 1.61 µs"},
	{Substrates: []string{"pytask"}, Param: "k", Value: "10", Ns: 760, Text: "CPython 3.14: yield per task, 10 tasks 0.76 µs"},
	{Substrates: []string{"pytask"}, Param: "k", Value: "100", Ns: 670, Text: "CPython 3.14: yield per task, 100 tasks 0.67 µs"},
	{Substrates: []string{"pytask"}, Param: "k", Value: "1000", Ns: 670, Text: "CPython 3.14: yield per task, 1 000 tasks 0.67 µs"},
	{Substrates: []string{"pytask"}, Param: "k", Value: "10000", Ns: 1780, Text: "CPython 3.14: yield per task, 10 000 tasks 1.78 µs"},
}
