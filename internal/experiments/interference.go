package experiments

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/quantum"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"golang.org/x/sys/unix"
)

// interference: a latency-sensitive handoff runs while H CPU hogs are busy
// (SPEC §5.5). The tail, not the median, is the finding: it piles up at a
// scheduling quantum, which the arm's notes name.
func init() {
	exp.Register(&exp.Spec{
		Name:       "interference",
		Order:      50,
		References: interferenceRefs,
		Verdict:    interferenceVerdict,
		Hogged:     interferenceHogged,
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
		// A round trip sharing its CPU with a spinning process: the kernel's
		// slice shows in the tail, and differs between kernels and hosts.
		Probes: []string{"interference/futex/process-spin/hogs=1/gomaxprocs=2"},
	})
	child.Register("starve", starveChild)
	child.Register("client", clientChild)
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

func (a ifArm) name() string {
	hp := "none"
	if a.hog.N > 0 {
		hp = a.hog.Place + "-" + a.hog.Kind
	}
	n := fmt.Sprintf("interference/%s/%s/hogs=%d/gomaxprocs=%d", a.shape, hp, a.hog.N, a.gmp)
	if a.preemptOff {
		n += "/asyncpreemptoff"
	}
	return n
}

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

// configHZ is the kernel's tick rate, read once (it means decompressing
// /proc/config.gz).
var configHZ struct {
	once sync.Once
	hz   int
	err  error
}

// quantaFor lists the quanta that can explain a pile on host h: Go's
// preemption first when a hog holds a P (goShape), then the kernel slice
// and the tick. note says what had to be assumed or is unknown.
func quantaFor(h *sysinfo.Host, goShape bool) (qs []quantum.Quantum, note string) {
	var notes []string
	if goShape {
		qs = append(qs, quantum.GoPreemption())
	}
	if h != nil {
		sched := h.Scheduler
		switch {
		case h.SchedSliceNs > 0:
			qs = append(qs, quantum.KernelSlice(h.SchedSliceNs, sched, "read from the kernel"))
		default:
			if sched == "" {
				sched = "EEVDF"
				notes = append(notes, "scheduler unknown, EEVDF assumed")
			}
			qs = append(qs, quantum.KernelSlice(quantum.DefaultSliceNs(len(h.OnlineCPUs)), sched, sched+" default"))
		}
	}
	configHZ.once.Do(func() { configHZ.hz, _, configHZ.err = sysinfo.ConfigHZ() })
	if configHZ.err == nil {
		qs = append(qs, quantum.Tick(configHZ.hz))
	} else {
		notes = append(notes, "timer tick unknown ("+configHZ.err.Error()+")")
	}
	return qs, strings.Join(notes, "; ")
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
				"gomaxprocs": strconv.Itoa(a.gmp), "hog": "none"},
			GOMAXPROCS: a.gmp, Placement: unp.Name, CPUs: unp.Process, Quick: a.quick,
		}
		if a.hog.N > 0 {
			arm.Params["hog"] = a.hog.Place + "-" + a.hog.Kind
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

// errClosed ends a Run that Close has interrupted.
var errClosed = errors.New("interference: closed")

// ifBench is an opened interference arm: a shape, the hogs, and what the
// annotations need.
type ifBench struct {
	arm      ifArm
	run      func(b *measure.B) error
	closeFn  func() error
	hogs     *hogSet
	quanta   []quantum.Quantum
	qnote    string
	closed   atomic.Bool
	mu       sync.Mutex // orders hand-overs to a partner thread before Close
	once     sync.Once
	closeErr error
	// parts are who does the ops: set by each shape's open.
	parts exp.Participants

	// starve shape only
	// starveAt is the timed samples after which the child starts its hog:
	// set by StartTimed (0 until the timed repetitions begin).
	starveAt      atomic.Int64
	starveSamples int
	hogAfter      int // samples before the child said its hog started (-1 = never)
}

const schedMetric = "/sched/latencies:seconds"

// StartTimed implements exp.TimedPhase: the starve shape's hog starts
// after a few timed samples of the first repetition (half of it at most),
// so the figures hold both the unstarved and the starved timer.
func (x *ifBench) StartTimed(opsPerRep int) {
	if x.arm.shape == shapeStarve {
		x.starveAt.Store(int64(max(1, min(starveAfter, opsPerRep/2))))
	}
}

func openInterference(ctx context.Context, a ifArm, qs []quantum.Quantum, qnote string, c0 []int) (exp.Bench, error) {
	x := &ifBench{arm: a, quanta: qs, qnote: qnote, hogAfter: -1, parts: exp.WholeProcess()}
	var err error
	switch a.shape {
	case shapeStarve:
		err = x.openStarve(ctx)
		if err != nil {
			return nil, err
		}
		return x, nil // its hog lives in the child
	case shapeTimer:
		x.run, x.closeFn = x.runTimer, func() error { return nil }
	case shapeNetpoll:
		err = x.openNetpoll(ctx)
	case shapeChanPair:
		err = x.openChanPair()
	case shapeFutex:
		err = x.openFutex(c0)
	case shapeProcPipe:
		err = x.openProcPipe(ctx, c0)
	default:
		err = fmt.Errorf("unknown shape %q", a.shape)
	}
	if err != nil {
		return nil, err
	}
	x.hogs, err = startHogs(ctx, a.hog)
	if err != nil {
		x.closeFn()
		return nil, err
	}
	return x, nil
}

func (x *ifBench) Run(b *measure.B) error { return x.run(b) }

// Close stops the shape (unblocking a Run stuck behind a hog), then the
// hogs, and waits for all of them. Safe from any goroutine, more than once.
func (x *ifBench) Close() error {
	x.once.Do(func() {
		x.mu.Lock()
		x.closed.Store(true)
		x.mu.Unlock()
		x.closeErr = x.closeFn()
		if x.hogs != nil {
			x.hogs.Stop()
		}
	})
	return x.closeErr
}

// Participants are the measured workers: the whole process for goroutine
// shapes, the two threads of the futex pair, plus the measured partner
// process. Hog processes and threads are left out so their own switches
// do not count as the op's (goroutine hogs share the process).
func (x *ifBench) Participants() exp.Participants { return x.parts }

// runTimer: op = time.Sleep(1 ms); latency = how late the goroutine ran.
func (x *ifBench) runTimer(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		if x.closed.Load() {
			return errClosed
		}
		t := b.S.Start(i)
		time.Sleep(timerDelay)
		b.S.StopLess(t, int64(timerDelay))
	}
	return nil
}

// openNetpoll: a child plays a client with one request outstanding: it
// waits clientThink, stamps CLOCK_MONOTONIC (shared by all processes) into
// an 8-byte request and waits for our ack. We read requests through an
// *os.File, so between requests our goroutine is parked in the netpoller,
// as a service's handler is. Latency = our receipt − the child's stamp.
func (x *ifBench) openNetpoll(ctx context.Context) error {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return err
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return err
	}
	proc, err := child.Start(ctx, child.Options{Role: "client", Args: []string{strconv.FormatInt(int64(clientThink), 10)},
		Files: []*os.File{reqW, ackR}})
	reqW.Close() // the child has its copies
	ackR.Close()
	if err != nil {
		reqR.Close()
		ackW.Close()
		return err
	}
	var rbuf, ack [8]byte
	x.parts.PIDs = []int{proc.PID()}
	// One request before timing: the child's start-up is not an op.
	_, err = io.ReadFull(reqR, rbuf[:])
	if err == nil {
		_, err = ackW.Write(ack[:])
	}
	if err != nil {
		proc.Kill()
		reqR.Close()
		ackW.Close()
		return fmt.Errorf("client child: %w", err)
	}
	x.run = func(b *measure.B) error {
		for i := 0; i < b.N; i++ {
			if x.closed.Load() {
				return errClosed
			}
			if _, err := io.ReadFull(reqR, rbuf[:]); err != nil {
				return err
			}
			b.S.SinceMono(b.S.Start(i), int64(binary.LittleEndian.Uint64(rbuf[:])))
			if _, err := ackW.Write(ack[:]); err != nil {
				return err
			}
		}
		return nil
	}
	x.closeFn = func() error {
		proc.Kill()
		reqR.Close()
		ackW.Close()
		return nil
	}
	return nil
}

// clientChild is the "client" child role: fd 3 carries requests (a
// CLOCK_MONOTONIC stamp each), fd 4 the parent's acks. Between an ack and
// the next request it sleeps the think time (args[0], ns) in the kernel.
func clientChild(args []string, files []*os.File) int {
	if len(args) != 1 || len(files) < 2 {
		fmt.Fprintln(os.Stderr, "client child: want think time and two fds")
		return 2
	}
	think, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client child:", err)
		return 2
	}
	runtime.LockOSThread()
	out, in := int(files[0].Fd()), int(files[1].Fd())
	ts := unix.NsecToTimespec(think)
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

// openChanPair: the runner's goroutine and an echoing goroutine over an
// unbuffered channel; one op is a burst of round trips, so a stall of one
// quantum shows in the op's latency however rarely it strikes.
func (x *ifBench) openChanPair() error {
	pair, err := mech.NewPair("chan")
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- mech.Echo(pair.B) }()
	x.run = func(b *measure.B) error {
		for i := 0; i < b.N; i++ {
			t := b.S.Start(i)
			for k := 0; k < pairBurst; k++ {
				if err := pair.A.Send(uint64(k)); err != nil {
					return err
				}
				if _, err := pair.A.Recv(); err != nil {
					return err
				}
			}
			b.S.Stop(t)
		}
		return nil
	}
	x.closeFn = func() error {
		pair.Stop()
		err := <-done
		pair.Close()
		return err
	}
	return nil
}

// openFutex: pingpong's thread pair over a raw futex, both threads on CPU c0.
func (x *ifBench) openFutex(c0 []int) error {
	bench, err := openThreadPair("futex", exp.Placement{Name: "same-cpu", Process: c0, A: c0, B: c0})
	if err != nil {
		return err
	}
	tp := bench.(*threadPair)
	x.parts = tp.Participants()
	x.run = func(b *measure.B) error {
		var err error
		if e := x.onThread(tp.a, func() {
			b.ResetTimer()
			err = mech.RoundTrips(tp.pair.A, b.N, b.S)
		}); e != nil {
			return e
		}
		return err
	}
	x.closeFn = tp.Close
	return nil
}

// openProcPipe: pingpong's process pair over a pipe, both ends on CPU c0.
func (x *ifBench) openProcPipe(ctx context.Context, c0 []int) error {
	bench, err := openProcessPair(ctx, "pipe", exp.Placement{Name: "same-cpu", Process: c0, A: c0, B: c0})
	if err != nil {
		return err
	}
	pp := bench.(*processPair)
	// One round trip before timing: the child's start-up is not an op.
	pp.a.Do(func() {
		if err = pp.ep.Send(0); err == nil {
			_, err = pp.ep.Recv()
		}
	})
	if err != nil {
		pp.Close()
		return fmt.Errorf("echo child: %w", err)
	}
	x.run = func(b *measure.B) error {
		var err error
		if e := x.onThread(pp.a, func() {
			b.ResetTimer()
			err = mech.RoundTrips(pp.ep, b.N, b.S)
		}); e != nil {
			return e
		}
		return err
	}
	x.parts = pp.Participants()
	x.closeFn = pp.Close
	return nil
}

// onThread runs f on t and waits, unless Close has begun: the hand-over
// to t happens under x.mu, so Close (which stops t, closing its request
// channel) can never race a new hand-over.
func (x *ifBench) onThread(t *mech.Thread, f func()) error {
	x.mu.Lock()
	if x.closed.Load() {
		x.mu.Unlock()
		return errClosed
	}
	fin, err := t.Go(f)
	x.mu.Unlock()
	if err != nil {
		return err
	}
	<-fin
	return nil
}

// openStarve starts the timer shape inside a child ctxlab with GOMAXPROCS=1
// (and GODEBUG=asyncpreemptoff=1 for the child only); the child streams each
// wake delay back over a pipe. After starveAfter measured samples (fewer
// if a repetition is shorter) we tell it
// to start its hog; with asynchronous preemption off, a spinning hog then
// never lets the timer goroutine run again, and the arm times out.
func (x *ifBench) openStarve(ctx context.Context) error {
	dataR, dataW, err := os.Pipe()
	if err != nil {
		return err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		dataR.Close()
		dataW.Close()
		return err
	}
	env := []string{"GOMAXPROCS=1"}
	if x.arm.preemptOff {
		env = append(env, "GODEBUG=asyncpreemptoff=1")
	}
	proc, err := child.Start(ctx, child.Options{Role: "starve", Env: env,
		Args:  []string{strconv.Itoa(x.arm.hog.N), x.arm.hog.Kind},
		Files: []*os.File{dataW, ctlR}})
	dataW.Close()
	ctlR.Close()
	if err != nil {
		dataR.Close()
		ctlW.Close()
		return err
	}
	var rbuf [8]byte
	measured := 0
	told := false
	// The timer goroutine and its hog live in the child.
	x.parts = exp.Participants{PIDs: []int{proc.PID()}}
	// The first wake-up proves the child is up, so its start-up is not
	// taken for an op by the runner's warm-up.
	if _, err := io.ReadFull(dataR, rbuf[:]); err != nil {
		proc.Kill()
		dataR.Close()
		ctlW.Close()
		return fmt.Errorf("starve child: %w", err)
	}
	x.run = func(b *measure.B) error {
		after := int(x.starveAt.Load())
		for i := 0; i < b.N; {
			if _, err := io.ReadFull(dataR, rbuf[:]); err != nil {
				if x.closed.Load() {
					return errClosed
				}
				return fmt.Errorf("starve child: %w", err)
			}
			v := binary.LittleEndian.Uint64(rbuf[:])
			if v == hogStartMark {
				x.hogAfter = x.starveSamples
				continue
			}
			x.starveSamples++
			if b.S.Start(i) != 0 {
				b.S.Record(int64(v))
				measured++
			}
			if after > 0 && measured >= after && !told {
				told = true
				if _, err := ctlW.Write([]byte{1}); err != nil {
					return err
				}
			}
			i++
		}
		return nil
	}
	x.closeFn = func() error {
		proc.Kill()
		dataR.Close()
		ctlW.Close()
		return nil
	}
	return nil
}

// starveChild is the "starve" child role: fd 3 carries wake delays (8 bytes
// each) to the parent, fd 4 carries the parent's "start the hogs" byte.
// Args: hog count, hog kind.
func starveChild(args []string, files []*os.File) int {
	if len(args) != 2 || len(files) < 2 {
		fmt.Fprintln(os.Stderr, "starve child: want hog count, hog kind and two fds")
		return 2
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "starve child:", err)
		return 2
	}
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

// Analyze adds Go's own scheduling latencies over the timed repetitions
// and the quantum readings of the sampled latencies, both as the runner
// recorded them.
func (x *ifBench) Analyze(rec *exp.Record, r *result.Arm) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	if r.Median > 0 {
		r.Metrics["throughput-ops/s"] = 1e9 / r.Median
	}
	if x.arm.shape == shapeStarve {
		x.annotateStarve(r)
	}
	if rec.SchedLatencies != nil {
		r.Metrics["go-sched-wakeups"] = 0
		if s, ok := summarizeHist(rec.SchedLatencies); !ok {
			r.Notes = append(r.Notes, "Go runtime "+schedMetric+": no goroutine wait was sampled over the arm (the runtime samples 1 in 8)")
		} else {
			r.Metrics["go-sched-latency-p50-ns"] = s.p50
			r.Metrics["go-sched-latency-p99-ns"] = s.p99
			r.Metrics["go-sched-latency-max-ns"] = s.max
			r.Metrics["go-sched-wakeups"] = float64(s.n)
			if x.arm.hog.N > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("Go runtime %s over the timed repetitions (every goroutine in ctxlab): p50 ≤ %s, p99 ≤ %s, max < %s over %d waits",
					schedMetric, result.FormatNs(s.p50), result.FormatNs(s.p99), result.FormatNs(s.max), s.n))
			}
		}
	}
	sorted := rec.Samples
	if len(sorted) == 0 {
		return
	}
	cl := quantum.Detect(sorted, x.quanta, quantum.Options{})
	r.Metrics["latency-clusters"] = float64(len(cl))
	// Where p50 sits: in a pile named after Go's preemption, or — when the
	// samples are too few or too smeared for a pile — at a value that is.
	p50 := sorted[(len(sorted)-1)/2]
	r.Metrics["p50-in-pile"] = 0
	for _, c := range cl {
		if p50 >= c.LowNs && p50 <= c.HighNs {
			r.Metrics["p50-in-pile"] = 1
			if c.Cause != nil && c.Cause.Quantum.Name == quantum.GoPreemption().Name {
				r.Metrics["p50-go-preempt-periods"] = float64(c.Cause.Multiple)
			}
		}
	}
	if m := quantum.Name(p50, x.quanta); r.Metrics["p50-in-pile"] == 0 && m != nil && m.Quantum.Name == quantum.GoPreemption().Name {
		r.Metrics["p50-go-preempt-periods"] = float64(m.Multiple)
		r.Notes = append(r.Notes, fmt.Sprintf("p50 %s (in no pile): %s", result.FormatNs(float64(p50)), m.Reading()))
	}
	// Ops that lost at least one whole preemption period: a rare stall
	// shows here even when the max itself is pushed further by noise.
	goQ := []quantum.Quantum{quantum.GoPreemption()}
	if len(x.quanta) > 0 && x.quanta[0].Name == goQ[0].Name {
		n := 0
		for i := len(sorted) - 1; i >= 0 && sorted[i] >= quantum.GoPreemptNs*3/4; i-- {
			if quantum.Name(sorted[i], goQ) != nil {
				n++
			}
		}
		r.Metrics["go-preempt-samples"] = float64(n)
	}
	if m := quantum.Name(sorted[len(sorted)-1], x.quanta); m != nil {
		if m.Quantum.Name == quantum.GoPreemption().Name {
			r.Metrics["max-go-preempt-periods"] = float64(m.Multiple)
		}
		if len(cl) == 0 || sorted[len(sorted)-1] > cl[len(cl)-1].HighNs {
			r.Notes = append(r.Notes, fmt.Sprintf("max %s: %s", result.FormatNs(float64(sorted[len(sorted)-1])), m.Reading()))
		}
	}
	// The biggest clusters that matter (a usual percentile sits in them, or
	// they hold ≥ 1 % of the samples), in order of location.
	var top []quantum.Cluster
	for _, c := range cl {
		if c.Where(sorted) != "" || c.Fraction >= 0.01 {
			top = append(top, c)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].Count > top[j].Count })
	if len(top) > 3 {
		top = top[:3]
	}
	sort.Slice(top, func(i, j int) bool { return top[i].MedianNs < top[j].MedianNs })
	for _, c := range top {
		r.Notes = append(r.Notes, c.Describe(sorted))
	}
	if len(cl) == 0 && x.arm.hog.N > 0 {
		r.Notes = append(r.Notes, "no pile of 3 or more samples above 0.5 ms")
	}
	if x.qnote != "" && len(cl) > 0 {
		r.Notes = append(r.Notes, "quanta: "+x.qnote)
	}
}

func (x *ifBench) annotateStarve(r *result.Arm) {
	r.Metrics["starve-samples"] = float64(x.starveSamples)
	if x.hogAfter < 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d wake-ups arrived; the hog never started", x.starveSamples))
		return
	}
	after := x.starveSamples - x.hogAfter
	r.Metrics["starve-samples-after-hog"] = float64(after)
	msg := fmt.Sprintf("the child's %s hog started after %d wake-ups; %d more arrived after it", x.arm.hog.Kind, x.hogAfter, after)
	if r.Status == result.StatusTimedOut {
		msg += ", then none until the limit: with GODEBUG=asyncpreemptoff=1 and GOMAXPROCS=1 nothing preempts a spinning goroutine, so the timer goroutine never ran again; child and hog were killed"
	}
	r.Notes = append(r.Notes, msg)
}

type histSummary struct {
	p50, p99, max float64
	n             uint64
}

// summarizeHist reads a runtime/metrics histogram (a delta the runner
// recorded) as upper bucket bounds (ns).
func summarizeHist(b *metrics.Float64Histogram) (histSummary, bool) {
	if len(b.Buckets) != len(b.Counts)+1 {
		return histSummary{}, false
	}
	d := b.Counts
	var n uint64
	for _, c := range d {
		n += c
	}
	if n == 0 {
		return histSummary{}, false
	}
	bound := func(i int) float64 {
		hi := b.Buckets[i+1]
		if hi > 1e9 || hi != hi { // +Inf or NaN: use the lower bound
			hi = b.Buckets[i]
		}
		return hi * 1e9
	}
	q := func(f float64) float64 {
		want := uint64(f*float64(n) + 0.999999)
		var c uint64
		for i, v := range d {
			c += v
			if c >= want && v > 0 {
				return bound(i)
			}
		}
		return bound(len(d) - 1)
	}
	s := histSummary{p50: q(0.5), p99: q(0.99), n: n}
	for i := len(d) - 1; i >= 0; i-- {
		if d[i] > 0 {
			s.max = bound(i)
			break
		}
	}
	return s, true
}

// interferenceMetrics declares the figures interference arms add beside the median.
var interferenceMetrics = []exp.Metric{
	{Name: "throughput-ops/s", Unit: "ops", Better: exp.HigherIsBetter, Doc: "ops per second (1 / mean)"},
	{Name: "go-sched-wakeups", Unit: "wakeups", Better: exp.NotRanked, Doc: "goroutine waits counted by the Go runtime's /sched/latencies over the arm"},
	{Name: "go-sched-latency-p50-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the runtime's /sched/latencies p50 (upper bucket bound)"},
	{Name: "go-sched-latency-p99-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the runtime's /sched/latencies p99 (upper bucket bound)"},
	{Name: "go-sched-latency-max-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the runtime's /sched/latencies max (upper bucket bound)"},
	{Name: "latency-clusters", Unit: "clusters", Better: exp.NotRanked, Doc: "piles of samples the quantum detector found"},
	{Name: "p50-in-pile", Unit: "flag", Better: exp.NotRanked, Doc: "1 when the p50 sits inside a pile (a quantum sets the typical latency)"},
	{Name: "p50-go-preempt-periods", Unit: "periods", Better: exp.LowerIsBetter, Doc: "the p50's pile as a multiple of Go's 10 ms preemption period"},
	{Name: "max-go-preempt-periods", Unit: "periods", Better: exp.LowerIsBetter, Doc: "the max as a multiple of Go's 10 ms preemption period"},
	{Name: "go-preempt-samples", Unit: "samples", Better: exp.LowerIsBetter, Doc: "samples that stalled a whole number of Go preemption periods"},
	{Name: "starve-samples", Unit: "samples", Better: exp.NotRanked, Doc: "wake-ups that arrived in a starvation arm"},
	{Name: "starve-samples-after-hog", Unit: "samples", Better: exp.NotRanked, Doc: "of those, wake-ups after the hog started"},
}

// interferencePyPlan is a CPython round trip beside busy pure-Python
// threads, at two GIL switch intervals (SPEC §5.9).
func interferencePyPlan(p exp.Params) []pyArm {
	// A busy thread makes each thread round trip wait for the switch
	// interval: size repetitions by round trips, not only by time.
	busyOps := map[string]int{exp.SuiteQuick: 20, exp.SuiteDefault: 100, exp.SuiteFull: 300}[p.Suite]
	if busyOps == 0 {
		busyOps = 100
	}
	busies := []int{0, 1}
	if p.Hogs != nil {
		busies = p.Hogs
	}
	var out []pyArm
	for _, sub := range []string{"pythread", "pytask"} {
		mech, bench := "simplequeue", "pingpong.simplequeue"
		places := []string{"unpinned", "cross-cpu"}
		if sub == "pytask" {
			mech, bench, places = "asyncio-queue", "pingpong.asyncio-queue", []string{"unpinned"}
		}
		for _, busy := range busies {
			sis := []string{"default", "0.5ms"}
			if busy == 0 {
				sis = []string{"default"}
			}
			for _, si := range sis {
				for _, place := range places {
					params := map[string]string{"busy": strconv.Itoa(busy)}
					if si == "0.5ms" {
						params["switch_interval_s"] = "0.0005"
					}
					key := fmt.Sprintf("interference/%s/%s/busy=%d/si=%s", sub, mech, busy, si)
					if place != "unpinned" {
						key += "/" + place
					}
					a := pyArm{key: key, sub: sub, mech: mech, op: "round trip", bench: bench, params: params, place: place,
						quick:        sub == "pythread" && busy == 1 && si == "default" && place == "cross-cpu",
						freeThreaded: interferencePyRefs.FT[key] != ""}
					if busy > 0 {
						a.minOps = busyOps
					}
					if busy > 64 {
						a.unsup = "more than 64 busy Python threads"
					}
					out = append(out, a)
					if busy > 0 && place == "unpinned" {
						out = append(out, busyInProcess(a))
					}
				}
			}
		}
	}
	return out
}

// busyMedianNs is "into milliseconds" for a busy thread's round trip.
const busyMedianNs = 1e6

func interferencePyChecks(arms []result.Arm) []result.Check {
	out := busyProcessChecks(arms)
	by := okArms(arms)
	for _, a := range arms {
		key, py := pyKey(a.Name)
		if !strings.HasPrefix(key, "interference/pythread/") || a.Params["busy"] == "0" || a.Params["busy_in"] == "process" {
			continue
		}
		if strings.HasSuffix(a.Name, freeThreadedSuffix) && key == "interference/pythread/simplequeue/busy=1/si=default" {
			out = append(out, result.Check{Name: freeThreadedBusyCheck, Skipped: true,
				Detail: fmt.Sprintf("%s: unsupported: %s", a.Name, a.Reason), Arms: []string{a.Name}})
			continue
		}
		if a.Status != result.StatusOK || a.Percentiles == nil {
			continue
		}
		si := a.Params["switch_interval"]
		ms, err := strconv.ParseFloat(strings.TrimSuffix(si, "ms"), 64)
		if err != nil || ms <= 0 {
			continue
		}
		base := ""
		if b, ok := by[withPy(busyBaseline(key), py)]; ok && b.Percentiles != nil {
			base = fmt.Sprintf("; no busy thread: %s", result.FormatNs(b.Percentiles.P50))
		}
		detail := fmt.Sprintf("%s: p50 %s = %.2f× the switch interval (%s), p99 %s%s", a.Name,
			result.FormatNs(a.Percentiles.P50), a.Percentiles.P50/(ms*1e6), si, result.FormatNs(a.Percentiles.P99), base)
		if a.Params["gil"] == "disabled" {
			// No GIL, no switch interval to wait for (published: 6.7 µs).
			out = append(out, result.Check{Name: freeThreadedBusyCheck, Holds: a.Percentiles.P50 < 0.5*ms*1e6, Detail: detail, Arms: []string{a.Name}})
			continue
		}
		out = append(out, result.Check{
			Name:   "one busy pure-Python thread moves the thread round-trip median to the GIL switch interval (p50 ≥ ½ interval: milliseconds at the default 5 ms)",
			Holds:  a.Percentiles.P50 >= 0.5*ms*1e6,
			Detail: detail,
			Arms:   []string{a.Name},
		})
	}
	return out
}

// freeThreadedBusyCheck is the check only a free-threaded build answers.
const freeThreadedBusyCheck = "without the GIL (free-threaded build), one busy pure-Python thread does not hold the thread round trip for the switch interval (p50 < ½ interval; published 6.7 µs)"

// busyBaseline names the busy=0 arm with the same placement as a busy arm.
func busyBaseline(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "busy=") {
			parts[i] = "busy=0"
		}
		if strings.HasPrefix(p, "si=") {
			parts[i] = "si=default"
		}
	}
	return strings.Join(parts, "/")
}

func interferencePyFindings(arms []result.Arm) []string {
	var out []string
	by := okArms(arms)
	for _, py := range pyTags(arms) {
		n := func(k string) string { return withPy(k, py) }
		sfx := pySuffixText(py)
		for _, place := range []string{"", "/cross-cpu"} {
			t0, okA := by[n("interference/pythread/simplequeue/busy=0/si=default"+place)]
			t1, okB := by[n("interference/pythread/simplequeue/busy=1/si=default"+place)]
			t2, okC := by[n("interference/pythread/simplequeue/busy=1/si=0.5ms"+place)]
			if !okB || t1.Percentiles == nil {
				continue
			}
			where := "unpinned"
			if place != "" {
				where = "the two threads on different CPUs, the busy one beside the measuring thread"
			}
			line := fmt.Sprintf("one busy thread%s, %s: thread round trip p50 %s, p99 %s at switch interval %s", sfx, where,
				result.FormatNs(t1.Percentiles.P50), result.FormatNs(t1.Percentiles.P99), t1.Params["switch_interval"])
			faster := ""
			if okA && t0.Percentiles != nil {
				line += fmt.Sprintf(" (none: p50 %s, p99 %s)", result.FormatNs(t0.Percentiles.P50), result.FormatNs(t0.Percentiles.P99))
				faster = busyFaster(t0, t1)
			}
			if okC && t2.Percentiles != nil {
				line += fmt.Sprintf("; at %s: p50 %s, p99 %s", t2.Params["switch_interval"], result.FormatNs(t2.Percentiles.P50), result.FormatNs(t2.Percentiles.P99))
			}
			switch {
			case t1.Percentiles.P50 >= busyMedianNs:
				line += ": the woken thread waits for the busy one to be forced off the GIL"
			case faster != "":
				line += ": " + faster
			default:
				line += ": the woken thread mostly took the GIL before the busy thread did; only the tail waits a switch interval"
			}
			out = append(out, line)
		}
		a0, okD := by[n("interference/pytask/asyncio-queue/busy=0/si=default")]
		a1, okE := by[n("interference/pytask/asyncio-queue/busy=1/si=default")]
		if okD && okE && a0.Percentiles != nil && a1.Percentiles != nil {
			out = append(out, fmt.Sprintf("one busy thread%s: asyncio round-trip median %s → %s, p99 %s → %s: tasks hand over without the GIL, but lose it to the busy thread each switch interval",
				sfx, result.FormatNs(a0.Percentiles.P50), result.FormatNs(a1.Percentiles.P50),
				result.FormatNs(a0.Percentiles.P99), result.FormatNs(a1.Percentiles.P99)))
		}
	}
	out = append(out, busyProcessFindings(arms)...)
	return append(out, interferencePyRefs.findings(arms)...)
}

// interferencePyRefs are SPEC §8's figures for CPython beside a busy thread.
var interferencePyRefs = pyRefs{GIL: map[string]string{
	"interference/pythread/simplequeue/busy=0/si=default":           "median 5.9 µs, p99 16.6 µs",
	"interference/pythread/simplequeue/busy=1/si=default":           "median 5 096 µs, p99 15 235 µs (5 ms interval; free-threaded 6.7 / 16.2 µs)",
	"interference/pythread/simplequeue/busy=1/si=0.5ms":             "median 572 µs, p99 2 187 µs",
	"interference/pythread/simplequeue/busy=1/si=default/cross-cpu": "median 5 096 µs, p99 15 235 µs (unpinned, 24 cores)",
	"interference/pythread/simplequeue/busy=1/si=0.5ms/cross-cpu":   "median 572 µs, p99 2 187 µs (unpinned, 24 cores)",
	"interference/pytask/asyncio-queue/busy=0/si=default":           "median 4.0 µs, p99 6.9 µs",
	"interference/pytask/asyncio-queue/busy=1/si=default":           "median 8.2 µs, p99 5 146 µs",
}, FT: map[string]string{
	"interference/pythread/simplequeue/busy=1/si=default":           "median 6.7 µs, p99 16.2 µs (free-threaded)",
	"interference/pythread/simplequeue/busy=1/si=default/cross-cpu": "median 6.7 µs, p99 16.2 µs (free-threaded, unpinned, 24 cores)",
}}

// interferenceRefs are SPEC §8's published tails beside a busy worker,
// beside the CPython arms.
var interferenceRefs = []exp.Reference{
	{Substrates: []string{"pythread"}, Text: "CPython 3.14, one busy thread: thread round trip median 5.9 → 5 096 µs, p99 16.6 → 15 235 µs; switch interval 0.5 ms: 572 / 2 187 µs; free-threaded 6.7 / 16.2 µs"},
	{Substrates: []string{"pytask"}, Text: "CPython 3.14, one busy thread: asyncio round trip median 4.0 → 8.2 µs, p99 6.9 → 5 146 µs"},
}

// interferenceVerdict: for each shape with and without one busy
// goroutine beside it at the same GOMAXPROCS, the sampled p50 and p99 (the
// shapes that share a GOMAXPROCS and a hog under one line that names
// them), and in notes what the other hogs (a process, more Ps) did to the
// p99 instead.
func interferenceVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	var lines, notes []string
	param := func(a result.Arm, k string) string { return a.Params[k] }
	base := v.Where("interference", func(a result.Arm) bool { return param(a, "hogs") == "0" && a.Percentiles != nil })
	under := "" // the GOMAXPROCS and hog the lines below it share
	for _, b := range base {
		hogs := v.Where("interference", func(a result.Arm) bool {
			return param(a, "shape") == param(b, "shape") && param(a, "hogs") == "1" && a.Percentiles != nil
		})
		var same, fixes []result.Arm
		for _, h := range hogs {
			if h.GOMAXPROCS == b.GOMAXPROCS && strings.Contains(param(h, "hog"), "goroutine") {
				same = append(same, h)
			} else {
				fixes = append(fixes, h)
			}
		}
		if len(same) == 0 {
			continue
		}
		h := same[0]
		if u := fmt.Sprintf("  Go, GOMAXPROCS=%d, beside %s:", b.GOMAXPROCS, hogWords(param(h, "hog"))); u != under {
			under = u
			lines = append(lines, u)
		}
		pb, ph := b.Percentiles, h.Percentiles
		lines = append(lines, fmt.Sprintf("    %s: p50 %s, p99 %s", shortOp(b.Op), exp.Change(pb.P50, ph.P50), exp.Change(pb.P99, ph.P99)))
		var fx []string
		for _, f := range fixes {
			how := hogWords(param(f, "hog")) + " instead"
			if f.GOMAXPROCS != b.GOMAXPROCS {
				how = fmt.Sprintf("GOMAXPROCS=%d", f.GOMAXPROCS)
				if param(f, "hog") != param(h, "hog") {
					how += " and " + hogWords(param(f, "hog"))
				}
			}
			fx = append(fx, fmt.Sprintf("%s: p99 %s", how, result.FormatNs(f.Percentiles.P99)))
		}
		if len(fx) > 0 {
			notes = append(notes, fmt.Sprintf("  %s, the fixes: %s", shortOp(b.Op), strings.Join(fx, "; ")))
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "  Go: not measured (run interference)")
	}
	py, pyNotes := interferencePyVerdict(v)
	lines = append(lines, py)
	return []exp.VerdictSection{{Block: exp.BlockTail, Heading: "one busy worker, the tail: sampled p50 and p99, without → with it",
		Lines: lines, Notes: append(notes, pyNotes...),
		Foot: []string{"  published (CPython 3.14, one busy thread): p50 5.9 µs → 5 096 µs, p99 16.6 µs → 15 235 µs"}}}
}

// shortOp is what one op is without its parenthesis: "1 ms timer sleep".
func shortOp(op string) string {
	if i := strings.Index(op, " ("); i > 0 {
		return op[:i]
	}
	return op
}

// hogWords says what a hog ("goroutine-spin", "process-spin",
// "goroutine-gosched") is in words: "a spinning goroutine".
func hogWords(hog string) string {
	place, kind, _ := strings.Cut(hog, "-")
	switch kind {
	case hogSpin:
		return "a spinning " + place
	case hogStream:
		return "a " + place + " streaming through memory"
	case hogGosched:
		return "a spinning " + place + " that calls Gosched"
	}
	return "a " + hog + " hog"
}

// interferencePyVerdict: a CPython thread round trip beside one busy
// thread (a line of figures), and a note when the busy thread made the
// round trip faster, which is no GIL cost and must not read as one.
func interferencePyVerdict(v *exp.VerdictRun) (string, []string) {
	busy := v.Where("interference", func(a result.Arm) bool {
		return a.Substrate == "pythread" && a.Params["busy"] == "1" && a.Params["busy_in"] != "process" && a.Percentiles != nil
	})
	if len(busy) == 0 {
		return "  CPython: not measured (python3 missing or its arms not selected)", nil
	}
	a := busy[0]
	si := a.Params["switch_interval"]
	if si == "" {
		si = "—"
	}
	line := fmt.Sprintf("  CPython threads, a busy thread, switch interval %s: p50 %s, p99 %s", si, result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99))
	var notes []string
	if b, ok := v.Pick(strings.Replace(a.Name, "busy=1", "busy=0", 1)); ok && b.Percentiles != nil {
		line = fmt.Sprintf("  CPython threads, a busy thread, switch interval %s: p50 %s, p99 %s", si,
			exp.Change(b.Percentiles.P50, a.Percentiles.P50), exp.Change(b.Percentiles.P99, a.Percentiles.P99))
		if n := busyFaster(b, a); n != "" {
			notes = append(notes, "  CPython: "+n)
		}
	}
	key, py := pyKey(a.Name)
	if r, ok := v.Pick(withPy(key+"/in=process", py)); ok && r.Percentiles != nil {
		notes = append(notes, fmt.Sprintf("  CPython, the busy loop in a process instead: p50 %s, p99 %s", result.FormatNs(r.Percentiles.P50), result.FormatNs(r.Percentiles.P99)))
	}
	return line, notes
}

// busyFaster says so when a round trip beside a busy thread (busy) is
// faster than without it (quiet): the busy thread keeps the CPU awake, so
// no idle CPU has to wake for the handoff; it is not a GIL cost. Empty
// when it is not faster beyond the noise (exp.SameWithin).
func busyFaster(quiet, busy result.Arm) string {
	q, b := quiet.Percentiles.P50, busy.Percentiles.P50
	if b <= 0 || q < b*exp.SameWithin {
		return ""
	}
	return fmt.Sprintf("%s with a busy thread (p50 %s → %s): the busy thread keeps the CPU awake (no idle wake-up); not a GIL cost",
		exp.Compare(b, q, "slower", "faster"), result.FormatNs(q), result.FormatNs(b))
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
