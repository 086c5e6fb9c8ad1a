package experiments

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/quantum"
)

// interference's shapes: each latency-sensitive side is a small type with
// its own open, loop and close; ifBench runs one beside its hogs.

// errClosed ends a Run that Close has interrupted.
var errClosed = errors.New("interference: closed")

// ifShape is one shape's latency-sensitive side. Its Close must unblock a
// Run stuck behind a hog, from any goroutine.
type ifShape interface {
	Run(b *measure.B) error
	// Participants are the measured workers only: hog processes and
	// threads are left out so their own switches do not count as the
	// op's (goroutine hogs share the process).
	Participants() exp.Participants
	Close() error
}

// ifBench is an opened interference arm: a shape, the hogs beside it, and
// what the analysis needs.
type ifBench struct {
	arm      ifArm
	shape    ifShape
	hogs     hogSet
	quanta   []quantum.Quantum
	qnote    string
	once     sync.Once
	closeErr error
}

func openInterference(ctx context.Context, a ifArm, qs []quantum.Quantum, qnote string, c0 []int) (exp.Bench, error) {
	shape, err := openShape(ctx, a, c0)
	if err != nil {
		return nil, err
	}
	x := &ifBench{arm: a, shape: shape, quanta: qs, qnote: qnote}
	hogs := a.hog
	if a.shape == shapeStarve {
		hogs = hogSpec{} // its hog lives in the child
	}
	x.hogs, err = startHogs(ctx, hogs)
	if err != nil {
		shape.Close()
		return nil, err
	}
	return x, nil
}

// openShape opens the arm's shape; c0 is the CPU the one-CPU shapes share
// with their hogs.
func openShape(ctx context.Context, a ifArm, c0 []int) (ifShape, error) {
	one := exp.Placement{Name: "same-cpu", Process: c0, A: c0, B: c0}
	switch a.shape {
	case shapeTimer:
		return &timerShape{}, nil
	case shapeNetpoll:
		return openNetpoll(ctx)
	case shapeChanPair:
		return openChanPair()
	case shapeFutex:
		// pingpong's thread pair over a raw futex, both threads on CPU c0.
		return openPairShape(openThreadPair("futex", one))
	case shapeProcPipe:
		// pingpong's process pair over a pipe, both ends on CPU c0.
		return openPairShape(openProcessPair(ctx, "pipe", one))
	case shapeStarve:
		return openStarve(ctx, a)
	}
	return nil, fmt.Errorf("unknown shape %q", a.shape)
}

func (x *ifBench) Run(b *measure.B) error { return x.shape.Run(b) }

// Participants are the shape's measured workers.
func (x *ifBench) Participants() exp.Participants { return x.shape.Participants() }

// StartTimed implements exp.TimedPhase for the shapes whose work changes
// once the timed repetitions begin (starve).
func (x *ifBench) StartTimed(opsPerRep int) {
	if t, ok := x.shape.(exp.TimedPhase); ok {
		t.StartTimed(opsPerRep)
	}
}

// Close stops the shape (unblocking a Run stuck behind a hog), then the
// hogs, and waits for all of them. Safe from any goroutine, more than once.
func (x *ifBench) Close() error {
	x.once.Do(func() {
		x.closeErr = x.shape.Close()
		x.hogs.Stop()
	})
	return x.closeErr
}

// timerShape: op = time.Sleep(1 ms); latency = how late the goroutine ran.
type timerShape struct{ closed atomic.Bool }

func (s *timerShape) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		if s.closed.Load() {
			return errClosed
		}
		t := b.S.Start(i)
		time.Sleep(timerDelay)
		b.S.StopLess(t, int64(timerDelay))
	}
	return nil
}

func (s *timerShape) Participants() exp.Participants { return exp.WholeProcess() }
func (s *timerShape) Close() error                   { s.closed.Store(true); return nil }

// netpollShape: a child plays a client with one request outstanding: it
// waits clientThink, stamps CLOCK_MONOTONIC (shared by all processes) into
// an 8-byte request and waits for our ack (clientChild). We read requests
// through an *os.File, so between requests our goroutine is parked in the
// netpoller, as a service's handler is. Latency = our receipt − the
// child's stamp.
type netpollShape struct {
	proc       *child.Proc
	reqR, ackW *os.File
	rbuf, ack  [8]byte
	closed     atomic.Bool
}

func openNetpoll(ctx context.Context) (*netpollShape, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	proc, err := child.Start(ctx, child.Options{Role: "client", Args: []string{strconv.FormatInt(int64(clientThink), 10)},
		Files: []*os.File{reqW, ackR}})
	reqW.Close() // the child has its copies
	ackR.Close()
	if err != nil {
		reqR.Close()
		ackW.Close()
		return nil, err
	}
	s := &netpollShape{proc: proc, reqR: reqR, ackW: ackW}
	// One request before timing: the child's start-up is not an op.
	_, err = io.ReadFull(reqR, s.rbuf[:])
	if err == nil {
		_, err = ackW.Write(s.ack[:])
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("client child: %w", err)
	}
	return s, nil
}

func (s *netpollShape) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		if s.closed.Load() {
			return errClosed
		}
		if _, err := io.ReadFull(s.reqR, s.rbuf[:]); err != nil {
			return err
		}
		b.S.SinceMono(b.S.Start(i), int64(binary.LittleEndian.Uint64(s.rbuf[:])))
		if _, err := s.ackW.Write(s.ack[:]); err != nil {
			return err
		}
	}
	return nil
}

// Participants: the whole process (the goroutine parked in the
// netpoller) and the client child.
func (s *netpollShape) Participants() exp.Participants {
	return exp.Participants{Process: true, PIDs: []int{s.proc.PID()}}
}

func (s *netpollShape) Close() error {
	s.closed.Store(true)
	s.proc.Kill()
	s.reqR.Close()
	s.ackW.Close()
	return nil
}

// chanPairShape: the runner's goroutine and an echoing goroutine over an
// unbuffered channel; one op is a burst of round trips, so a stall of one
// quantum shows in the op's latency however rarely it strikes.
type chanPairShape struct {
	pair *mech.Pair
	done chan error
}

func openChanPair() (*chanPairShape, error) {
	pair, err := mech.NewPair("chan")
	if err != nil {
		return nil, err
	}
	s := &chanPairShape{pair: pair, done: make(chan error, 1)}
	go func() { s.done <- mech.Echo(pair.B) }()
	return s, nil
}

func (s *chanPairShape) Run(b *measure.B) error {
	for i := 0; i < b.N; i++ {
		t := b.S.Start(i)
		for k := 0; k < pairBurst; k++ {
			if err := s.pair.A.Send(uint64(k)); err != nil {
				return err
			}
			if _, err := s.pair.A.Recv(); err != nil {
				return err
			}
		}
		b.S.Stop(t)
	}
	return nil
}

func (s *chanPairShape) Participants() exp.Participants { return exp.WholeProcess() }

func (s *chanPairShape) Close() error {
	s.pair.Stop()
	err := <-s.done
	s.pair.Close()
	return err
}

// pairShape is one of pingpong's pairs (pairs.go) on one CPU with the
// hogs: its round trips, on its side A's locked thread, are the op.
type pairShape struct {
	pair   exp.Loop
	closed atomic.Bool
}

func openPairShape(pair exp.Loop, err error) (*pairShape, error) {
	if err != nil {
		return nil, err
	}
	return &pairShape{pair: pair}, nil
}

// Run hands no new batch to the pair once Close has begun (the pair's
// thread refuses one after it has stopped, too).
func (s *pairShape) Run(b *measure.B) error {
	if s.closed.Load() {
		return errClosed
	}
	return s.pair.Run(b)
}

// Participants are the pair's: its two threads, or its thread and child.
func (s *pairShape) Participants() exp.Participants { return s.pair.Participants() }

func (s *pairShape) Close() error {
	s.closed.Store(true)
	return s.pair.Close()
}

// starveShape is the timer shape inside a child ctxlab with GOMAXPROCS=1
// (and GODEBUG=asyncpreemptoff=1 for the child only); the child streams
// each wake delay back over a pipe (starveChild). After starveAfter
// measured samples (fewer if a repetition is shorter) we tell it to start
// its hog; with asynchronous preemption off, a spinning hog then never
// lets the timer goroutine run again, and the arm times out.
type starveShape struct {
	kind        string // the child's hog
	proc        *child.Proc
	dataR, ctlW *os.File
	rbuf        [8]byte
	closed      atomic.Bool
	// starveAt is the timed samples after which the child starts its hog:
	// set by StartTimed (0 until the timed repetitions begin).
	starveAt atomic.Int64
	measured int  // timed samples so far
	told     bool // the child was told to start its hog
	samples  int  // wake-ups that arrived
	hogAfter int  // samples before the child said its hog started (-1 = never)
}

func openStarve(ctx context.Context, a ifArm) (*starveShape, error) {
	dataR, dataW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		dataR.Close()
		dataW.Close()
		return nil, err
	}
	env := []string{"GOMAXPROCS=1"}
	if a.preemptOff {
		env = append(env, "GODEBUG=asyncpreemptoff=1")
	}
	proc, err := child.Start(ctx, child.Options{Role: "starve", Env: env,
		Args:  []string{strconv.Itoa(a.hog.N), a.hog.Kind},
		Files: []*os.File{dataW, ctlR}})
	dataW.Close()
	ctlR.Close()
	if err != nil {
		dataR.Close()
		ctlW.Close()
		return nil, err
	}
	s := &starveShape{kind: a.hog.Kind, proc: proc, dataR: dataR, ctlW: ctlW, hogAfter: -1}
	// The first wake-up proves the child is up, so its start-up is not
	// taken for an op by the runner's warm-up.
	if _, err := io.ReadFull(dataR, s.rbuf[:]); err != nil {
		s.Close()
		return nil, fmt.Errorf("starve child: %w", err)
	}
	return s, nil
}

// StartTimed implements exp.TimedPhase: the hog starts after a few timed
// samples of the first repetition (half of it at most), so the figures
// hold both the unstarved and the starved timer.
func (s *starveShape) StartTimed(opsPerRep int) {
	s.starveAt.Store(int64(max(1, min(starveAfter, opsPerRep/2))))
}

func (s *starveShape) Run(b *measure.B) error {
	after := int(s.starveAt.Load())
	for i := 0; i < b.N; {
		if _, err := io.ReadFull(s.dataR, s.rbuf[:]); err != nil {
			if s.closed.Load() {
				return errClosed
			}
			return fmt.Errorf("starve child: %w", err)
		}
		v := binary.LittleEndian.Uint64(s.rbuf[:])
		if v == hogStartMark {
			s.hogAfter = s.samples
			continue
		}
		s.samples++
		if b.S.Start(i) != 0 {
			b.S.Record(int64(v))
			s.measured++
		}
		if after > 0 && s.measured >= after && !s.told {
			s.told = true
			if _, err := s.ctlW.Write([]byte{1}); err != nil {
				return err
			}
		}
		i++
	}
	return nil
}

// Participants: the timer goroutine and its hog live in the child.
func (s *starveShape) Participants() exp.Participants {
	return exp.Participants{PIDs: []int{s.proc.PID()}}
}

func (s *starveShape) Close() error {
	s.closed.Store(true)
	s.proc.Kill()
	s.dataR.Close()
	s.ctlW.Close()
	return nil
}
