package experiments

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// ring: N workers pass one token around a ring; op = one hop (SPEC §5.2).
// Worker 0 is the driver (the runner's goroutine, or a locked thread); the
// token carries the number of hops still to make, so a batch of b.N hops is
// b.N/N laps, the last one partial: the worker that receives 0 tells the
// driver over a separate "done" link (one uncounted handoff per batch).
func init() {
	exp.Register(&exp.Spec{
		Name:       "ring",
		Order:      20,
		References: ringRefs,
		Summary:    "N workers pass a token around a ring: how a handoff's cost grows with the number of workers",
		Op:         "hop",
		OpLabels:   []exp.OpLabel{{Label: "roundtrip", Has: "pingpong"}, {Label: "hop"}},
		Doc: `N workers (goroutines, locked OS threads, or processes) pass one token
around a ring; one op is one hop from a worker to the next. Worker 0 is the
driver, so N=2 is a ping-pong and a hop is half a round trip.
Substrates × mechanisms: goroutine×chan, thread×{chan, futex, pipe},
process×pipe. N: goroutines 2…10000 (100000 with --full), threads 2…1000
(10000 with --full, where the machine allows), processes 2…100 (200 with
--full); --workers replaces the list for every substrate (restrict the
substrates with --set ring.substrates=goroutine,thread). Placements:
unpinned, and every worker on one CPU (same-cpu). Thread rings run at
GOMAXPROCS N+1, a P per thread, so a woken thread never waits for Go's
sysmon to hand it one (that wait, not the OS handoff, would dominate).
Requests beyond threads-max, RLIMIT_NPROC, RLIMIT_NOFILE or memory are
refused before anything starts, naming the limit.
Percentiles are of the time of one lap divided by N (a lap's mean hop).
Reference arms ring/thread/M/pingpong/PLACEMENT are a two-thread ping-pong
(op = round trip) over the same mechanism, placement and GOMAXPROCS: the
check compares a 2-thread ring's hop with half their round trip.
CPython rings: pythread (threads over SimpleQueues, up to 10000) and pytask
(asyncio tasks over asyncio.Queues, up to 100000), N 2, 100, 1000 or
--workers, unpinned, and N=2 on one CPU.
` + cpythonDoc,
		Arms:     withCPython(ringArms, ringPyPlan),
		Derive:   nativeDerive(ringDerive),
		Checks:   cpythonChecks(ringChecks, nil),
		Findings: cpythonFindings(ringFindings, ringPyRefs.findings),
		Metrics:  append(append([]exp.Metric(nil), ringMetrics...), cpythonMetrics...),
	})
	exp.RegisterOption(ringSubstratesOpt)
	child.Register("ring-node", ringNodeChild)
}

// ringKinds are the substrate × mechanism pairs, in listing order.
var ringKinds = []struct{ sub, mech string }{
	{"goroutine", "chan"},
	{"thread", "chan"}, {"thread", "futex"}, {"thread", "pipe"},
	{"process", "pipe"},
}

// Default worker counts per substrate and suite.
var ringDefaultN = map[string][]int{
	"goroutine": {2, 10, 100, 1000, 10000},
	"thread":    {2, 10, 100, 1000},
	"process":   {2, 10, 100},
}
var ringFullExtraN = map[string][]int{"goroutine": {100000}, "thread": {10000}, "process": {200}}

// quickRing: one small and one larger N per substrate (the same N for
// goroutines and threads, so the growth check compares like with like), on
// one CPU: unpinned two-thread handoffs are bimodal on VMs, where waking an
// idle vCPU costs tens of µs and the kernel only sometimes co-locates them.
var quickRing = map[string]bool{
	"goroutine/chan/n=2/same-cpu": true, "goroutine/chan/n=100/same-cpu": true,
	"thread/futex/n=2/same-cpu": true, "thread/futex/n=100/same-cpu": true,
	"process/pipe/n=10/unpinned": true,
}

func ringArms(p exp.Params) ([]exp.Arm, error) {
	subs := ringSubstrates(p)
	host := p.Host
	if host == nil {
		host = sysinfo.Detect()
	}
	all := len(p.CPUs)
	var arms []exp.Arm
	for _, k := range ringKinds {
		if !subs[k.sub] {
			continue
		}
		ns := ringDefaultN[k.sub]
		explicit := p.Workers != nil
		if explicit {
			ns = p.Workers
		} else if p.Suite == exp.SuiteFull {
			ns = append(append([]int(nil), ns...), ringFullExtraN[k.sub]...)
		}
		for _, n := range ns {
			limitErr := RingLimit(k.sub, k.mech, n, host)
			if limitErr != nil && explicit {
				return nil, limitErr
			}
			for _, pl := range exp.Placements(p)[:2] {
				gmps := []int{ringGOMAXPROCS(k.sub, pl.Name, all, n)}
				if p.GOMAXPROCS != nil {
					gmps = p.GOMAXPROCS
				}
				for _, g := range gmps {
					key := fmt.Sprintf("%s/%s/n=%d/%s", k.sub, k.mech, n, pl.Name)
					name := "ring/" + key
					if p.GOMAXPROCS != nil {
						name += "/gomaxprocs=" + strconv.Itoa(g)
					}
					sub, m, n, pl := k.sub, k.mech, n, pl
					a := exp.Arm{
						Name: name, Substrate: sub, Mechanism: m,
						Params:     map[string]string{"n": strconv.Itoa(n), "placement": pl.Name},
						GOMAXPROCS: g, Placement: pl.Name, CPUs: pl.Process,
						Quick: quickRing[key] && p.GOMAXPROCS == nil,
						Open: func(ctx context.Context) (exp.Bench, error) {
							return OpenRing(ctx, sub, m, n)
						},
					}
					if limitErr != nil {
						a.Unsupported = limitErr.Error()
					}
					arms = append(arms, a)
					if k.sub == "thread" && n == 2 {
						arms = append(arms, ringRefArm(a, m, pl))
					}
				}
			}
		}
	}
	return arms, nil
}

// ringSubstratesOpt is --set ring.substrates.
var ringSubstratesOpt = exp.WordsOption("ring.substrates",
	"ring: substrates to run, comma-separated from goroutine, thread, process, pythread, pytask (default all)",
	"substrate", []string{"goroutine", "thread", "process", "pythread", "pytask"}, "goroutine, thread, process, pythread or pytask")

// ringSubstrates is --set ring.substrates, or every substrate.
func ringSubstrates(p exp.Params) map[string]bool {
	subs := map[string]bool{"goroutine": true, "thread": true, "process": true, "pythread": true, "pytask": true}
	given, ok := ringSubstratesOpt.Get(p)
	if !ok {
		return subs
	}
	want := map[string]bool{}
	for _, x := range given {
		want[x] = true
	}
	return want
}

// Limits on CPython ring sizes: beyond them an arm is listed as unsupported.
const (
	maxPyThreads = 10000
	maxPyTasks   = 100000
)

// ringPyPlan is CPython's rings: threads over SimpleQueues and asyncio
// tasks over asyncio.Queues (SPEC §5.9).
func ringPyPlan(p exp.Params) []pyArm {
	subs := ringSubstrates(p)
	var out []pyArm
	ns := []int{2, 100, 1000}
	if p.Workers != nil {
		ns = p.Workers
	}
	for _, sub := range []string{"pythread", "pytask"} {
		if !subs[sub] {
			continue
		}
		mech, bench, limit := "simplequeue", "ring.thread", maxPyThreads
		if sub == "pytask" {
			mech, bench, limit = "asyncio-queue", "ring.task", maxPyTasks
		}
		for _, n := range ns {
			a := pyArm{key: fmt.Sprintf("ring/%s/%s/n=%d", sub, mech, n), sub: sub, mech: mech, op: "hop",
				bench: bench, params: map[string]string{"n": strconv.Itoa(n)}, place: "unpinned",
				freeThreaded: ringPyRefs.FT[fmt.Sprintf("ring/%s/%s/n=%d", sub, mech, n)] != ""}
			switch {
			case n < 2:
				a.unsup = "a ring needs at least 2 workers"
			case n > limit:
				a.unsup = fmt.Sprintf("more than %d Python %s", limit, map[string]string{"pythread": "threads", "pytask": "tasks"}[sub])
			}
			out = append(out, a)
		}
		out = append(out, pyArm{key: fmt.Sprintf("ring/%s/%s/n=2/same-cpu", sub, mech), sub: sub, mech: mech, op: "hop",
			bench: bench, params: map[string]string{"n": "2"}, place: "same-cpu"})
	}
	return out
}

// ringPyRefs are SPEC §8's figures for the CPython rings.
var ringPyRefs = pyRefs{GIL: map[string]string{
	"ring/pythread/simplequeue/n=2":          "3.98 µs per hop",
	"ring/pythread/simplequeue/n=100":        "4.54 µs per hop",
	"ring/pythread/simplequeue/n=1000":       "7.65 µs per hop",
	"ring/pythread/simplequeue/n=2/same-cpu": "6.45 µs and 3.0 switches per hop",
	"ring/pytask/asyncio-queue/n=2":          "2.37 µs per hop",
	"ring/pytask/asyncio-queue/n=100":        "2.22 µs per hop",
	"ring/pytask/asyncio-queue/n=1000":       "3.07 µs per hop",
	"ring/pytask/asyncio-queue/n=2/same-cpu": "2.65 µs per hop",
}, FT: map[string]string{
	"ring/pythread/simplequeue/n=2":   "4.64 µs per hop (free-threaded)",
	"ring/pythread/simplequeue/n=100": "5.22 µs per hop (free-threaded)",
}}

// ringRefArm is a two-thread ping-pong over the same mechanism, placement
// and GOMAXPROCS as the 2-thread ring arm a, measured by the runner like
// any arm: the ring's check compares a hop with half its round trip. The
// reference waits in system-call sections (mech), the ring's threads
// through the runtime on every hop: a hop carries ~2–3% more, well inside
// the check's 0.67–1.5×.
func ringRefArm(a exp.Arm, m string, pl exp.Placement) exp.Arm {
	ref := a
	ref.Name = strings.Replace(a.Name, "/n=2/", "/pingpong/", 1)
	ref.Op = "round trip"
	ref.Params = map[string]string{"ref": "pingpong", "placement": pl.Name}
	ref.Open = func(ctx context.Context) (exp.Bench, error) {
		return openThreadPair(m, exp.Placement{Name: pl.Name})
	}
	return ref
}

// isRingRef tells the reference ping-pong arms from the rings.
func isRingRef(a result.Arm) bool { return a.Params["ref"] == "pingpong" }

// ringGOMAXPROCS: goroutines get every CPU of the placement. Locked threads
// get a P each (N+1): a thread woken from a futex or read must get a P back
// to run, and with fewer Ps than threads it waits for sysmon to take one
// from a thread still asleep in its syscall — up to milliseconds, a Go
// scheduler artifact rather than the OS handoff. Process rings need 2.
func ringGOMAXPROCS(sub, placement string, all, n int) int {
	switch sub {
	case "goroutine":
		if placement == "same-cpu" {
			return 1
		}
		return all
	case "thread":
		return max(all, 2, n+1)
	}
	return max(all, 2)
}

// RingLimit says whether a ring of n workers of substrate sub over mech fits
// this machine: threads-max and RLIMIT_NPROC for threads and processes,
// RLIMIT_NOFILE for pipes, available memory for all, and 100 000 goroutines.
// The error names the value and the limit.
func RingLimit(sub, m string, n int, h *sysinfo.Host) error {
	if n < ringMinWorkers {
		return fmt.Errorf("ring: --workers %d: a ring needs at least %d workers", n, ringMinWorkers)
	}
	return workerLimit("ring", sub, m, n, h)
}

// chanLink is a Go channel as a ring link. The channels are never closed:
// a ring of channels is stopped by a Stop token (see Ring.Close).
type chanLink struct{ c chan uint64 }

func (l chanLink) Send(v uint64) error { l.c <- v; return nil }
func (l chanLink) Recv() (uint64, error) {
	v, ok := <-l.c
	if !ok {
		return 0, mech.ErrStopped
	}
	return v, nil
}

// ringCount is one worker's count of tokens received, padded to its own
// cache line; only that worker writes it, others read it after Close.
type ringCount struct {
	hops int64
	_    [56]byte
}

// Ring is an opened ring arm. Counts are valid after Close.
type Ring struct {
	N         int // workers, the driver included
	sub, mech string

	// Links: in[i] is how worker i receives, out[i] how it sends; done[i]
	// is how worker i tells the driver the batch finished at it.
	in, out, done []mech.Endpoint
	doneRecv      mech.Endpoint

	chans    []chan uint64 // chan rings: the channels, closed by Close
	pairs    []*mech.Pair  // futex rings: one pair per link (A→B)
	donePair *mech.Pair
	fds      []int      // pipe rings: every raw fd we still hold (-1: handed on)
	files    []*os.File // process rings: fds wrapped for children; Close is idempotent

	driver  *mech.Thread   // thread and process rings: worker 0
	threads []*mech.Thread // thread rings: workers 1…N-1
	fins    []<-chan struct{}
	wg      sync.WaitGroup // goroutine rings: workers 1…N-1
	procs   []*child.Proc

	counts        []ringCount
	restoreMaxThr func()

	stop    atomic.Bool // set by Close; the driver checks it once a lap
	mu      sync.Mutex
	closed  bool
	running int
	once    sync.Once
	nodeErr error
}

// OpenRing builds a ring of n workers of substrate sub over mechanism m and
// starts every worker but the driver, which Run drives.
func OpenRing(ctx context.Context, sub, m string, n int) (*Ring, error) {
	if n < ringMinWorkers {
		return nil, fmt.Errorf("ring: %d workers: need at least %d", n, ringMinWorkers)
	}
	r := &Ring{N: n, sub: sub, mech: m, counts: make([]ringCount, n)}
	r.in, r.out, r.done = make([]mech.Endpoint, n), make([]mech.Endpoint, n), make([]mech.Endpoint, n)
	var err error
	switch {
	case m == "chan" && (sub == "goroutine" || sub == "thread"):
		r.buildChan()
	case m == "futex" && sub == "thread":
		err = r.buildFutex()
	case m == "pipe" && (sub == "thread" || sub == "process"):
		err = r.buildPipes(sub == "process" && runtime.GOMAXPROCS(0) >= 2)
	default:
		return nil, fmt.Errorf("ring: no %s×%s ring", sub, m)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	switch sub {
	case "goroutine":
		for i := 1; i < n; i++ {
			r.wg.Add(1)
			go func(i int) {
				defer r.wg.Done()
				r.node(i)
			}(i)
		}
	case "thread":
		r.restoreMaxThr = raiseMaxThreads(n)
		if r.driver, err = mech.StartThread(nil); err != nil {
			r.Close()
			return nil, fmt.Errorf("ring: start driver thread: %w", err)
		}
		for i := 1; i < n; i++ {
			if err := ctx.Err(); err != nil {
				r.Close()
				return nil, err
			}
			t, err := mech.StartThread(nil)
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("ring: start thread %d of %d: %w", i, n, err)
			}
			r.threads = append(r.threads, t)
			i := i
			fin, _ := t.Go(func() { r.node(i) }) // t is new: never stopped here
			r.fins = append(r.fins, fin)
		}
	case "process":
		if r.driver, err = mech.StartThread(nil); err != nil {
			r.Close()
			return nil, fmt.Errorf("ring: start driver thread: %w", err)
		}
		if err := r.startChildren(ctx); err != nil {
			r.Close()
			return nil, err
		}
		if err := r.prime(ctx); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// prime sends one token once around a process ring before timing starts:
// each child's start-up (an exec and a Go runtime, ~ms) is set-up, not the
// first op's cost.
func (r *Ring) prime(ctx context.Context) error {
	r.mu.Lock()
	r.running++ // Close waits for the lap like for a Run
	r.mu.Unlock()
	fin, err := r.driver.Go(func() {
		defer func() {
			r.mu.Lock()
			r.running--
			r.mu.Unlock()
		}()
		err := ringDrive(r.N, r.N, r.in[0], r.out[0], r.doneRecv, &r.counts[0].hops, nil, &r.stop)
		r.counts[0].hops = 0 // set-up: not a hop of any batch
		if err != nil {
			r.mu.Lock()
			if r.nodeErr == nil {
				r.nodeErr = err
			}
			r.mu.Unlock()
		}
	})
	if err != nil {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
		return err
	}
	select {
	case <-fin:
	case <-ctx.Done():
		r.stop.Store(true)
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return fmt.Errorf("ring: the first lap through %d child processes did not finish within 30s", r.N-1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nodeErr != nil {
		return fmt.Errorf("ring: first lap: %w", r.nodeErr)
	}
	return nil
}

func (r *Ring) buildChan() {
	r.chans = make([]chan uint64, r.N+1)
	for i := range r.chans {
		r.chans[i] = make(chan uint64)
	}
	done := chanLink{r.chans[r.N]}
	for i := 0; i < r.N; i++ {
		r.in[i] = chanLink{r.chans[i]}
		r.out[i] = chanLink{r.chans[(i+1)%r.N]}
		r.done[i] = done
	}
	r.doneRecv = done
}

func (r *Ring) buildFutex() error {
	r.pairs = make([]*mech.Pair, r.N)
	for i := range r.pairs {
		p, err := mech.NewPair("futex")
		if err != nil {
			return err
		}
		r.pairs[i] = p // link i: worker i → worker i+1
	}
	dp, err := mech.NewPair("futex")
	if err != nil {
		return err
	}
	r.donePair = dp
	// A futex carries no value: each link gets a slot the sender fills
	// before the wake and the receiver reads after it.
	slots := make([]uint64, r.N+1)
	for i := 0; i < r.N; i++ {
		r.out[i] = slotLink{r.pairs[i].A, &slots[i]}
		r.in[(i+1)%r.N] = slotLink{r.pairs[i].B, &slots[i]}
		// dp.A's Send only touches the shared words: safe from any worker.
		r.done[i] = slotLink{dp.A, &slots[r.N]}
	}
	r.doneRecv = slotLink{dp.B, &slots[r.N]}
	return nil
}

// slotLink adds a value to a futex link: Send stores it in the link's slot
// before waking the receiver, Recv loads it after waking (the futex word's
// atomic update orders the two).
type slotLink struct {
	ep   mech.Endpoint
	slot *uint64
}

func (l slotLink) Send(v uint64) error {
	atomic.StoreUint64(l.slot, v)
	return l.ep.Send(v)
}

func (l slotLink) Recv() (uint64, error) {
	if _, err := l.ep.Recv(); err != nil {
		return 0, err
	}
	return atomic.LoadUint64(l.slot), nil
}

// buildPipes makes one pipe per link plus a done pipe; pipes[i] carries
// worker i → worker i+1. Each worker gets endpoints of its own.
//
// rawDriver makes the driver's reads raw system calls (mech.NewRawFDEnd):
// in a process ring its wait lasts a lap of child processes, and through
// the Go runtime such waits cost ~2 µs a hop (n=10 same-cpu 14.7–15.3 µs
// against 13.0 raw; unpinned 16.9–17.4 against 14.7–14.9, a plain Python
// ring 14.2–14.8). Its writers are other processes and Close kills them
// (EOF), so nothing can leave it blocked; the arm's second P (GOMAXPROCS
// ≥ 2) is where Close runs meanwhile.
func (r *Ring) buildPipes(rawDriver bool) error {
	rd := make([]int, r.N+1)
	wr := make([]int, r.N+1)
	for i := 0; i <= r.N; i++ {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return fmt.Errorf("ring: pipe %d of %d: %w", i+1, r.N+1, err)
		}
		rd[i], wr[i] = p[0], p[1]
		r.fds = append(r.fds, p[0], p[1])
	}
	recv := mech.NewFDEnd
	if rawDriver {
		recv = mech.NewRawFDEnd
	}
	for i := 0; i < r.N; i++ {
		if i == 0 {
			r.in[i] = recv(rd[r.N-1], -1)
		} else {
			r.in[i] = mech.NewFDEnd(rd[i-1], -1)
		}
		r.out[i] = mech.NewFDEnd(-1, wr[i])
		r.done[i] = mech.NewFDEnd(-1, wr[r.N])
	}
	r.doneRecv = recv(rd[r.N], -1)
	return nil
}

// startChildren starts workers 1…N-1 as ctxlab child processes: fd 3 is the
// pipe from the previous worker, fd 4 the pipe to the next, fd 5 the done
// pipe. Afterwards the parent keeps only the driver's ends, so a child's
// death shows as EOF.
func (r *Ring) startChildren(ctx context.Context) error {
	n := r.N
	// r.fds is [rd0, wr0, rd1, wr1, …, rdN, wrN]. Each fd handed to a child
	// is wrapped in one *os.File (and dropped from r.fds) so it is closed
	// exactly once, by us, as soon as the child has its copy.
	wrap := func(idx int, name string) *os.File {
		f := os.NewFile(uintptr(r.fds[idx]), name)
		r.fds[idx] = -1
		r.files = append(r.files, f)
		return f
	}
	doneW := wrap(2*n+1, "ring-done")
	for i := 1; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		in, out := wrap(2*(i-1), "ring-in"), wrap(2*i+1, "ring-out")
		p, err := child.Start(ctx, child.Options{Role: "ring-node", Files: []*os.File{in, out, doneW}, Env: rawReaderEnv})
		in.Close()
		out.Close()
		if err != nil {
			return fmt.Errorf("ring: start process %d of %d: %w", i, n, err)
		}
		r.procs = append(r.procs, p)
	}
	doneW.Close()
	return nil
}

// node is worker i's loop (i ≥ 1): forward the token with one hop fewer to
// go, or tell the driver when none is left.
func (r *Ring) node(i int) {
	// Channels carry the Stop token on around the ring; other links are
	// each stopped by Close.
	forwardStop := r.chans != nil && i < r.N-1
	err := ringForward(r.in[i], r.out[i], r.done[i], &r.counts[i].hops, forwardStop)
	if err != nil && !errors.Is(err, mech.ErrStopped) {
		r.mu.Lock()
		if r.nodeErr == nil {
			r.nodeErr = fmt.Errorf("ring worker %d: %w", i, err)
		}
		r.mu.Unlock()
	}
}

// ringForward is a non-driver worker: it runs in goroutines, threads and
// child processes alike.
func ringForward(in, out, done mech.Endpoint, hops *int64, forwardStop bool) error {
	for {
		v, err := in.Recv()
		if err != nil {
			return err
		}
		if v == mech.Stop {
			if forwardStop {
				return out.Send(mech.Stop)
			}
			return nil
		}
		*hops++
		if v == 0 {
			err = done.Send(0)
		} else {
			err = out.Send(v - 1)
		}
		if err != nil {
			return err
		}
	}
}

// Run makes b.N hops, the driver being worker 0.
func (r *Ring) Run(b *measure.B) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return mech.ErrStopped
	}
	r.running++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	if r.driver == nil {
		return r.drive(b)
	}
	var err error
	r.driver.Do(func() {
		b.ResetTimer() // the batch starts when the driver thread has it
		err = r.drive(b)
	})
	return err
}

func (r *Ring) drive(b *measure.B) error {
	return ringDrive(r.N, b.N, r.in[0], r.out[0], r.doneRecv, &r.counts[0].hops, b.S, &r.stop)
}

// ringDrive is worker 0: it starts a token good for hops hops and takes it
// back after each full lap, checking that the lap made exactly n hops.
// Per-lap times ÷ n go to the sampler, about once every s.Every() hops.
func ringDrive(n, hops int, in, out, done mech.Endpoint, count *int64, s *measure.Sampler, stop *atomic.Bool) error {
	if hops <= 0 {
		return nil
	}
	every := s.Every() // 0 without a sampler
	made, sampleAt := 0, 0
	var t0 int64
	left := uint64(hops - 1) // hops still to make after this send
	for {
		if every > 0 && made >= sampleAt && left >= uint64(n-1) {
			t0 = s.Stamp() // time this (full) lap
			sampleAt = made + every
		}
		if err := out.Send(left); err != nil {
			return err
		}
		if left < uint64(n-1) {
			// The token runs out at worker left+1, before it is back here.
			v, err := done.Recv()
			if err != nil {
				return err
			}
			if v == mech.Stop {
				return mech.ErrStopped
			}
			return nil
		}
		v, err := in.Recv()
		if err != nil {
			return err
		}
		if t0 != 0 {
			s.StopPer(t0, n)
			t0 = 0
		}
		if v == mech.Stop || stop.Load() {
			return mech.ErrStopped // Close was called: stop with the token here
		}
		*count++
		made += n
		if want := left - uint64(n-1); v != want {
			return fmt.Errorf("ring: the token came back as %d after a lap, want %d: a hop was lost or doubled", v, want)
		}
		if v == 0 {
			return nil
		}
		left = v - 1
	}
}

// Children are the process ring's workers 1…N-1.
func (r *Ring) Children() []int {
	var out []int
	for _, p := range r.procs {
		out = append(out, p.PID())
	}
	return out
}

// Participants: a goroutine ring is the whole process (its workers run on
// the runtime's threads); a thread ring is its driver and worker threads;
// a process ring its driver thread and child processes.
func (r *Ring) Participants() exp.Participants {
	if r.sub == "goroutine" {
		return exp.WholeProcess()
	}
	return exp.Participants{TIDs: r.TIDs(), PIDs: r.Children()}
}

// TIDs are the OS threads of a thread or process ring's driver and (for
// thread rings) workers, so tests can check none outlives Close.
func (r *Ring) TIDs() []int {
	var out []int
	if r.driver != nil {
		out = append(out, r.driver.TID)
	}
	for _, t := range r.threads {
		out = append(out, t.TID)
	}
	return out
}

// Hops returns each worker's count of tokens received (valid after Close).
func (r *Ring) Hops() []int64 {
	out := make([]int64, r.N)
	for i := range r.counts {
		out[i] = r.counts[i].hops
	}
	return out
}

// Close stops every worker and waits for it, and is safe from another
// goroutine while Run is stuck, and idempotent. Futex links are stopped, a
// Stop is written into every pipe, child processes are killed: those
// unblock any worker at once. Channels are never closed under a sender
// (that would race): the driver sees the stop flag after its current lap
// and returns, then a Stop token goes once around the idle ring.
func (r *Ring) Close() error {
	var closeErr error
	r.once.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		r.stop.Store(true)
		for _, p := range r.procs {
			p := p
			r.wg.Add(1)
			go func() { defer r.wg.Done(); p.Kill() }()
		}
		switch {
		case r.pairs != nil:
			for _, p := range r.pairs {
				if p != nil {
					p.Stop()
				}
			}
			if r.donePair != nil {
				r.donePair.Stop()
			}
		case r.fds != nil && r.procs == nil:
			var s [8]byte
			binary.LittleEndian.PutUint64(s[:], mech.Stop)
			for i := 1; i < len(r.fds); i += 2 {
				unix.Write(r.fds[i], s[:])
			}
		}
		// The driver returns within a lap (or at once, its links stopped);
		// wait for it before its fds may be closed and their numbers reused.
		if !r.waitDriver(5 * time.Second) {
			closeErr = fmt.Errorf("ring: the driver did not stop within 5s; %d workers abandoned", r.N-1)
			return
		}
		if r.chans != nil && r.N > 1 {
			select {
			case r.chans[1] <- mech.Stop:
			case <-time.After(5 * time.Second):
				closeErr = fmt.Errorf("ring: worker 1 did not take the stop token within 5s; %d workers abandoned", r.N-1)
				return
			}
		}
		r.wg.Wait()
		for _, f := range r.fins {
			<-f
		}
		for _, t := range r.threads {
			t.Stop()
		}
		if r.driver != nil {
			r.driver.Stop()
		}
		for _, fd := range r.fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		for _, f := range r.files {
			f.Close()
		}
		if r.restoreMaxThr != nil {
			r.restoreMaxThr()
		}
	})
	if closeErr != nil {
		return closeErr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodeErr
}

// waitDriver waits until no Run is in progress, up to d.
func (r *Ring) waitDriver(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		r.mu.Lock()
		running := r.running
		r.mu.Unlock()
		if running == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// ringNodeChild is a process ring's worker: fd 3 from the previous worker,
// fd 4 to the next, fd 5 to the driver when the batch ends here.
func ringNodeChild(args []string, files []*os.File) int {
	if len(files) < 3 {
		fmt.Fprintf(os.Stderr, "ring-node child: want fds 3, 4, 5; got %d\n", len(files))
		return 2
	}
	runtime.LockOSThread()
	in := mech.NewRawFDEnd(int(files[0].Fd()), -1)
	out := mech.NewFDEnd(-1, int(files[1].Fd()))
	done := mech.NewFDEnd(-1, int(files[2].Fd()))
	var hops int64
	if err := ringForward(in, out, done, &hops, false); err != nil && !errors.Is(err, mech.ErrStopped) {
		fmt.Fprintln(os.Stderr, "ring-node child:", err)
		return 1
	}
	return 0
}

// Analyze says what the percentiles are.
func (r *Ring) Analyze(rec *exp.Record, a *result.Arm) {
	a.Notes = append(a.Notes, fmt.Sprintf("percentiles are one lap's time ÷ %d (the mean hop of a lap)", r.N))
}

// Bounds of "about half a round trip" for the 2-worker ring's hop.
const (
	hopHalfRTLow  = 0.67
	hopHalfRTHigh = 1.5
)

type ringKey struct{ sub, mech, placement, gmp string }

// ringSeries groups the finished arms by substrate, mechanism, placement
// (and --gomaxprocs value), each sorted by N.
func ringSeries(arms []result.Arm) (map[ringKey][]result.Arm, []ringKey) {
	series := map[ringKey][]result.Arm{}
	var keys []ringKey
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Median <= 0 || isRingRef(a) {
			continue
		}
		k := ringKey{a.Substrate, a.Mechanism, a.Placement, ""}
		if strings.Contains(a.Name, "/gomaxprocs=") {
			k.gmp = strconv.Itoa(a.GOMAXPROCS)
		}
		if _, ok := series[k]; !ok {
			keys = append(keys, k)
		}
		series[k] = append(series[k], a)
	}
	for _, s := range series {
		sort.Slice(s, func(i, j int) bool { return ringN(s[i]) < ringN(s[j]) })
	}
	return series, keys
}

func ringN(a result.Arm) int {
	n, _ := strconv.Atoi(a.Params["n"])
	return n
}

// growth is the hop cost at N=hi over that at N=lo, if both were measured.
func growth(s []result.Arm, lo, hi int) (float64, result.Arm, result.Arm, bool) {
	var a, b result.Arm
	var okA, okB bool
	for _, x := range s {
		if ringN(x) == lo {
			a, okA = x, true
		}
		if ringN(x) == hi {
			b, okB = x, true
		}
	}
	if !okA || !okB || a.Median <= 0 {
		return 0, a, b, false
	}
	return b.Median / a.Median, a, b, true
}

// ringDerive adds to each 2-thread ring arm its hop over half the round
// trip of the reference ping-pong arm with the same mechanism and placement.
func ringDerive(arms []result.Arm) {
	refs := map[string]result.Arm{}
	for _, a := range arms {
		if isRingRef(a) && a.Status == result.StatusOK && a.Median > 0 {
			refs[strings.Replace(a.Name, "/pingpong/", "/n=2/", 1)] = a
		}
	}
	for i := range arms {
		ref, ok := refs[arms[i].Name]
		if !ok || arms[i].Status != result.StatusOK {
			continue
		}
		arms[i].SetMetric("pingpong-rt-ns", ref.Median)
		arms[i].SetMetric("half-rt-ratio", arms[i].Median/(ref.Median/2))
	}
}

func ringChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for _, a := range arms {
		if r, ok := a.Metrics["half-rt-ratio"]; ok {
			ref := strings.Replace(a.Name, "/n=2/", "/pingpong/", 1)
			out = append(out, result.Check{
				Name:  fmt.Sprintf("a 2-thread ring's hop is about half a ping-pong round trip (%.2f–%.2f× of RT/2)", hopHalfRTLow, hopHalfRTHigh),
				Holds: r >= hopHalfRTLow && r <= hopHalfRTHigh,
				Detail: fmt.Sprintf("%s: hop %s, ping-pong RT %s in %s (RT/2 = %s): %.2f×",
					a.Name, result.FormatNs(a.Median), result.FormatNs(a.Metrics["pingpong-rt-ns"]), ref, result.FormatNs(a.Metrics["pingpong-rt-ns"]/2), r),
				Arms: []string{a.Name},
			})
		}
	}
	// The published shape: thread handoffs grow much faster with N than
	// goroutine handoffs (threads +92%, tasks +30% from 2 to 1000 workers).
	series, keys := ringSeries(arms)
	for _, tk := range keys {
		if tk.sub != "thread" {
			continue
		}
		gk := ringKey{"goroutine", "chan", tk.placement, tk.gmp}
		gs, ok := series[gk]
		if !ok {
			continue
		}
		ts := series[tk]
		lo, hi := commonRange(ts, gs)
		if lo == hi {
			continue
		}
		tg, ta, tb, ok1 := growth(ts, lo, hi)
		gg, ga, gb, ok2 := growth(gs, lo, hi)
		if !ok1 || !ok2 {
			continue
		}
		out = append(out, result.Check{
			Name:  "a thread ring's hop cost grows faster with N than a goroutine ring's (published: threads +92%, tasks +30% from 2 to 1000)",
			Holds: tg > gg,
			Detail: fmt.Sprintf("%s, N %d→%d: thread %s %s→%s (%+.0f%%), goroutine chan %s→%s (%+.0f%%)",
				tk.placement, lo, hi, tk.mech, result.FormatNs(ta.Median), result.FormatNs(tb.Median), 100*(tg-1),
				result.FormatNs(ga.Median), result.FormatNs(gb.Median), 100*(gg-1)),
			Arms: []string{ta.Name, tb.Name, ga.Name, gb.Name},
		})
	}
	return out
}

// commonRange is the smallest and largest N both series measured.
func commonRange(a, b []result.Arm) (lo, hi int) {
	in := map[int]bool{}
	for _, x := range a {
		in[ringN(x)] = true
	}
	lo, hi = -1, -1
	for _, x := range b {
		n := ringN(x)
		if !in[n] {
			continue
		}
		if lo < 0 || n < lo {
			lo = n
		}
		if n > hi {
			hi = n
		}
	}
	return lo, hi
}

func ringFindings(arms []result.Arm) []string {
	var out []string
	series, keys := ringSeries(arms)
	for _, k := range keys {
		s := series[k]
		if len(s) < 2 {
			continue
		}
		a, b := s[0], s[len(s)-1]
		g := b.Median / a.Median
		sw := ""
		if a.Switches != nil && b.Switches != nil {
			sw = fmt.Sprintf("; OS switches per hop %.2f → %.2f", a.Switches.Total(), b.Switches.Total())
		}
		label := fmt.Sprintf("%s/%s %s", k.sub, k.mech, k.placement)
		if k.gmp != "" {
			label += " gomaxprocs=" + k.gmp
		}
		out = append(out, fmt.Sprintf("growth: %s hop %s at N=%d → %s at N=%d (%.2f×, %+.0f%%)%s",
			label, result.FormatNs(a.Median), ringN(a), result.FormatNs(b.Median), ringN(b), g, 100*(g-1), sw))
	}
	return out
}

// ringMetrics declares the figures ring arms add beside the median.
var ringMetrics = []exp.Metric{
	{Name: "pingpong-rt-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the round trip of the reference arm ring/thread/M/pingpong/P (same mechanism, placement and GOMAXPROCS)"},
	{Name: "half-rt-ratio", Unit: "ratio", Better: exp.NotRanked, Doc: "the hop as a multiple of half that round trip (a 2-worker ring's hop is half a round trip)"},
}

// ringRefs are SPEC §8's published ring hops, beside the CPython arms.
var ringRefs = []exp.Reference{
	{Substrates: []string{"pythread"}, Param: "n", Value: "2", Ns: 3980, Text: "CPython 3.14: ring per hop, threads, 2 workers 3.98 µs (free-threaded 4.64 µs)"},
	{Substrates: []string{"pythread"}, Param: "n", Value: "100", Ns: 4540, Text: "CPython 3.14: ring per hop, threads, 100 workers 4.54 µs (free-threaded 5.22 µs)"},
	{Substrates: []string{"pythread"}, Param: "n", Value: "1000", Ns: 7650, Text: "CPython 3.14: ring per hop, threads, 1000 workers 7.65 µs"},
	{Substrates: []string{"pytask"}, Param: "n", Value: "2", Ns: 2370, Text: "CPython 3.14: ring per hop, asyncio tasks, 2 workers 2.37 µs"},
	{Substrates: []string{"pytask"}, Param: "n", Value: "100", Ns: 2220, Text: "CPython 3.14: ring per hop, asyncio tasks, 100 workers 2.22 µs"},
	{Substrates: []string{"pytask"}, Param: "n", Value: "1000", Ns: 3070, Text: "CPython 3.14: ring per hop, asyncio tasks, 1000 workers 3.07 µs"},
	{Substrates: []string{"pythread", "pytask"}, Match: []string{"same-cpu", "pinned"}, Ns: 6450, Text: "CPython 3.14: two threads pinned to one core 6.45 µs and 3.0 switches per hop (tasks 2.65 µs)"},
}
