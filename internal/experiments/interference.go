package experiments

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"golang.org/x/sys/unix"
)

// interference: a latency-sensitive handoff runs while H CPU hogs are busy
// (SPEC §5.5). The tail, not the median, is the finding: it piles up at a
// scheduling quantum, which the arm's notes name.
func init() {
	exp.Register(&interferenceExp{exp.Spec{
		Name:       "interference",
		Order:      50,
		References: interferenceRefs,
		Summary:    "tail latency of a wake-up while CPU hogs run, and the scheduling quantum behind it",
		Op:         "wake-up (each arm says which)",
		OpLabels:   []exp.OpLabel{{Label: "mstimersleep", Has: "timer"}, {Label: "roundtrip", Has: "futex"}, {Label: "roundtrip", Has: "procpipe"}, {Label: "roundtrip", Has: "pythread"}, {Label: "roundtrip", Has: "pytask"}},
		Doc: `A latency-sensitive worker is woken while H hogs burn CPU (--hogs, default
0,1; full suite 0,1,2,6). Shapes:
  timer     a goroutine sleeping 1 ms; latency = the wake delay beyond the 1 ms
  netpoll   a goroutine woken through the netpoller by a request on a pipe from a
            child client (one request outstanding, 200 µs think time);
            latency = the child's CLOCK_MONOTONIC stamp to our receipt
  chanpair  a goroutine pair over a channel; op = a burst of 100 round trips
  futex     two locked threads over a raw futex, all on one CPU with the hogs
  procpipe  two processes over a pipe, all on one CPU with process hogs
  starve    the timer shape inside a child ctxlab with GODEBUG=asyncpreemptoff=1
            and GOMAXPROCS=1: a spinning hog is never preempted, the arm ends
            "timed out" (a result, not a hang)
Hogs: goroutine (holds a P), thread (locked; still holds a P), process
(kernel only); kinds spin, stream (over a buffer > LLC), gosched (spin with
runtime.Gosched()). Arm names: shape/placement-kind/hogs=H/gomaxprocs=G.
The fixes sit beside the bad case: hogs in a process, GOMAXPROCS above the
hog count, Gosched in the hog. Each arm's notes name the quantum its
latencies pile up at (Go's 10 ms sysmon preemption, the kernel slice, the
CONFIG_HZ tick) or say that none fits; Go's own /sched/latencies over the
arm is shown beside ctxlab's samples.
CPython: a thread (pythread) or asyncio (pytask) round trip while B busy
pure-Python threads run (busy=B from --hogs, default 0,1), at the default GIL
switch interval and at 0.5 ms (si=), unpinned and with the two threads on
two CPUs (cross-cpu). Arm names: pythread/simplequeue/busy=B/si=S[/cross-cpu].
The remedy beside each unpinned busy arm: the same pure-Python spin in
B forked child processes instead of threads (…/busy=B/si=S/in=process).
` + cpythonDoc,
		Arms:     withCPython(interferenceArms, interferencePyPlan),
		Checks:   cpythonChecks(interferenceChecks, interferencePyChecks),
		Findings: cpythonFindings(interferenceFindings, interferencePyFindings),
		Metrics:  append(append([]exp.Metric(nil), interferenceMetrics...), cpythonMetrics...),
	}})
	child.Register("starve", starveChild)
	child.Register("client", clientChild)
}

// interferenceExp is interference with its hooks: its verdict lines, the
// arms that run hogs (no cost per switch) and serve's probe.
type interferenceExp struct{ exp.Spec }

var _ interface {
	exp.Verdicter
	exp.Hogger
	exp.Prober
} = (*interferenceExp)(nil)

func (*interferenceExp) Verdict(v *exp.VerdictRun) []exp.VerdictSection {
	return interferenceVerdict(v)
}

func (*interferenceExp) Hogged(a result.Arm) bool { return interferenceHogged(a) }

// Probes: a round trip sharing its CPU with a spinning process: the
// kernel's slice shows in the tail, and differs between kernels and hosts.
func (*interferenceExp) Probes() []string {
	return names(ifKey(shapeFutex, hogProcess+"-"+hogSpin, 1, 2))
}

// Shapes of the latency-sensitive side.
const (
	shapeTimer    = "timer"
	shapeNetpoll  = "netpoll"
	shapeChanPair = "chanpair"
	shapeFutex    = "futex"
	shapeProcPipe = "procpipe"
	shapeStarve   = "starve"
)

// Sizes of the shapes.
const (
	timerDelay   = time.Millisecond       // requested sleep of the timer shape
	clientThink  = 200 * time.Microsecond // the netpoll client's pause between requests
	pairBurst    = 100                    // round trips per chanpair op
	starveAfter  = 20                     // measured samples before the starving hog starts
	starveLimit  = 3 * time.Second        // the starvation arm's time limit
	hogStartMark = ^uint64(0)             // the starve child's "hog started" message
)

var shapeOps = map[string]string{
	shapeTimer:    "1 ms timer sleep (percentiles: wake delay beyond the 1 ms)",
	shapeNetpoll:  "request from a child client over a pipe (percentiles: the wake-up delay, stamp to receipt)",
	shapeChanPair: "burst of 100 channel round trips",
	shapeFutex:    "futex round trip between two locked threads on one CPU",
	shapeProcPipe: "pipe round trip between two processes on one CPU",
	shapeStarve:   "1 ms timer sleep in a child (percentiles: wake delay beyond the 1 ms)",
}

// ifArm is one planned configuration.
type ifArm struct {
	shape      string
	hog        hogSpec
	gmp        int
	quick      bool
	preemptOff bool // starve: GODEBUG=asyncpreemptoff=1 in the child
}

// ifKey is a Go arm's key: its shape, hog ("none", "process-spin" …),
// hog count and GOMAXPROCS: interference/timer/goroutine-spin/hogs=1/gomaxprocs=1.
func ifKey(shape, hog string, hogs, gmp int) exp.ArmKey {
	return exp.Key("interference", exp.Seg(shape), exp.Seg(hog), exp.KV("hogs", hogs), exp.KV("gomaxprocs", gmp))
}

// hogName is what a hog is called in names and params: "none" without
// one, else placement-kind ("goroutine-spin").
func (s hogSpec) hogName() string {
	if s.N > 0 {
		return s.Place + "-" + s.Kind
	}
	return "none"
}

func (a ifArm) key() exp.ArmKey {
	k := ifKey(a.shape, a.hog.hogName(), a.hog.N, a.gmp)
	if a.preemptOff {
		k = k.With(exp.Seg("asyncpreemptoff"))
	}
	return k
}

func (a ifArm) name() string { return a.key().String() }

// defaultHogs are the hog counts of each suite when --hogs is not given.
func defaultHogs(suite string) []int {
	if suite == exp.SuiteFull {
		return []int{0, 1, 2, 6}
	}
	return []int{0, 1}
}

// planInterference lists the arms of a suite (pure: no I/O).
func planInterference(suite string, hogs []int, allCPUs int) []ifArm {
	full := suite == exp.SuiteFull
	var out []ifArm
	seen := map[string]bool{}
	add := func(a ifArm) {
		if !seen[a.name()] {
			seen[a.name()] = true
			out = append(out, a)
		}
	}
	h := func(n int, place, kind string) hogSpec { return hogSpec{N: n, Place: place, Kind: kind} }
	goShapes := []string{shapeTimer, shapeNetpoll, shapeChanPair}
	for _, s := range goShapes {
		for _, n := range hogs {
			if n == 0 {
				add(ifArm{shape: s, gmp: 1, quick: s != shapeNetpoll})
				continue
			}
			one := n == 1
			// The bad case and the three fixes beside it.
			add(ifArm{shape: s, hog: h(n, hogGoroutine, hogSpin), gmp: 1, quick: one && s != shapeNetpoll})
			add(ifArm{shape: s, hog: h(n, hogProcess, hogSpin), gmp: 1, quick: one && s == shapeTimer})
			add(ifArm{shape: s, hog: h(n, hogGoroutine, hogSpin), gmp: n + 1, quick: one && s == shapeTimer})
			add(ifArm{shape: s, hog: h(n, hogGoroutine, hogGosched), gmp: 1})
			if full {
				if allCPUs > 1 && allCPUs != n+1 {
					add(ifArm{shape: s, hog: h(n, hogGoroutine, hogSpin), gmp: allCPUs})
				}
				add(ifArm{shape: s, hog: h(n, hogThread, hogSpin), gmp: 1})
				add(ifArm{shape: s, hog: h(n, hogGoroutine, hogStream), gmp: 1})
				add(ifArm{shape: s, hog: h(n, hogProcess, hogStream), gmp: 1})
			}
		}
	}
	for _, n := range hogs {
		if n == 0 {
			add(ifArm{shape: shapeFutex, gmp: 2})
			add(ifArm{shape: shapeProcPipe, gmp: 2})
			continue
		}
		// A spinning locked thread holds a P: leave the pair two of their own.
		add(ifArm{shape: shapeFutex, hog: h(n, hogThread, hogSpin), gmp: n + 2})
		add(ifArm{shape: shapeFutex, hog: h(n, hogProcess, hogSpin), gmp: 2})
		add(ifArm{shape: shapeProcPipe, hog: h(n, hogProcess, hogSpin), gmp: 2})
		if full {
			add(ifArm{shape: shapeFutex, hog: h(n, hogThread, hogStream), gmp: n + 2})
			add(ifArm{shape: shapeProcPipe, hog: h(n, hogProcess, hogStream), gmp: 2})
		}
	}
	add(ifArm{shape: shapeStarve, hog: h(1, hogGoroutine, hogSpin), gmp: 1, preemptOff: true})
	add(ifArm{shape: shapeStarve, hog: h(1, hogGoroutine, hogGosched), gmp: 1, preemptOff: true})
	if suite == exp.SuiteQuick {
		var q []ifArm
		for _, a := range out {
			if a.quick {
				q = append(q, a)
			}
		}
		return q
	}
	return out
}

// checkHogs refuses hog counts the machine cannot hold, before anything starts.
// Process hogs of the stream kind (full suite) each hold a buffer of buf
// bytes; every hog process also needs its own runtime.
func checkHogs(hogs []int, h *sysinfo.Host, buf int64) error {
	for _, n := range hogs {
		if n < 0 {
			return fmt.Errorf("--hogs %d: must be 0 or more", n)
		}
		if h == nil {
			continue
		}
		// Each hog is a thread or a process; leave most of the system's
		// room to everything else.
		if h.ThreadsMax > 0 && int64(n) > h.ThreadsMax/8 {
			return fmt.Errorf("--hogs %d: at most %d hogs here (1/8 of threads-max %d)", n, h.ThreadsMax/8, h.ThreadsMax)
		}
		if h.NprocLimit > 0 && int64(n) > h.NprocLimit/4 {
			return fmt.Errorf("--hogs %d: at most %d hogs here (1/4 of RLIMIT_NPROC %d)", n, h.NprocLimit/4, h.NprocLimit)
		}
		const perProc = 16 << 20 // a ctxlab child's own footprint, generously
		if h.MemAvailableB > 0 && int64(n)*(buf+perProc) > h.MemAvailableB/2 {
			return fmt.Errorf("--hogs %d: %d hog processes of %s each need more than half the available memory (%s)",
				n, n, result.FormatValue(float64(buf+perProc), "bytes"), result.FormatValue(float64(h.MemAvailableB), "bytes"))
		}
	}
	return nil
}

func interferenceArms(p exp.Params) ([]exp.Arm, error) {
	hogs := p.Hogs
	if hogs == nil {
		hogs = defaultHogs(p.Suite)
	}
	var llc int64 = 32 << 20
	if p.Host != nil {
		llc = p.Host.LLCBytes()
	}
	buf := 2 * llc
	perHog := int64(0)
	if p.Suite == exp.SuiteFull {
		perHog = buf // the full suite has stream hogs in processes
	}
	if err := checkHogs(hogs, p.Host, perHog); err != nil {
		return nil, err
	}
	unp := exp.Unpinned(p)
	c0 := []int{p.CPUs[0]}
	var arms []exp.Arm
	for _, a := range planInterference(p.Suite, hogs, len(p.CPUs)) {
		a := a
		a.hog.BufBytes = buf
		// Go's preemption can only explain a wait where a hog holds a P.
		inProcess := a.hog.N > 0 && (a.hog.Place == hogGoroutine || a.hog.Place == hogThread)
		goShape := a.shape == shapeTimer || a.shape == shapeNetpoll || a.shape == shapeChanPair || a.shape == shapeStarve
		qs, qnote := quantaFor(p.Host, goShape && inProcess)
		arm := exp.Arm{
			Name: a.name(), Substrate: "goroutine", Mechanism: a.shape, Op: shapeOps[a.shape],
			Params: map[string]string{"shape": a.shape, "hogs": strconv.Itoa(a.hog.N),
				"gomaxprocs": strconv.Itoa(a.gmp), "hog": a.hog.hogName()},
			GOMAXPROCS: a.gmp, Placement: unp.Name, CPUs: unp.Process, Quick: a.quick,
		}
		switch a.shape {
		case shapeTimer, shapeNetpoll:
			// Few ops per repetition (ms each under a hog): more repetitions.
			arm.Reps = repsFor(p.Suite)
		case shapeFutex, shapeProcPipe:
			arm.Substrate = "thread"
			if a.shape == shapeProcPipe {
				arm.Substrate = "process"
			}
			arm.Placement, arm.CPUs = "same-cpu", c0
			a.hog.CPUs = c0
		case shapeStarve:
			arm.Params["child"] = "GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1"
			if a.hog.Kind == hogSpin {
				arm.Timeout = starveLimit
			}
		}
		arm.Open = func(ctx context.Context) (exp.Bench, error) {
			return openInterference(ctx, a, qs, qnote, c0)
		}
		arms = append(arms, arm)
	}
	return arms, nil
}

func repsFor(suite string) int {
	switch suite {
	case exp.SuiteQuick:
		return 10
	case exp.SuiteFull:
		return 5
	}
	return 5
}

// clientChild is the "client" child role: fd 3 carries requests (a
// CLOCK_MONOTONIC stamp each), fd 4 the parent's acks. Between an ack and
// the next request it sleeps the think time (args[0], ns) in the kernel.
func clientChild(args []string, files []*os.File) int {
	think, err := childArgs("client", "think time and two fds", args, files, 1, 2, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	runtime.LockOSThread()
	out, in := int(files[0].Fd()), int(files[1].Fd())
	ts := unix.NsecToTimespec(think[0])
	var b, ack [8]byte
	for {
		unix.Nanosleep(&ts, nil)
		binary.LittleEndian.PutUint64(b[:], uint64(measure.MonoNow()))
		if _, err := unix.Write(out, b[:]); err != nil {
			return 0 // the parent is gone
		}
		if n, err := unix.Read(in, ack[:]); err != nil || n == 0 {
			return 0
		}
	}
}

// starveChild is the "starve" child role: fd 3 carries wake delays (8 bytes
// each) to the parent, fd 4 carries the parent's "start the hogs" byte.
// Args: hog count, hog kind.
func starveChild(args []string, files []*os.File) int {
	hogs, err := childArgs("starve", "hog count, hog kind and two fds", args, files, 2, 2, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n := int(hogs[0])
	out, ctl := files[0], files[1]
	var mu sync.Mutex
	write := func(v uint64) error {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		mu.Lock()
		defer mu.Unlock()
		_, err := out.Write(b[:])
		return err
	}
	go func() {
		var one [1]byte
		if _, err := ctl.Read(one[:]); err != nil {
			return
		}
		if write(hogStartMark) != nil {
			return
		}
		var never atomic.Bool
		for i := 0; i < n; i++ {
			go hogLoop(&never, args[1], nil)
		}
	}()
	for {
		t := measure.Now()
		time.Sleep(timerDelay)
		if write(uint64(max(0, measure.Now()-t-int64(timerDelay)))) != nil {
			return 0 // the parent is gone
		}
	}
}

// interferenceHogged: an arm with CPU hogs beside its workers — Go or
// process hogs (hogs=N), or busy pure-Python threads (busy=N) beside a
// CPython pair.
func interferenceHogged(a result.Arm) bool {
	for _, k := range []string{"hogs", "busy"} {
		if h := a.Params[k]; h != "" && h != "0" {
			return true
		}
	}
	return false
}
