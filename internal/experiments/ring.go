package experiments

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// ring: N workers pass one token around a ring; op = one hop (SPEC §5.2).
// Worker 0 is the driver (the runner's goroutine, or a locked thread); the
// token carries the number of hops still to make, so a batch of b.N hops is
// b.N/N laps, the last one partial: the worker that receives 0 tells the
// driver over a separate "done" link (one uncounted handoff per batch).
func init() {
	exp.Register(&ringExp{exp.Spec{
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
		Checks:   cpythonChecks(ringChecks, nil),
		Findings: cpythonFindings(ringFindings, ringPyFindings),
		Metrics:  append(append([]exp.Metric(nil), ringMetrics...), cpythonMetrics...),
	}})
	exp.RegisterOption(ringSubstratesOpt)
	child.Register("ring-node", ringNodeChild)
}

// ringExp is ring with its hook: a 2-thread ring's hop over half the
// reference ping-pong's round trip, derived.
type ringExp struct{ exp.Spec }

var _ interface {
	exp.Deriver
	exp.Pairer
} = (*ringExp)(nil)

func (*ringExp) Derive(arms []result.Arm) { nativeDerive(ringDerive)(arms) }

// Pairs: the CPython rings on both builds of one version, side by side.
func (*ringExp) Pairs() []exp.Pair { return pyBuildPairs("ring") }

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
var quickRing = keysOf(
	ringKey("goroutine", "chan", 2, "same-cpu"), ringKey("goroutine", "chan", 100, "same-cpu"),
	ringKey("thread", "futex", 2, "same-cpu"), ringKey("thread", "futex", 100, "same-cpu"),
	ringKey("process", "pipe", 10, "unpinned"),
)

// ringKey is a ring arm's key: ring/SUB/MECH/n=N/PLACEMENT.
func ringKey(sub, m string, n int, placement string) exp.ArmKey {
	return exp.Key("ring", exp.Seg(sub), exp.Seg(m), exp.KV("n", n), exp.Seg(placement))
}

// ringPyKey is a CPython ring's key: ring/SUB/MECH/n=N, unpinned.
func ringPyKey(sub, m string, n int) exp.ArmKey {
	return exp.Key("ring", exp.Seg(sub), exp.Seg(m), exp.KV("n", n))
}

// The reference ping-pong of a 2-thread ring arm takes the place of its
// n=2: ring/thread/M/pingpong/PLACEMENT.
var (
	ringTwo = exp.KV("n", 2)
	ringRef = exp.Seg("pingpong")
)

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
					key := ringKey(k.sub, k.mech, n, pl.Name)
					name := key
					if p.GOMAXPROCS != nil {
						name = key.With(exp.KV("gomaxprocs", g))
					}
					sub, m, n, pl := k.sub, k.mech, n, pl
					a := exp.Arm{
						Name: name.String(), Substrate: sub, Mechanism: m,
						Params:     map[string]string{"n": strconv.Itoa(n), "placement": pl.Name},
						GOMAXPROCS: g, Placement: pl.Name, CPUs: pl.Process,
						Quick: quickRing.has(key) && p.GOMAXPROCS == nil,
						Open: func(ctx context.Context) (exp.Bench, error) {
							return OpenRing(ctx, sub, m, n)
						},
					}
					if limitErr != nil {
						a.Unsupported = limitErr.Error()
					}
					arms = append(arms, a)
					if k.sub == "thread" && n == 2 {
						arms = append(arms, ringRefArm(a, name, m, pl))
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
			a := pyArm{key: ringPyKey(sub, mech, n), sub: sub, mech: mech, op: "hop",
				bench: bench, params: map[string]string{"n": strconv.Itoa(n)}, place: "unpinned",
				freeThreaded: ringPyRefs.hasFT(ringPyKey(sub, mech, n))}
			switch {
			case n < 2:
				a.unsup = "a ring needs at least 2 workers"
			case n > limit:
				a.unsup = fmt.Sprintf("more than %d Python %s", limit, map[string]string{"pythread": "threads", "pytask": "tasks"}[sub])
			}
			out = append(out, a)
		}
		out = append(out, pyArm{key: ringPyKey(sub, mech, 2).With(exp.Seg("same-cpu")), sub: sub, mech: mech, op: "hop",
			bench: bench, params: map[string]string{"n": "2"}, place: "same-cpu"})
	}
	return out
}

// ringPyRefs are SPEC §8's figures for the CPython rings.
var ringPyRefs = pyRefs{GIL: []pyRef{
	{ringPyKey("pythread", "simplequeue", 2), "3.98 µs per hop"},
	{ringPyKey("pythread", "simplequeue", 100), "4.54 µs per hop"},
	{ringPyKey("pythread", "simplequeue", 1000), "7.65 µs per hop"},
	{ringPyKey("pythread", "simplequeue", 2).With(exp.Seg("same-cpu")), "6.45 µs and 3.0 switches per hop"},
	{ringPyKey("pytask", "asyncio-queue", 2), "2.37 µs per hop"},
	{ringPyKey("pytask", "asyncio-queue", 100), "2.22 µs per hop"},
	{ringPyKey("pytask", "asyncio-queue", 1000), "3.07 µs per hop"},
	{ringPyKey("pytask", "asyncio-queue", 2).With(exp.Seg("same-cpu")), "2.65 µs per hop"},
}, FT: []pyRef{
	{ringPyKey("pythread", "simplequeue", 2), "4.64 µs per hop (free-threaded)"},
	{ringPyKey("pythread", "simplequeue", 100), "5.22 µs per hop (free-threaded)"},
}}

// ringRefArm is a two-thread ping-pong over the same mechanism, placement
// and GOMAXPROCS as the 2-thread ring arm a, measured by the runner like
// any arm: the ring's check compares a hop with half its round trip. The
// reference waits in system-call sections (mech), the ring's threads
// through the runtime on every hop: a hop carries ~2–3% more, well inside
// the check's 0.67–1.5×.
func ringRefArm(a exp.Arm, name exp.ArmKey, m string, pl exp.Placement) exp.Arm {
	ref := a
	ref.Name = name.Replace(ringTwo, ringRef).String()
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
