package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/procstat"
)

// spawn: the cost to create a worker and wait for it to end; op = one
// create + join (SPEC §5.4). Before timing, each arm also parks many idle
// workers of its kind and weighs them: resident memory per worker from
// /proc, and for goroutines the stack in use.
func init() {
	exp.Register(&exp.Spec{
		Name:       "spawn",
		Order:      40,
		References: spawnRefs,
		Summary:    "creating and joining a goroutine, a locked thread, a process; memory per idle worker",
		Op:         "create + join",
		OpLabels:   []exp.OpLabel{{Label: "idleworker", Has: "idle-memory"}, {Label: "createjoin"}},
		Doc: `One op creates a worker that does nothing and waits until it has ended:
goroutine (go + channel), thread (a goroutine that locks its OS thread and
exits, so the runtime destroys the thread and the next op needs a new one),
process/exec (ctxlab re-executed in child mode with a role that exits at
once, started through os/exec), process/true (/bin/true, the same path with
a minimal program).
Memory: the arms spawn/SUBSTRATE/idle-memory park M idle workers of their
kind — goroutines blocked on a channel, threads blocked on a futex (proven
by /proc: every thread sleeping in the futex call), processes blocked
reading a pipe (every thread of each asleep) — once per repetition, and
report the resident bytes per idle worker as their figure (B/op, with
median, range and spread like any figure) and the metrics rss-bytes/worker (VmRSS delta ÷
M for goroutines and threads; each child's own VmRSS for processes),
pss-bytes/worker for processes (smaps_rollup Pss: shared pages divided),
stack-bytes/worker and stack-start-bytes for goroutines (runtime stack in
use, and the runtime's starting stack size), kernel-stack-bytes/worker for
threads (/proc/meminfo KernelStack delta, system-wide, so noisy).
M: quick 2000/200/5, default 10000/1000/20, full 100000/2000/50.`,
		Arms:     spawnArms,
		Checks:   spawnChecks,
		Findings: spawnFindings,
		Metrics:  spawnMetrics,
	})
	child.Register("spawn-exit", func(args []string, files []*os.File) int { return 0 })
	child.Register("spawn-idle", spawnIdleChild)
}

// Idle workers weighed per suite: goroutines, threads, processes.
var spawnIdle = map[string][3]int{
	exp.SuiteQuick:   {2000, 200, 5},
	exp.SuiteDefault: {10000, 1000, 20},
	exp.SuiteFull:    {100000, 2000, 50},
}

func spawnArms(p exp.Params) ([]exp.Arm, error) {
	idle, ok := spawnIdle[p.Suite]
	if !ok {
		idle = spawnIdle[exp.SuiteDefault]
	}
	unp := exp.Unpinned(p)
	trueExe, lookErr := exec.LookPath("true")
	kinds := []struct {
		sub, mech string
		m         int
		quick     bool
		unsup     string
	}{
		{"goroutine", "go", idle[0], true, ""},
		{"thread", "locked", idle[1], true, ""},
		{"process", "exec", idle[2], true, ""},
		{"process", "true", 0, true, ""},
	}
	if lookErr != nil {
		kinds[3].unsup = "no `true` program on PATH: " + lookErr.Error()
	}
	var arms []exp.Arm
	for _, k := range kinds {
		k := k
		arms = append(arms, exp.Arm{
			Name: exp.Key("spawn", exp.Seg(k.sub), exp.Seg(k.mech)).String(), Substrate: k.sub, Mechanism: k.mech,
			Placement: unp.Name, CPUs: unp.Process, Quick: k.quick, Unsupported: k.unsup,
			Open: func(ctx context.Context) (exp.Bench, error) {
				return OpenSpawn(ctx, k.sub, k.mech, trueExe), nil
			},
		})
	}
	// Memory per idle worker: a gauge, weighed once per repetition.
	for _, k := range kinds {
		k := k
		if k.m == 0 {
			continue
		}
		arms = append(arms, exp.Arm{
			Name: exp.Key("spawn", exp.Seg(k.sub), exp.Seg("idle-memory")).String(), Substrate: k.sub, Mechanism: "idle",
			Op: "idle worker", Unit: "B/op", Params: map[string]string{"idle-workers": strconv.Itoa(k.m)},
			Placement: unp.Name, CPUs: unp.Process, Quick: k.quick,
			Open: func(ctx context.Context) (exp.Bench, error) {
				return &idleMemory{sub: k.sub, m: k.m}, nil
			},
		})
	}
	return arms, nil
}

// OpenSpawn prepares a spawn arm: one small type per substrate, each
// creating and joining its workers its own way.
func OpenSpawn(ctx context.Context, sub, m string, trueExe string) exp.Loop {
	switch sub {
	case "goroutine":
		s := &goSpawn{done: make(chan struct{})}
		s.fn = func() { s.done <- struct{}{} }
		return s
	case "thread":
		s := &threadSpawn{done: make(chan struct{})}
		s.fn = func() {
			runtime.LockOSThread() // exits locked: the runtime destroys this thread
			if s.TIDs != nil {
				s.TIDs[s.op%len(s.TIDs)] = int32(unix.Gettid())
			}
			s.done <- struct{}{}
		}
		return s
	}
	o := child.Options{Role: "spawn-exit"}
	if m == "true" {
		o = child.Options{Exe: trueExe}
	}
	return &processSpawn{opts: o}
}

// spawnInProcess is what the in-process spawns share: the whole process,
// whose threads create the workers (exited threads included), takes
// part, and Close has nothing to stop (every op joins its worker).
type spawnInProcess struct{}

func (spawnInProcess) Participants() exp.Participants { return exp.WholeProcess() }
func (spawnInProcess) Close() error                   { return nil }

// goSpawn: go + channel.
type goSpawn struct {
	spawnInProcess
	done chan struct{}
	fn   func() // the worker, made once: an op allocates no closure
}

// Run creates and joins b.N workers, one after another.
func (s *goSpawn) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		t := b.S.Start(i)
		go s.fn()
		<-s.done
		b.S.Stop(t)
	}
	return nil
}

// threadSpawn: a goroutine that locks its OS thread and exits, so the
// runtime destroys the thread and the next op needs a new one.
type threadSpawn struct {
	spawnInProcess
	done chan struct{}
	fn   func()
	// TIDs, if not nil, records the OS thread of each op (ring buffer),
	// so tests can see each op had a thread of its own.
	TIDs []int32
	op   int
}

func (s *threadSpawn) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		t := b.S.Start(i)
		go s.fn()
		<-s.done
		s.op++
		b.S.Stop(t)
	}
	return nil
}

// processSpawn: a child process (ctxlab in child mode, or /bin/true)
// started and reaped.
type processSpawn struct{ opts child.Options }

func (s *processSpawn) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		t := b.S.Start(i)
		p, err := child.Start(b.Context(), s.opts)
		if err != nil {
			return err
		}
		if err := p.Wait(); err != nil {
			return fmt.Errorf("spawned process: %w", err)
		}
		b.S.Stop(t)
	}
	return nil
}

// Participants: the whole process, and every reaped child.
func (s *processSpawn) Participants() exp.Participants {
	return exp.Participants{Process: true, Children: true}
}

// Close has nothing to stop: a process left by an interrupted op is
// killed by the child package's KillAll.
func (s *processSpawn) Close() error { return nil }

// idleMemory weighs m idle workers of one kind: a Gauge, one weighing
// per repetition, each taken once every worker is proven started and parked.
type idleMemory struct {
	sub string
	m   int
}

func (g *idleMemory) Read(ctx context.Context) (exp.Reading, error) {
	var mem map[string]float64
	var err error
	switch g.sub {
	case "goroutine":
		mem, err = GoroutineMemory(ctx, g.m)
	case "thread":
		mem, err = ThreadMemory(ctx, g.m)
	case "process":
		mem, err = ProcessMemory(ctx, g.m)
	default:
		err = fmt.Errorf("spawn: no idle %s", g.sub)
	}
	if err != nil {
		return exp.Reading{}, fmt.Errorf("spawn: weigh %d idle %ss: %w", g.m, g.sub, err)
	}
	return exp.Reading{Value: mem["rss-bytes/worker"], Ops: int64(g.m), Metrics: mem}, nil
}

// Participants: the weighing runs in ctxlab itself (and in the children it
// parks, which are gone when Read returns).
func (g *idleMemory) Participants() exp.Participants { return exp.WholeProcess() }

func (g *idleMemory) Close() error { return nil }

// settle returns freed memory to the OS so a following RSS delta counts
// pages the new workers touch, not pages the runtime kept from before.
func settle() { debug.FreeOSMemory() }

// vmRSS is process pid's resident set in bytes.
func vmRSS(pid int) (int64, error) { return procstat.DefaultRoot.ReadRSS(pid) }

// GoroutineMemory parks m goroutines on a channel and returns RSS and stack
// in use per goroutine, and the runtime's starting stack size.
func GoroutineMemory(ctx context.Context, m int) (map[string]float64, error) {
	settle()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rss0, err := vmRSS(os.Getpid())
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	var started, exited sync.WaitGroup
	for i := 0; i < m; i++ {
		started.Add(1)
		exited.Add(1)
		go func() {
			defer exited.Done()
			started.Done()
			<-stop
		}()
	}
	started.Wait()
	runtime.Gosched()
	rss1, err := vmRSS(os.Getpid())
	runtime.ReadMemStats(&ms1)
	close(stop)
	exited.Wait()
	if err != nil {
		return nil, err
	}
	sample := []metrics.Sample{{Name: "/gc/stack/starting-size:bytes"}}
	metrics.Read(sample)
	start := 0.0
	if sample[0].Value.Kind() == metrics.KindUint64 {
		start = float64(sample[0].Value.Uint64())
	}
	return map[string]float64{
		"idle-workers":       float64(m),
		"rss-bytes/worker":   float64(rss1-rss0) / float64(m),
		"stack-bytes/worker": float64(int64(ms1.StackInuse)-int64(ms0.StackInuse)) / float64(m),
		"stack-start-bytes":  start,
	}, ctx.Err()
}

// ThreadMemory parks m locked threads in FUTEX_WAIT and returns the RSS
// delta per thread, and the system-wide KernelStack delta per thread.
func ThreadMemory(ctx context.Context, m int) (map[string]float64, error) {
	if restore := raiseMaxThreads(m); restore != nil {
		defer restore()
	}
	settle()
	rss0, err := vmRSS(os.Getpid())
	if err != nil {
		return nil, err
	}
	ks0, _ := procstat.DefaultRoot.ReadKernelStack()
	var word uint32
	var threads []*mech.Thread
	var parked sync.WaitGroup
	var fins []<-chan struct{}
	stopAll := func() {
		atomic.StoreUint32(&word, 1)
		unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&word)), 1|128, 1<<30, 0, 0, 0) // FUTEX_WAKE_PRIVATE all
		for _, f := range fins {
			<-f
		}
		for _, t := range threads {
			t.Stop()
		}
	}
	for i := 0; i < m; i++ {
		if err := ctx.Err(); err != nil {
			stopAll()
			return nil, err
		}
		t, err := mech.StartThread(nil)
		if err != nil {
			stopAll()
			return nil, err
		}
		threads = append(threads, t)
		parked.Add(1)
		fin, _ := t.Go(func() {
			parked.Done()
			for atomic.LoadUint32(&word) == 0 {
				unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&word)), 0|128, 0, 0, 0, 0) // FUTEX_WAIT_PRIVATE while 0
			}
		})
		fins = append(fins, fin)
	}
	parked.Wait()
	var tids []int
	for _, t := range threads {
		tids = append(tids, t.TID)
	}
	if err := waitParked(ctx, os.Getpid(), tids, true); err != nil {
		stopAll()
		return nil, err
	}
	rss1, err := vmRSS(os.Getpid())
	ks1, _ := procstat.DefaultRoot.ReadKernelStack()
	stopAll()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{
		"idle-workers":     float64(m),
		"rss-bytes/worker": float64(rss1-rss0) / float64(m),
	}
	if ks0 > 0 && ks1 > 0 {
		out["kernel-stack-bytes/worker"] = float64(ks1-ks0) / float64(m)
	}
	return out, nil
}

// waitParked waits until the threads tids of process pid (nil = every
// thread of it) all sleep (state S), and with inFutex sit in the futex
// system call: the workers are started and parked, so their memory is what
// an idle worker weighs. It gives up after 10 s.
func waitParked(ctx context.Context, pid int, tids []int, inFutex bool) error {
	deadline := time.Now().Add(10 * time.Second)
	root := procstat.DefaultRoot
	for {
		list := tids
		if list == nil {
			var err error
			if list, err = root.TIDs(pid); err != nil {
				return err
			}
		}
		busy := 0
		for _, tid := range list {
			if st, err := root.ReadTaskState(pid, tid); err != nil || st != "S" {
				busy++
				continue
			}
			if inFutex {
				if sc, err := root.ReadSyscall(pid, tid); err == nil && sc.Nr != unix.SYS_FUTEX || errors.Is(err, procstat.ErrParse) {
					busy++
				}
			}
		}
		if busy == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workers of process %d not parked after 10s", busy, len(list), pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// ProcessMemory starts m ctxlab children that block reading a pipe, and
// returns each one's mean VmRSS and PSS once all are parked.
func ProcessMemory(ctx context.Context, m int) (map[string]float64, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	rd, wr := os.NewFile(uintptr(p[0]), "idle-in"), os.NewFile(uintptr(p[1]), "idle-hold")
	// os.Pipe, not a raw pipe: its read end is on the netpoller, so the
	// wait below can have a deadline and end with ctx.
	readyR, readyW, err := os.Pipe()
	if err != nil {
		rd.Close()
		wr.Close()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	var procs []*child.Proc
	cleanup := func() {
		wr.Close() // EOF: the children exit by themselves
		for _, pr := range procs {
			pr.Kill()
		}
		rd.Close()
		readyR.Close()
		readyW.Close()
	}
	for i := 0; i < m; i++ {
		pr, err := child.Start(ctx, child.Options{Role: "spawn-idle", Files: []*os.File{rd, readyW}})
		if err != nil {
			cleanup()
			return nil, err
		}
		procs = append(procs, pr)
	}
	readyW.Close()
	// Each child writes one byte once it is about to block.
	buf := make([]byte, 1)
	if err := readyR.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		cleanup()
		return nil, fmt.Errorf("ready pipe: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { readyR.SetReadDeadline(time.Unix(1, 0)) }) // a past deadline: Read returns now
	defer stop()
	for i := 0; i < m; i++ {
		if _, err := readyR.Read(buf); err != nil {
			cleanup()
			return nil, fmt.Errorf("waiting for idle child %d of %d: %w", i+1, m, err)
		}
	}
	for _, pr := range procs {
		if err := waitParked(ctx, pr.PID(), nil, false); err != nil {
			cleanup()
			return nil, err
		}
	}
	var rss, pss int64
	for _, pr := range procs {
		pid := pr.PID()
		r, err := vmRSS(pid)
		if err != nil {
			cleanup()
			return nil, err
		}
		rss += r
		if v, err := procstat.DefaultRoot.ReadPss(pid); err == nil {
			pss += v
		}
	}
	cleanup()
	out := map[string]float64{
		"idle-workers":     float64(m),
		"rss-bytes/worker": float64(rss) / float64(m),
	}
	if pss > 0 {
		out["pss-bytes/worker"] = float64(pss) / float64(m)
	}
	return out, ctx.Err()
}

// spawnIdleChild says it is ready on fd 4, then blocks reading fd 3 until
// the parent closes it (or dies).
func spawnIdleChild(args []string, files []*os.File) int {
	if len(files) < 2 {
		return 2
	}
	files[1].Write([]byte{1})
	files[1].Close()
	buf := make([]byte, 1)
	for {
		if _, err := files[0].Read(buf); err != nil {
			return 0
		}
	}
}
