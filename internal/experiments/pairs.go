package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
)

// The two-worker pairs: a goroutine pair, a pair of locked threads and a
// locked thread with a ctxlab child process, each over a mechanism of
// mech, and the child's echo role. pingpong measures them; interference
// runs its futex and pipe shapes on them and ring's reference arms are
// them. Each is an exp.Loop: a round trip from side A per op.

func init() {
	child.Register("echo", echoChild)
}

// goroutinePair: A is the runner's goroutine, B an echoing goroutine.
type goroutinePair struct {
	pair    *mech.Pair
	done    chan error
	once    sync.Once
	running sync.WaitGroup // Run in progress: Close waits for it before ending the pair's pump
}

func openGoroutinePair(kind string) (exp.Loop, error) {
	pair, err := mech.NewPair(kind)
	if err != nil {
		return nil, err
	}
	g := &goroutinePair{pair: pair, done: make(chan error, 1)}
	go func() { g.done <- mech.Echo(pair.B) }()
	return g, nil
}

func (g *goroutinePair) Run(b *measure.B) error {
	g.running.Add(1)
	defer g.running.Done()
	return mech.RoundTrips(g.pair.A, b.N, b.S)
}

// Participants: the goroutines run on whatever OS threads the Go
// scheduler picks, so the whole process takes part.
func (g *goroutinePair) Participants() exp.Participants { return exp.WholeProcess() }

// Close may run while Run is blocked (timeout, Ctrl-C): Stop unblocks both
// sides, and the pair is closed only after both have returned.
func (g *goroutinePair) Close() error {
	var err error
	g.once.Do(func() {
		g.pair.Stop()
		err = <-g.done
		g.running.Wait()
		g.pair.Close()
	})
	return err
}

// armUnsupported makes a mechanism that cannot be made here
// (mech.ErrUnsupported) an unsupported arm (exp.ErrUnsupported), its
// message kept.
func armUnsupported(err error) error {
	if errors.Is(err, mech.ErrUnsupported) {
		return unsupportedHere{err}
	}
	return err
}

type unsupportedHere struct{ error }

func (e unsupportedHere) Unwrap() []error { return []error{e.error, exp.ErrUnsupported} }

// threadPair: A and B are locked OS threads, placed as asked.
type threadPair struct {
	pair   *mech.Pair
	a, b   *mech.Thread
	echoed <-chan struct{}
	once   sync.Once
}

func openThreadPair(kind string, pl exp.Placement) (exp.Loop, error) {
	pair, err := mech.NewPair(kind)
	if err != nil {
		return nil, armUnsupported(err)
	}
	ta, err := mech.StartThread(pl.A)
	if err != nil {
		pair.Close()
		return nil, fmt.Errorf("start thread A: %w", err)
	}
	tb, err := mech.StartThread(pl.B)
	if err != nil {
		ta.Stop()
		pair.Close()
		return nil, fmt.Errorf("start thread B: %w", err)
	}
	t := &threadPair{pair: pair, a: ta, b: tb}
	t.echoed, _ = tb.Go(func() { mech.Echo(pair.B) })
	return t, nil
}

func (t *threadPair) Run(b *measure.B) error {
	var err error
	if derr := t.a.Do(func() {
		b.ResetTimer() // the batch starts when thread A has it
		err = mech.RoundTrips(t.pair.A, b.N, b.S)
	}); derr != nil {
		return derr
	}
	return err
}

// Participants are the two locked threads.
func (t *threadPair) Participants() exp.Participants { return exp.Threads(t.a.TID, t.b.TID) }

func (t *threadPair) Close() error {
	t.once.Do(func() {
		t.pair.Stop()
		<-t.echoed
		t.a.Stop()
		t.b.Stop()
		t.pair.Close()
	})
	return nil
}

// processPair: A is a locked thread here, B a ctxlab child process.
type processPair struct {
	ep       mech.Endpoint
	stop     func()
	closeAll func() error
	a        *mech.Thread
	proc     *child.Proc
	once     sync.Once
}

// rawReaderEnv is the environment of a child whose one goroutine blocks in
// a raw read(2) outside a system-call section (a process ring's node): the
// runtime sees that goroutine as running and would send its thread a
// preemption signal every 10 ms, each one a wake-up counted as the arm's
// switch. A pingpong echo child waits inside a section, which the runtime
// never preempts; it keeps the same environment, as measured.
var rawReaderEnv = []string{"GODEBUG=asyncpreemptoff=1"}

func openProcessPair(ctx context.Context, kind string, pl exp.Placement) (exp.Loop, error) {
	ep, stop, files, closeAll, err := mech.ParentEnd(kind)
	if err != nil {
		return nil, err
	}
	ta, err := mech.StartThread(pl.A)
	if err != nil {
		closeAll()
		return nil, err
	}
	proc, err := child.Start(ctx, child.Options{Role: "echo", Args: []string{kind}, Files: files, CPUs: pl.B, Env: rawReaderEnv})
	for _, f := range files {
		f.Close() // the child has its copies; ours would hide its exit (no EOF)
	}
	if err != nil {
		ta.Stop()
		closeAll()
		return nil, err
	}
	pp := &processPair{ep: ep, stop: stop, closeAll: closeAll, a: ta, proc: proc}
	// One round trip before timing starts: the child's start-up (~ms) must
	// not land in the warm-up, which sizes the repetitions.
	ready := make(chan error, 1)
	go func() {
		var err error
		if derr := ta.Do(func() { err = mech.RoundTrips(ep, 1, nil) }); derr != nil {
			err = derr
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(10 * time.Second):
		err = fmt.Errorf("child did not answer within 10s")
	}
	if err != nil {
		pp.Close()
		return nil, fmt.Errorf("first round trip with the %s child: %w", kind, err)
	}
	return pp, nil
}

func (p *processPair) Run(b *measure.B) error {
	var err error
	if derr := p.a.Do(func() {
		b.ResetTimer()
		err = mech.RoundTrips(p.ep, b.N, b.S)
	}); derr != nil {
		return derr
	}
	return err
}

// Participants are this side's locked thread and the child process.
func (p *processPair) Participants() exp.Participants {
	return exp.Participants{TIDs: []int{p.a.TID}, PIDs: []int{p.proc.PID()}}
}

func (p *processPair) Close() error {
	p.once.Do(func() {
		p.stop()
		p.proc.Kill()
		p.a.Stop()
		p.closeAll()
	})
	return nil
}

// echoChild is the child role of process arms: echo on the inherited fds
// until the parent stops or dies.
func echoChild(args []string, files []*os.File) int {
	if _, err := childArgs("echo", "one mechanism argument", args, files, 1, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ep, err := mech.ChildEnd(args[0], files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo child:", err)
		return 1
	}
	runtime.LockOSThread()
	if err := mech.Echo(ep); err != nil {
		fmt.Fprintln(os.Stderr, "echo child:", err)
		return 1
	}
	return 0
}
