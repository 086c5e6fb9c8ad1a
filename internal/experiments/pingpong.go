package experiments

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/mech"
)

// pingpong: A sends a value, B sends it back; op = one round trip (SPEC §5.1).
func init() {
	exp.Register(&pingpongExp{exp.Spec{
		Name:       "pingpong",
		Order:      10,
		References: pingpongRefs,
		Summary:    "two-party handoff: goroutines, locked threads and processes over every mechanism",
		Op:         "round trip",
		OpLabels:   []exp.OpLabel{{Label: "roundtrip"}},
		Doc: `A sends a value to B, B sends it back; one op is that round trip.
Substrates: goroutine (Go scheduler only), thread (goroutine locked to its own
OS thread), process (ctxlab re-executed as the partner), pythread (two CPython
threads over SimpleQueues, an Event pair or a pipe), pytask (two asyncio tasks
over asyncio.Queues, bare futures or an asyncio.Event pair), pyprocess (a forked CPython child over a
pipe). Placements: unpinned, both workers on one CPU (same-cpu), one on each
of two CPUs (cross-cpu).
` + cpythonDoc,
		Arms:     withCPython(pingpongArms, pingpongPyPlan),
		Checks:   cpythonChecks(pingpongChecks, pingpongPyChecks),
		Findings: cpythonFindings(pingpongFindings, pingpongPyFindings),
		Metrics:  cpythonMetrics,
	}})
}

// pingpongExp is pingpong with its hooks: the verdict's handoff rows and
// its lines, the switch's direct cost, the side-by-side pairs, the
// selfcheck references and serve's probes.
type pingpongExp struct{ exp.Spec }

var _ interface {
	exp.Headliner
	exp.Verdicter
	exp.SwitchCoster
	exp.Pairer
	exp.Harnessed
	exp.Prober
} = (*pingpongExp)(nil)

func (*pingpongExp) Headline() []exp.Headline { return pingpongHeadline }

func (*pingpongExp) Verdict(v *exp.VerdictRun) []exp.VerdictSection { return pingpongVerdict(v) }

func (*pingpongExp) SwitchCost() []string { return pingpongSwitchCost }

func (*pingpongExp) Pairs() []exp.Pair { return pingpongPairs }

func (*pingpongExp) Harness() []exp.HarnessRef {
	return []exp.HarnessRef{
		{Arm: ppGoroutine("chan", "1").String(), Reference: exp.RefChanLoop},
		{Arm: ppPlaced("thread", "futex", "unpinned").String(), Reference: exp.RefRawFutex},
		{Arm: ppPlaced("thread", "eventfd", "unpinned").String(), Reference: exp.RefRawEventfd},
		{Arm: ppPlaced("thread", "pipe", "unpinned").String(), Reference: exp.RefPerfThreads},
		{Arm: ppPlaced("process", "pipe", "unpinned").String(), Reference: exp.RefPerfProcess},
		// perf bench's processes are single-threaded and a Go process
		// never is: the same raw loop between two Go processes shows
		// what of the gap is the harness (docs/harness.md, issue 32).
		{Arm: ppPlaced("process", "pipe", "unpinned").String(), Reference: exp.RefRawProcess},
	}
}

// Probes: the in-runtime floor, the OS switch on one CPU and across two
// (the placement gap is what changes between hosts), and a process round trip.
func (*pingpongExp) Probes() []string {
	return names(ppGoroutine("chan", "1"), ppPlaced("thread", "futex", "same-cpu"),
		ppPlaced("thread", "futex", "cross-cpu"), ppPlaced("process", "pipe", "unpinned"))
}

// pingpongPairs are the comparisons pingpong's verdict states, measured
// side by side (runner: pairs); each ratio is the first arm's over the
// second's. The last, the CPython thread round trip on its two builds,
// stands for one pair per version --python all ran on both (pyBuildPairs).
var pingpongPairs = append([]exp.Pair{
	{Label: "threads vs goroutines", A: ppPlaced("thread", "futex", "same-cpu").String(), B: ppGoroutine("chan", "1").String()},
	{Label: "threads across CPUs vs on one CPU", A: ppPlaced("thread", "futex", "cross-cpu").String(), B: ppPlaced("thread", "futex", "same-cpu").String()},
	{Label: "processes vs threads over a pipe on one CPU", A: ppPlaced("process", "pipe", "same-cpu").String(), B: ppPlaced("thread", "pipe", "same-cpu").String()},
	// On one CPU: unpinned, where a round trip's two threads run is the
	// scheduler's choice, and it changes with how the arm's turns fall
	// (measured: 12–60 µs a round trip on the 2-vCPU VM, one set-up to
	// the next), so the side-by-side ratio would be of placements.
	{Label: "asyncio tasks vs CPython threads on one CPU", A: ppPlaced("pytask", "asyncio-queue", "same-cpu").String(), B: ppPlaced("pythread", "simplequeue", "same-cpu").String()},
}, pyBuildPairs("pingpong")...)

// ppGoroutine is a goroutine pair's key: its mechanism and GOMAXPROCS
// ("1", "all" or a number): pingpong/goroutine/chan/gomaxprocs=1.
func ppGoroutine(m, gomaxprocs string) exp.ArmKey {
	return exp.Key("pingpong", exp.Seg("goroutine"), exp.Seg(m), exp.KV("gomaxprocs", gomaxprocs))
}

// ppPlaced is a placed pair's key (threads, processes, CPython's
// workers): pingpong/thread/futex/same-cpu.
func ppPlaced(sub, m, placement string) exp.ArmKey {
	return exp.Key("pingpong", exp.Seg(sub), exp.Seg(m), exp.Seg(placement))
}

var quickPingpong = keysOf(
	ppGoroutine("chan", "1"), ppGoroutine("chan", "all"), ppGoroutine("cond", "1"),
	ppPlaced("thread", "futex", "unpinned"), ppPlaced("thread", "futex", "same-cpu"), ppPlaced("thread", "futex", "cross-cpu"),
	ppPlaced("thread", "pipe", "unpinned"), ppPlaced("thread", "pipe", "same-cpu"), ppPlaced("thread", "chan", "unpinned"),
	ppPlaced("process", "pipe", "unpinned"), ppPlaced("process", "pipe", "same-cpu"), ppPlaced("process", "shmfutex", "unpinned"),
)

func pingpongArms(p exp.Params) ([]exp.Arm, error) {
	arms := pingpongGoroutineArms(p)
	// Thread arms over a Go channel or cond need a P per locked thread, or
	// a woken thread waits for sysmon to hand it one; the kernel kinds wait
	// in system-call sections and need a P only as a run of round trips
	// ends. GOMAXPROCS ≥ 2 by default.
	threadGmps := []int{max(len(p.CPUs), 2)}
	if p.GOMAXPROCS != nil {
		threadGmps = p.GOMAXPROCS
	}
	// Every mechanism of mech's rows on each substrate its row names.
	for _, sub := range []string{mech.SubThread, mech.SubProcess} {
		for _, row := range mech.On(sub) {
			for _, pl := range exp.Placements(p) {
				for _, g := range threadGmps {
					key := ppPlaced(sub, row.Name, pl.Name)
					name := key
					if p.GOMAXPROCS != nil {
						name = key.With(exp.KV("gomaxprocs", g))
					}
					pl, m, sub := workerPlacement(pl, p), row.Name, sub
					arms = append(arms, exp.Arm{
						Name: name.String(), Substrate: sub, Mechanism: m,
						Params:     map[string]string{"placement": pl.Name},
						GOMAXPROCS: g, Placement: pl.Name, CPUs: pl.Process, Quick: quickPingpong.has(key),
						Unsupported: placementRefused(row, pl),
						Open: func(ctx context.Context) (exp.Bench, error) {
							if sub == "thread" {
								return openThreadPair(m, pl)
							}
							return openProcessPair(ctx, m, pl)
						},
					})
				}
			}
		}
	}
	return arms, nil
}

// pingpongGoroutineArms are the goroutine pairs: GOMAXPROCS 1 and all
// CPUs of the run, or --gomaxprocs.
func pingpongGoroutineArms(p exp.Params) []exp.Arm {
	var arms []exp.Arm
	gmps, gmpNames := gomaxprocsSweep(p)
	unp := exp.Unpinned(p)
	for _, row := range mech.On(mech.SubGoroutine) {
		m := row.Name
		for i, g := range gmps {
			key := ppGoroutine(m, gmpNames[i])
			arms = append(arms, exp.Arm{
				Name: key.String(), Substrate: "goroutine", Mechanism: m,
				Params:     map[string]string{"gomaxprocs": strconv.Itoa(g)},
				GOMAXPROCS: g, Placement: unp.Name, CPUs: unp.Process, Quick: quickPingpong.has(key),
				Open: func(ctx context.Context) (exp.Bench, error) { return openGoroutinePair(m) },
			})
		}
	}
	return arms
}

// workerPlacement pins the two workers of a thread or process arm, not the
// whole process: the Go runtime's own threads (sysmon, idle Ms) are the
// harness, not a worker, and confining them to the workers' CPU adds their
// wake-ups to the figure. With them free, a pinned pipe round trip matches
// a C program's (perf bench sched pipe) within a few per cent. Unpinned
// under --cpus, both workers may use the whole set.
func workerPlacement(pl exp.Placement, p exp.Params) exp.Placement {
	if pl.Name == "unpinned" && p.CPUsGiven {
		pl.A, pl.B = p.CPUs, p.CPUs
	}
	pl.Process = nil
	if len(pl.A) > 0 && p.Host != nil {
		// Keep the harness off the workers' CPUs where the machine has
		// others: the runtime's threads are confined to the rest, and the
		// workers (and the child's echo thread) pin themselves.
		used := map[int]bool{}
		for _, c := range append(append([]int(nil), pl.A...), pl.B...) {
			used[c] = true
		}
		for _, c := range p.Host.OnlineCPUs {
			if !used[c] {
				pl.Process = append(pl.Process, c)
			}
		}
	}
	return pl
}

// placementRefused says why a pair of row cannot run at placement pl
// (the run's CPUs, or a spinning row whose two workers would share one
// CPU: a side that spins while its partner waits for that CPU would spin
// until preempted), "" when it can.
func placementRefused(row mech.Row, pl exp.Placement) string {
	if pl.Unsupported != "" || !row.Locked {
		return pl.Unsupported
	}
	if len(pl.A) == 1 && len(pl.B) == 1 && pl.A[0] == pl.B[0] {
		return fmt.Sprintf("%s spins: both workers on CPU %d would each spin out the other's time slice; it needs two CPUs (cross-cpu, or unpinned)", row.Name, pl.A[0])
	}
	return ""
}
