package experiments

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// cachecost: the indirect cost of switching (SPEC §5.8) — after other
// workers ran, a thread's caches, TLB and predictors are cold and the same
// work runs slower. No switch counter shows it; wall and on-CPU time do.
func init() {
	exp.Register(&exp.Spec{
		Name:         "cachecost",
		Order:        90,
		References:   cachecostRefs,
		Verdict:      cachecostVerdict,
		IndirectCost: cachecostCurve,
		Summary:      "the indirect cost of switching: cold caches after other workers ran (sweep, per-switch, slice)",
		Op:           "element visited",
		Doc: `sweep: T locked threads each follow their own W-byte working set (one
4-byte element per load, sequential or a shuffled cycle of dependent loads),
the same total work at T = cores and at T ≫ cores (16× by default), with
GOMAXPROCS > T so the kernel multiplexes them; a variant at GOMAXPROCS =
cores lets the Go runtime do it instead. One op is one element visited by
any worker: wall ns per element; per-worker on-CPU time (CLOCK_THREAD_CPUTIME_ID)
and run-queue wait (schedstat) per element separate "waited for a CPU" from
"ran slower on a CPU" (the indirect cost).
per-switch: two threads pinned to one CPU ping-pong over a futex, each
following its whole W-byte array (random) between handoffs; indirect cost
per switch = (round trip at W − two warm traversals alone − round trip at
W=0) / 2, as a curve over W.
slice: a worker doing fixed work (256 KiB random) that hands the CPU to a
partner with its own 4 MiB working set every ~50 µs vs every ~4 ms of its
work; reports its throughput (on-CPU ns per element) in both cases.
Counters (instructions, cycles, LLC/dTLB misses) are opened for every arm
and shown side by side where the machine has them.`,
		Arms:     cachecostArms,
		Checks:   cachecostChecks,
		Findings: cachecostFindings,
		Metrics:  cachecostMetrics,
	})
	exp.RegisterOption("cachecost.w", "sweep working-set sizes per worker, e.g. 16KiB,2MiB,32MiB (4KiB..1GiB; default 16KiB,256KiB,2MiB,8MiB,32MiB,128MiB)")
	exp.RegisterOption("cachecost.t", "sweep: the many-workers count T ≫ cores (cores+1..4096; default 16× the run's CPUs)")
	exp.RegisterOption("cachecost.pattern", "sweep access patterns: seq, random or seq,random (default both)")
}

// Sizes and defaults of the cachecost arms.
const (
	minSweepW   = 4 * result.KiB
	maxSweepW   = result.GiB
	maxSweepT   = 4096
	manyFactor  = 16 // T ≫ cores: 16× cores by default
	sliceXBytes = 256 * result.KiB
	sliceYBytes = 4 * result.MiB
	// memShare is the part of MemAvailable a sweep may fill.
	memShare = 0.75
)

var (
	defaultSweepW = []int64{16 * result.KiB, 256 * result.KiB, 2 * result.MiB, 8 * result.MiB, 32 * result.MiB, 128 * result.MiB}
	quickSweepW   = []int64{256 * result.KiB, 8 * result.MiB}
	// gomaxprocs=cores variants run at these sizes (every size with --full).
	runtimeMuxW    = []int64{256 * result.KiB, 32 * result.MiB}
	perSwitchW     = []int64{0, 16 * result.KiB, 256 * result.KiB, 1 * result.MiB, 4 * result.MiB}
	perSwitchWFull = []int64{0, 16 * result.KiB, 64 * result.KiB, 256 * result.KiB, 1 * result.MiB, 4 * result.MiB, 16 * result.MiB}
	sliceEvery     = []struct {
		name string
		ns   int64
	}{{"50µs", 50_000}, {"4ms", 4_000_000}}
)

func cachecostArms(p exp.Params) ([]exp.Arm, error) {
	cores := len(p.CPUs)
	ws, wGiven := defaultSweepW, false
	if p.Suite == exp.SuiteQuick {
		ws = quickSweepW
	}
	if s, ok := p.Extra["cachecost.w"]; ok {
		var err error
		if ws, err = parseSizes(s); err != nil {
			return nil, err
		}
		wGiven = true
	}
	many, tGiven := manyFactor*cores, false
	if s, ok := p.Extra["cachecost.t"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n <= cores || n > maxSweepT {
			return nil, fmt.Errorf("--set cachecost.t=%s: want a whole number of workers from %d (more than the run's %d CPUs) to %d", s, cores+1, cores, maxSweepT)
		}
		many, tGiven = n, true
	}
	if h := p.Host; h != nil {
		if lim := h.ThreadsMax / 2; lim > 0 && int64(many) > lim {
			return nil, fmt.Errorf("cachecost sweep: T=%d workers is more than half of threads-max (%d); use --set cachecost.t=%d or fewer", many, h.ThreadsMax, lim)
		}
		if lim := h.NprocLimit / 2; lim > 0 && int64(many) > lim {
			return nil, fmt.Errorf("cachecost sweep: T=%d workers is more than half of RLIMIT_NPROC (%d); use --set cachecost.t=%d or fewer", many, h.NprocLimit, lim)
		}
	}
	patterns := []string{"seq", "random"}
	if p.Suite == exp.SuiteQuick {
		patterns = []string{"seq"}
	}
	if s, ok := p.Extra["cachecost.pattern"]; ok {
		patterns = nil
		for _, x := range strings.Split(s, ",") {
			if x != "seq" && x != "random" {
				return nil, fmt.Errorf("--set cachecost.pattern=%s: %q is not a pattern; want seq, random or seq,random", s, x)
			}
			patterns = append(patterns, x)
		}
	}
	var memAvail int64
	if p.Host != nil {
		memAvail = p.Host.MemAvailableB
	}
	// A sweep whose working sets cannot fit is refused before anything
	// starts: sizes the user chose are a usage error, default sizes are
	// listed as unsupported with the same reason.
	fits := func(w int64, t int) string {
		need := w * int64(t+1) // T sets plus the cycle they are copied from
		if memAvail <= 0 || float64(need) <= memShare*float64(memAvail) {
			return ""
		}
		return fmt.Sprintf("W=%s × T=%d workers needs %s of working sets; %.0f%% of MemAvailable is %s: use a smaller W (--set cachecost.w=%s) or fewer workers (--set cachecost.t=…)",
			result.SizeName(w), t, result.FormatBytes(float64(need)), 100*memShare, result.FormatBytes(memShare*float64(memAvail)), result.SizeName(largestFitting(memAvail, t)))
	}
	for _, w := range ws {
		if why := fits(w, many); why != "" && (wGiven || tGiven) {
			return nil, errors.New("cachecost sweep: " + why)
		}
	}

	unp := exp.Unpinned(p)
	var arms []exp.Arm
	for _, pat := range patterns {
		for _, w := range ws {
			type variant struct {
				t, gmp int
				suffix string
			}
			vs := []variant{{cores, cores + 1, ""}, {many, many + 1, ""}}
			if p.Suite == exp.SuiteFull || containsSize(runtimeMuxW, w) && p.Suite != exp.SuiteQuick {
				vs = append(vs, variant{many, cores, "/gomaxprocs=" + strconv.Itoa(cores)})
			}
			for _, v := range vs {
				w, v, pat := w, v, pat
				mux := "kernel"
				if v.suffix != "" {
					mux = "go-runtime"
				}
				arms = append(arms, exp.Arm{
					Name:      fmt.Sprintf("cachecost/sweep/%s/W=%s/T=%d%s", pat, result.SizeName(w), v.t, v.suffix),
					Substrate: "thread", Mechanism: "preemption", Unit: "ns/element",
					Params: map[string]string{"mode": "sweep", "pattern": pat, "W": result.SizeName(w), "W_bytes": strconv.FormatInt(w, 10),
						"T": strconv.Itoa(v.t), "cores": strconv.Itoa(cores), "multiplexer": mux,
						// the report's side-by-side block pairs arms with the same key
						"compare": fmt.Sprintf("sweep %s W=%s", pat, result.SizeName(w))},
					GOMAXPROCS: v.gmp, Placement: unp.Name, CPUs: unp.Process,
					Quick:       p.Suite == exp.SuiteQuick && v.suffix == "",
					Reps:        quickReps(p),
					Unsupported: fits(w, v.t),
					Counters:    true,
					Open: func(ctx context.Context) (exp.Bench, error) {
						return openSweep(ctx, v.t, w, pat == "random")
					},
				})
			}
		}
	}
	if p.Suite == exp.SuiteQuick {
		return arms, nil
	}
	same := exp.Placements(p)[1]
	psw := perSwitchW
	if p.Suite == exp.SuiteFull {
		psw = perSwitchWFull
	}
	for _, w := range psw {
		w := w
		arms = append(arms, exp.Arm{
			Name:      "cachecost/per-switch/pingpong/W=" + result.SizeName(w),
			Substrate: "thread", Mechanism: "futex", Op: "round trip (2 switches, each side follows its whole array)",
			Params:     map[string]string{"mode": "per-switch", "W": result.SizeName(w), "W_bytes": strconv.FormatInt(w, 10), "pattern": "random"},
			GOMAXPROCS: 3, Placement: same.Name, CPUs: same.Process, Counters: true,
			Open: func(ctx context.Context) (exp.Bench, error) { return openPairBench(same.A, w, w, 0) },
		})
		if w == 0 {
			continue
		}
		arms = append(arms, exp.Arm{
			Name:      "cachecost/per-switch/solo/W=" + result.SizeName(w),
			Substrate: "thread", Mechanism: "none", Op: "two traversals of one warm array, no switch",
			Params:     map[string]string{"mode": "per-switch-solo", "W": result.SizeName(w), "W_bytes": strconv.FormatInt(w, 10), "pattern": "random"},
			GOMAXPROCS: 3, Placement: same.Name, CPUs: same.Process, Counters: true,
			Open: func(ctx context.Context) (exp.Bench, error) { return openSolo(same.A, w) },
		})
	}
	for _, e := range sliceEvery {
		e := e
		arms = append(arms, exp.Arm{
			Name:      "cachecost/slice/block-every=" + e.name,
			Substrate: "thread", Mechanism: "futex", Unit: "ns/element",
			Op: "element of the blocking worker's fixed work (wall includes the partner's turns)",
			Params: map[string]string{"mode": "slice", "block_every": e.name, "block_every_ns": strconv.FormatInt(e.ns, 10),
				"W_worker": result.SizeName(sliceXBytes), "W_partner": result.SizeName(sliceYBytes)},
			GOMAXPROCS: 3, Placement: same.Name, CPUs: same.Process, Counters: true,
			Open: func(ctx context.Context) (exp.Bench, error) {
				return openPairBench(same.A, sliceXBytes, sliceYBytes, e.ns)
			},
		})
	}
	return arms, nil
}

// quickReps: the quick sweep's repetitions are short (60 ms), so take 5
// of them rather than 3 to see through a shared machine's noise.
func quickReps(p exp.Params) int {
	if p.Suite == exp.SuiteQuick {
		return 5
	}
	return 0
}

// largestFitting is the largest power-of-two W whose T sets fit the memory share.
func largestFitting(memAvail int64, t int) int64 {
	w := int64(minSweepW)
	for w*2*int64(t+1) <= int64(memShare*float64(memAvail)) && w*2 <= maxSweepW {
		w *= 2
	}
	return w
}

func containsSize(xs []int64, x int64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// parseSizes parses "16KiB,2MiB,512" (KiB/K, MiB/M, GiB/G, or bytes).
func parseSizes(s string) ([]int64, error) {
	if n := strings.Count(s, ",") + 1; n > maxSweepSizes {
		return nil, fmt.Errorf("--set cachecost.w=%s: %d sizes; at most %d", s, n, maxSweepSizes)
	}
	var out []int64
	for _, part := range strings.Split(s, ",") {
		w, err := result.ParseSize(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--set cachecost.w=%s: %v", s, err)
		}
		if w < minSweepW || w > maxSweepW {
			return nil, fmt.Errorf("--set cachecost.w=%s: %s is out of range; want %s..%s", s, part, result.SizeName(minSweepW), result.SizeName(maxSweepW))
		}
		out = append(out, w)
	}
	return out, nil
}

// maxSweepSizes bounds cachecost.w: each size is a set of arms.
const maxSweepSizes = 32

// ---- sweep ----

// sweepWorker is one locked thread with its own working set. Its on-CPU
// time and run-queue wait come from the runner's probes (it is a declared
// participant), over exactly the timed repetitions.
type sweepWorker struct {
	next []uint32
	pos  uint32
	tid  int
	work chan int
	exit chan struct{}
}

type sweep struct {
	workers []*sweepWorker
	done    chan struct{}
	stop    chan struct{}
	stopped atomic.Bool
	once    sync.Once
}

// chaseUntil is chase in slices of 64 Ki elements that gives up once
// stopped is set, so Close never waits on a long batch.
func chaseUntil(next []uint32, pos uint32, steps int, stopped *atomic.Bool) uint32 {
	const slice = 1 << 16
	for steps > 0 && !stopped.Load() {
		c := min(steps, slice)
		pos = chase(next, pos, c)
		steps -= c
	}
	return pos
}

func openSweep(ctx context.Context, t int, w int64, random bool) (exp.Bench, error) {
	n := int(w / elemBytes)
	cycle := chaseCycle(n, random, 0x9e3779b97f4a7c15)
	s := &sweep{done: make(chan struct{}, t), stop: make(chan struct{})}
	for i := 0; i < t; i++ {
		if ctx.Err() != nil {
			s.Close()
			return nil, ctx.Err()
		}
		wk := &sweepWorker{next: make([]uint32, n), work: make(chan int), exit: make(chan struct{})}
		copy(wk.next, cycle) // touches every page now, outside the clock
		ready := make(chan struct{})
		go wk.loop(s, ready)
		<-ready
		s.workers = append(s.workers, wk)
	}
	return s, nil
}

func (wk *sweepWorker) loop(s *sweep, ready chan<- struct{}) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	defer close(wk.exit)
	wk.tid = unix.Gettid()
	close(ready)
	for {
		select {
		case steps := <-wk.work:
			wk.pos = chaseUntil(wk.next, wk.pos, steps, &s.stopped)
			s.done <- struct{}{}
		case <-s.stop:
			return
		}
	}
}

// Run splits b.N elements over the workers and waits for all of them.
func (s *sweep) Run(b *measure.B) error {
	t := len(s.workers)
	per, rem := b.N/t, b.N%t
	sent := 0
	for i, wk := range s.workers {
		steps := per
		if i < rem {
			steps++
		}
		select {
		case wk.work <- steps:
			sent++
		case <-s.stop:
			return mech.ErrStopped
		}
	}
	for k := 0; k < sent; k++ {
		select {
		case <-s.done:
		case <-s.stop:
			return mech.ErrStopped
		}
	}
	return nil
}

// Participants are the worker threads.
func (s *sweep) Participants() exp.Participants {
	var tids []int
	for _, wk := range s.workers {
		tids = append(tids, wk.tid)
	}
	return exp.Threads(tids...)
}

// Analyze adds on-CPU time and run-queue wait per element, from the
// runner's record of the workers, and switch and migration rates per ms
// of wall time.
func (s *sweep) Analyze(rec *exp.Record, r *result.Arm) {
	if rec.Ops == 0 {
		return
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if rec.CPUNs >= 0 {
		r.Metrics["oncpu-ns/element"] = float64(rec.CPUNs) / float64(rec.Ops)
	}
	if rec.RunqNs < 0 {
		r.Notes = append(r.Notes, "run-queue wait unsupported: /proc/<pid>/task/<tid>/schedstat not readable (CONFIG_SCHEDSTATS)")
	} else {
		r.Metrics["runq-wait-ns/element"] = float64(rec.RunqNs) / float64(rec.Ops)
	}
	addRates(r)
}

// addRates turns per-op switch and migration counts into rates per ms of
// wall time, which compare across arms whatever the op.
func addRates(r *result.Arm) {
	if r.Median <= 0 {
		return
	}
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if r.Switches != nil {
		r.Metrics["voluntary-switches/ms"] = r.Switches.Voluntary / r.Median * 1e6
		r.Metrics["involuntary-switches/ms"] = r.Switches.Involuntary / r.Median * 1e6
	}
	if r.Migrations != nil {
		r.Metrics["migrations/ms"] = *r.Migrations / r.Median * 1e6
	}
}

func (s *sweep) Close() error {
	s.once.Do(func() {
		s.stopped.Store(true)
		close(s.stop)
		for _, wk := range s.workers {
			<-wk.exit
			wk.next = nil
		}
		// Give the working sets back now, so the next arm's fit.
		debug.FreeOSMemory()
	})
	return nil
}

// ---- per-switch and slice: two threads on one CPU ----

// pairBench: thread A follows its array, hands the CPU to B over a futex,
// B follows its own array and hands it back. per-switch (every = 0): each
// side follows its whole array per turn and one op is a round trip. slice
// (every > 0): A's turn is ~every ns of its work, one op is one element of
// A's work, and B's turn is the same number of elements of its own array.
type pairBench struct {
	pair   *mech.Pair
	a, b   *mech.Thread
	ax, by []uint32
	apos   uint32
	chunkA int
	chunkB int
	turn   atomic.Int64 // slice: elements B follows this turn (A's last chunk)
	slice  bool
	echoed <-chan struct{}
	once   sync.Once
}

func openPairBench(cpu []int, wa, wb int64, every int64) (exp.Bench, error) {
	pair, err := mech.NewPair("futex")
	if err != nil {
		return nil, err
	}
	p := &pairBench{pair: pair, ax: chaseCycle(int(wa/elemBytes), true, 1), by: chaseCycle(int(wb/elemBytes), true, 2)}
	p.chunkA, p.chunkB = len(p.ax), len(p.by)
	if p.a, err = mech.StartThread(cpu); err != nil {
		pair.Close()
		return nil, err
	}
	if p.b, err = mech.StartThread(cpu); err != nil {
		p.a.Stop()
		pair.Close()
		return nil, err
	}
	if every > 0 {
		// Calibrate A's warm cost per element so its turn lasts ~every ns.
		p.slice = true
		var per float64
		p.a.Do(func() {
			p.apos = chase(p.ax, p.apos, 4*len(p.ax))
			t0 := measure.Now()
			p.apos = chase(p.ax, p.apos, 4*len(p.ax))
			per = float64(measure.Now()-t0) / float64(4*len(p.ax))
		})
		p.chunkA = max(1, int(float64(every)/max(per, 0.1)))
	}
	by, chunkB, slice := p.by, p.chunkB, p.slice
	p.echoed, _ = p.b.Go(func() {
		var pos uint32
		for {
			if _, err := pair.B.Recv(); err != nil {
				return
			}
			n := chunkB
			if slice {
				n = int(p.turn.Load())
			}
			pos = chase(by, pos, n)
			if err := pair.B.Send(0); err != nil {
				return
			}
		}
	})
	return p, nil
}

func (p *pairBench) Run(b *measure.B) error {
	var err error
	p.a.Do(func() {
		b.ResetTimer() // the batch starts when thread A has it
		if p.slice {
			for done := 0; done < b.N && err == nil; {
				c := min(p.chunkA, b.N-done)
				p.apos = chase(p.ax, p.apos, c)
				done += c
				p.turn.Store(int64(c)) // B's turn: as many elements of its own set
				if err = p.pair.A.Send(0); err == nil {
					_, err = p.pair.A.Recv()
				}
			}
		} else {
			for i := 0; i < b.N && err == nil; i++ {
				t := b.S.Start(i)
				p.apos = chase(p.ax, p.apos, p.chunkA)
				if err = p.pair.A.Send(0); err == nil {
					_, err = p.pair.A.Recv()
				}
				b.S.Stop(t)
			}
		}
	})
	return err
}

// Participants are A and B.
func (p *pairBench) Participants() exp.Participants { return exp.Threads(p.a.TID, p.b.TID) }

// Analyze adds A's on-CPU time per element (slice), from the runner's
// record of A's thread, and the turn length.
func (p *pairBench) Analyze(rec *exp.Record, r *result.Arm) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if cpu, ok := rec.ThreadCPUNs[p.a.TID]; p.slice && ok && rec.Ops > 0 {
		r.Metrics["worker-oncpu-ns/element"] = float64(cpu) / float64(rec.Ops)
		r.Metrics["turn-elements"] = float64(p.chunkA)
	}
	addRates(r)
}

func (p *pairBench) Close() error {
	p.once.Do(func() {
		p.pair.Stop()
		<-p.echoed
		p.a.Stop()
		p.b.Stop()
		p.pair.Close()
	})
	return nil
}

// solo: one thread follows its warm array twice per op with no switch, the
// baseline per-switch subtracts.
type solo struct {
	t       *mech.Thread
	ax      []uint32
	pos     uint32
	stopped atomic.Bool
	once    sync.Once
}

func openSolo(cpu []int, w int64) (exp.Bench, error) {
	t, err := mech.StartThread(cpu)
	if err != nil {
		return nil, err
	}
	return &solo{t: t, ax: chaseCycle(int(w/elemBytes), true, 1)}, nil
}

func (s *solo) Run(b *measure.B) error {
	s.t.Do(func() {
		b.ResetTimer()
		for i := 0; i < b.N && !s.stopped.Load(); i++ {
			t := b.S.Start(i)
			s.pos = chase(s.ax, s.pos, 2*len(s.ax))
			b.S.Stop(t)
		}
	})
	if s.stopped.Load() {
		return mech.ErrStopped
	}
	return nil
}

// Participants are the one worker thread.
func (s *solo) Participants() exp.Participants { return exp.Threads(s.t.TID) }

func (s *solo) Close() error {
	s.stopped.Store(true)
	s.once.Do(s.t.Stop)
	return nil
}

// ---- checks and findings ----

// sweepPair is a (pattern, W) with its T = cores and T ≫ cores arms.
type sweepPair struct {
	pattern   string
	w         int64
	few, many *result.Arm
	rt        *result.Arm // T ≫ cores at GOMAXPROCS = cores
}

func sweepPairs(arms []result.Arm) []sweepPair {
	idx := map[string]*sweepPair{}
	var keys []string
	for i := range arms {
		a := &arms[i]
		if a.Params["mode"] != "sweep" || a.Status != result.StatusOK {
			continue
		}
		w, _ := strconv.ParseInt(a.Params["W_bytes"], 10, 64)
		k := a.Params["pattern"] + "/" + a.Params["W_bytes"]
		sp := idx[k]
		if sp == nil {
			sp = &sweepPair{pattern: a.Params["pattern"], w: w}
			idx[k] = sp
			keys = append(keys, k)
		}
		switch {
		case a.Params["multiplexer"] == "go-runtime":
			sp.rt = a
		case a.Params["T"] == a.Params["cores"]:
			sp.few = a
		default:
			sp.many = a
		}
	}
	var out []sweepPair
	for _, k := range keys {
		out = append(out, *idx[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].pattern != out[j].pattern {
			return out[i].pattern < out[j].pattern
		}
		return out[i].w < out[j].w
	})
	return out
}

// indirectCurve is the per-switch indirect cost at each W > 0 where the
// pingpong, solo and W=0 arms were all measured: (RT(W) − solo(W) − RT(0)) / 2.
type indirectPoint struct {
	w        int64
	ns       float64
	arms     []string
	rt, solo float64
	switches float64 // measured switches per round trip at W
}

func indirectCurve(arms []result.Arm) (points []indirectPoint, direct float64, ok bool) {
	rt := map[int64]result.Arm{}
	so := map[int64]result.Arm{}
	for _, a := range arms {
		if a.Status != result.StatusOK {
			continue
		}
		w, _ := strconv.ParseInt(a.Params["W_bytes"], 10, 64)
		switch a.Params["mode"] {
		case "per-switch":
			rt[w] = a
		case "per-switch-solo":
			so[w] = a
		}
	}
	zero, ok := rt[0]
	if !ok {
		return nil, 0, false
	}
	var ws []int64
	for w := range rt {
		if _, ok := so[w]; ok && w > 0 {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	for _, w := range ws {
		pt := indirectPoint{w: w, ns: (rt[w].Median - so[w].Median - zero.Median) / 2,
			arms: []string{rt[w].Name, so[w].Name, zero.Name}, rt: rt[w].Median, solo: so[w].Median}
		if sw := rt[w].Switches; sw != nil {
			pt.switches = sw.Total()
		}
		points = append(points, pt)
	}
	return points, zero.Median / 2, true
}

const (
	minIndirectW = 8 * result.MiB // the check's "W ≥ 8 MiB random"
	// maxSharedWait: run-queue wait per on-CPU time at T = cores above
	// which the CPUs were not the workers' own.
	maxSharedWait = 0.25
)

func cachecostChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for _, sp := range sweepPairs(arms) {
		if sp.pattern != "random" || sp.w < minIndirectW || sp.few == nil || sp.many == nil {
			continue
		}
		// "Measurably": every repetition at T ≫ cores is slower than every
		// repetition at T = cores.
		c := result.Check{
			Name:  fmt.Sprintf("at W ≥ %s random, T ≫ cores is slower per element than T = cores (min of one > max of the other)", result.SizeName(minIndirectW)),
			Holds: sp.many.Min > sp.few.Max,
			Detail: fmt.Sprintf("W=%s: T=%s %s (%s–%s) vs T=%s %s (%s–%s), %+.0f%%", result.SizeName(sp.w),
				sp.many.Params["T"], result.FormatNs(sp.many.Median), result.FormatNs(sp.many.Min), result.FormatNs(sp.many.Max),
				sp.few.Params["T"], result.FormatNs(sp.few.Median), result.FormatNs(sp.few.Min), result.FormatNs(sp.few.Max),
				100*(sp.many.Median/sp.few.Median-1)),
			Arms: []string{sp.many.Name, sp.few.Name},
		}
		// The model assumes the T = cores workers own the CPUs. When other
		// processes held them (run-queue wait above a quarter of on-CPU
		// time), wall time compares shares of the CPUs, not caches: the
		// check cannot be evaluated, and says why.
		if rq, cpu := sp.few.Metrics["runq-wait-ns/element"], sp.few.Metrics["oncpu-ns/element"]; cpu > 0 && rq > maxSharedWait*cpu {
			c.Holds, c.Skipped = false, true
			c.Detail += fmt.Sprintf("; not evaluated: at T=%s the workers waited %s per element for a CPU against %s on one, so other processes held these CPUs (on-CPU per element: %s at T=%s vs %s)",
				sp.few.Params["T"], result.FormatNs(rq), result.FormatNs(cpu), pct(sp.many.Metrics["oncpu-ns/element"], cpu), sp.many.Params["T"], sp.few.Params["T"])
		}
		out = append(out, c)
	}
	if pts, _, ok := indirectCurve(arms); ok && len(pts) >= 2 {
		first, last := pts[0], pts[len(pts)-1]
		var curve []string
		var names []string
		for _, p := range pts {
			curve = append(curve, fmt.Sprintf("%s %s", result.SizeName(p.w), result.FormatNs(p.ns)))
			names = append(names, p.arms[0], p.arms[1])
		}
		out = append(out, result.Check{
			Name:   "the per-switch indirect cost grows with W (largest W > smallest W)",
			Holds:  last.ns > first.ns && last.ns > 0,
			Detail: "indirect cost per switch: " + strings.Join(curve, " · "),
			Arms:   append(names, first.arms[2]),
		})
	}
	return out
}

func cachecostFindings(arms []result.Arm) []string {
	var out []string
	for _, sp := range sweepPairs(arms) {
		if sp.few == nil || sp.many == nil {
			continue
		}
		f, m := sp.few, sp.many
		line := fmt.Sprintf("sweep %s W=%s: T=%s vs T=%s wall %s per element (%s → %s)", sp.pattern, result.SizeName(sp.w),
			m.Params["T"], f.Params["T"], pct(m.Median, f.Median), result.FormatNs(f.Median), result.FormatNs(m.Median))
		if fc, mc := f.Metrics["oncpu-ns/element"], m.Metrics["oncpu-ns/element"]; fc > 0 && mc > 0 {
			line += fmt.Sprintf(", on-CPU time per element %s (how much slower it ran on a CPU: the indirect cost)", pct(mc, fc))
		}
		if rq, ok := m.Metrics["runq-wait-ns/element"]; ok {
			line += fmt.Sprintf(", run-queue wait %s per element (waited for a CPU)", result.FormatNs(rq))
		}
		if sw := m.Metrics["involuntary-switches/ms"] + m.Metrics["voluntary-switches/ms"]; sw > 0 {
			line += fmt.Sprintf(", %.1f switches/ms", sw)
		}
		if rq := f.Metrics["runq-wait-ns/element"]; rq > 0.1*f.Median {
			line += fmt.Sprintf("; other processes shared these CPUs (T=%s waited %s per element too): on-CPU is the cleaner figure", f.Params["T"], result.FormatNs(rq))
		}
		out = append(out, line)
		if rt := sp.rt; rt != nil {
			l := fmt.Sprintf("sweep %s W=%s: Go runtime multiplexing (GOMAXPROCS=%d) vs the kernel's: wall %s", sp.pattern, result.SizeName(sp.w), rt.GOMAXPROCS, pct(rt.Median, m.Median))
			if a, b := rt.Metrics["oncpu-ns/element"], m.Metrics["oncpu-ns/element"]; a > 0 && b > 0 {
				l += ", on-CPU " + pct(a, b)
			}
			out = append(out, l)
		}
	}
	if pts, direct, ok := indirectCurve(arms); ok {
		var curve []string
		for _, p := range pts {
			curve = append(curve, fmt.Sprintf("W=%s %s", result.SizeName(p.w), result.FormatNs(p.ns)))
		}
		line := fmt.Sprintf("per-switch: direct cost %s per switch (W=0 round trip / 2); indirect cost per switch %s", result.FormatNs(direct), strings.Join(curve, " · "))
		if n := len(pts); n > 0 && pts[n-1].switches > 3 {
			line += fmt.Sprintf("; at W=%s a round trip took %.0f switches, not 2: other processes preempted the workers mid-traversal, and their cache damage counts in", result.SizeName(pts[n-1].w), pts[n-1].switches)
		}
		out = append(out, line)
	}
	var fast, slow *result.Arm
	for i := range arms {
		a := &arms[i]
		if a.Params["mode"] == "slice" && a.Status == result.StatusOK {
			if a.Params["block_every"] == sliceEvery[0].name {
				fast = a
			} else {
				slow = a
			}
		}
	}
	if fast != nil && slow != nil {
		fc, sc := fast.Metrics["worker-oncpu-ns/element"], slow.Metrics["worker-oncpu-ns/element"]
		if fc > 0 && sc > 0 {
			out = append(out, fmt.Sprintf("slice: blocking every %s, the fixed work ran at %.0f M elements/s on-CPU vs %.0f M at every %s (%s per element); wall %s",
				fast.Params["block_every"], 1e3/fc, 1e3/sc, slow.Params["block_every"], pct(fc, sc), pct(fast.Median, slow.Median)))
		}
	}
	return out
}

// cachecostMetrics declares the figures cachecost arms add beside the median.
var cachecostMetrics = []exp.Metric{
	{Name: "oncpu-ns/element", Unit: "ns", Better: exp.LowerIsBetter, Doc: "on-CPU time per element, all workers (the runner's schedstat reading of their threads): the indirect cost shows here"},
	{Name: "runq-wait-ns/element", Unit: "ns", Better: exp.LowerIsBetter, Doc: "run-queue wait per element (schedstat): time runnable but not running"},
	{Name: "voluntary-switches/ms", Unit: "switches", Better: exp.NotRanked, Doc: "voluntary OS switches per ms of wall time"},
	{Name: "involuntary-switches/ms", Unit: "switches", Better: exp.NotRanked, Doc: "involuntary OS switches (preemptions) per ms of wall time"},
	{Name: "migrations/ms", Unit: "migrations", Better: exp.NotRanked, Doc: "CPU migrations per ms of wall time"},
	{Name: "worker-oncpu-ns/element", Unit: "ns", Better: exp.LowerIsBetter, Doc: "slice: the blocking worker's own on-CPU time per element"},
	{Name: "turn-elements", Unit: "elements", Better: exp.NotRanked, Doc: "slice: elements each side handles per turn"},
}

// cachecostRefs: SPEC §8's published indirect cost, about the experiment as a whole.
var cachecostRefs = []exp.Reference{
	{Text: "8 vs 128 threads, 4 MB working sets, 8 cores: context switches 2 410 → 248 300, migrations 180 → 41 700, instructions ≈ equal, cycles +118%, IPC 2.40 → 1.10, LLC misses ×3.3, dTLB misses ×3.9, task-clock +29%; direct switch cost ≈ 1 µs"},
}

// cachecostCurve is the per-switch indirect cost at each W > 0 the arms
// measured, by W: what a round trip over two W-byte sets costs beyond the
// same traversals without a switch (solo) and beyond a round trip without
// data (W=0), per switch. It takes CPU time per op where all three arms
// recorded it — (RT(W) − solo(W) − RT(0)) ÷ the switches RT(W) made
// beyond solo(W)'s, which counts preemptions by other processes too (each
// one also leaves the caches cold); from wall time it keeps only points
// whose round trip switched about twice, ÷ those switches (a preempted
// op's wall time holds other processes' turns).
func cachecostCurve(arms []result.Arm) []exp.CostPoint {
	rt, solo := map[string]result.Arm{}, map[string]result.Arm{}
	var zero *result.Arm
	for i, a := range arms {
		if a.Experiment != "cachecost" || a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		switch a.Params["mode"] {
		case "per-switch":
			if a.Params["W_bytes"] == "0" {
				zero = &arms[i]
			} else {
				rt[a.Params["W_bytes"]] = a
			}
		case "per-switch-solo":
			solo[a.Params["W_bytes"]] = a
		}
	}
	if zero == nil {
		return nil
	}
	cpuOnly := func(a result.Arm) (float64, bool) {
		c, _, ok := price.CPUPerOp(a)
		return c, ok
	}
	z, zok := cpuOnly(*zero)
	var out []exp.CostPoint
	for wb, r := range rt {
		s, ok := solo[wb]
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(wb, 10, 64)
		rc, rok := cpuOnly(r)
		sc, sok := cpuOnly(s)
		switch {
		case zok && rok && sok && r.Switches != nil:
			extra := r.Switches.Total()
			if s.Switches != nil {
				extra -= s.Switches.Total()
			}
			if extra >= 1 {
				out = append(out, exp.CostPoint{Bytes: n, Label: r.Params["W"], Ns: (rc - sc - z) / extra})
			}
		case r.Switches != nil && r.Switches.Total() >= 1.5 && r.Switches.Total() <= 2.5 && (s.Switches == nil || s.Switches.Total() < 0.5):
			// Wall time only from round trips that switched about twice
			// (not preempted), divided by the switches they made.
			out = append(out, exp.CostPoint{Bytes: n, Label: r.Params["W"], Ns: (r.Median - s.Median - zero.Median) / r.Switches.Total()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Bytes < out[j].Bytes })
	return out
}

// cachecostVerdict: the per-switch curve, and wall time per element
// with few and many threads at the largest working set swept (a line of
// figures), their on-CPU time in a note: what the indirect cost is.
func cachecostVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	var lines, notes []string
	// per-switch curve: (RT(W) − solo(W) − RT(0)) / switches at each W.
	var parts []string
	for _, p := range cachecostCurve(v.Run.Arms) {
		parts = append(parts, p.Label+" "+result.FormatNs(p.Ns))
	}
	if len(parts) > 0 {
		lines = append(lines, "  per switch, on top of the direct cost, by working set touched: "+strings.Join(parts, " · "))
	}
	sweep := v.Where("cachecost", func(a result.Arm) bool { return a.Params["mode"] == "sweep" && a.Params["compare"] != "" })
	groups := map[string][]result.Arm{}
	var key string
	var keyW int64 = -1
	for _, a := range sweep {
		k := a.Params["compare"]
		groups[k] = append(groups[k], a)
		if wb, _ := strconv.ParseInt(a.Params["W_bytes"], 10, 64); wb > keyW {
			key, keyW = k, wb
		}
	}
	threads := func(a result.Arm) int { n, _ := strconv.Atoi(a.Params["T"]); return n }
	if g := groups[key]; len(g) >= 2 {
		sort.Slice(g, func(i, j int) bool { return threads(g[i]) < threads(g[j]) })
		few, many := g[0], g[len(g)-1]
		lines = append(lines, fmt.Sprintf("  %s each, %s → %s threads: wall %s (%s) → %s (%s)", result.FormatBytes(float64(keyW)),
			few.Params["T"], many.Params["T"], result.FormatNs(few.Median), exp.Spread(few), result.FormatNs(many.Median), exp.Spread(many)))
		if fc, mc := few.Metrics["oncpu-ns/element"], many.Metrics["oncpu-ns/element"]; fc > 0 && mc > 0 {
			cmp := exp.Compare(mc, fc, "more", "less")
			line := fmt.Sprintf("    on CPU %s → %s, %s", result.FormatNs(fc), result.FormatNs(mc), cmp)
			if mc > fc*exp.SameWithin {
				line += ": the indirect cost (cold caches); the rest of the wall time is waiting for a CPU"
			} else {
				line += ": no indirect cost shows at this size"
			}
			notes = append(notes, line)
		}
	} else if len(lines) == 0 {
		lines = append(lines, "  not measured (run cachecost)")
	}
	return []exp.VerdictSection{{Block: exp.BlockIndirect, Heading: "the indirect cost: cold caches after other workers ran, time per element visited",
		Lines: lines, Notes: notes,
		Foot: []string{"  published: 4 MB sets, 128 vs 8 threads on 8 cores: cycles +118% for ≈ equal instructions, IPC 2.40 → 1.10, LLC misses ×3.3, task-clock +29%; direct switch ≈ 1 µs"}}}
}
