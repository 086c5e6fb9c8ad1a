// Package mech implements the handoff mechanisms ctxlab measures — Go
// channels, mutex+cond, raw futex, eventfd, pipe, socketpair, and a futex on
// a shared page across processes — behind one small Endpoint interface, plus
// the locked-thread worker the thread substrate is made of.
//
// Echo and RoundTrips over a kernel mechanism run their system calls raw,
// inside system-call sections (section_linux.go): the runtime sees a run of
// round trips as one blocking call, so a stop-the-world never waits on a
// blocked worker and the runtime is entered once per run of round trips,
// not per op. A lone Recv waits through unix.Syscall, so the Go runtime
// may hand the P on while the thread sleeps (NewRawFDEnd's waits raw, for a
// writer in another process); a Send never blocks and is a raw call.
package mech

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// Stop is the value that tells an echoing partner to exit.
const Stop = ^uint64(0)

// ErrStopped is returned by Recv once the pair has been stopped or the
// other side has gone away.
var ErrStopped = errors.New("mech: stopped")

// ErrUnsupported is wrapped by a constructor's error when the mechanism
// cannot be made on this host (its system call missing or refused); the
// error says why.
var ErrUnsupported = errors.New("unsupported")

// Endpoint is one side of a two-party handoff. Channels, cond, pipes and
// sockets carry the value; futex and eventfd hand over only the wake-up
// (Recv returns a sequence number or count), which is all a handoff needs.
type Endpoint interface {
	Send(v uint64) error
	Recv() (uint64, error)
}

// Pair is two connected endpoints in one process. Stop unblocks both sides
// from any goroutine, whatever they are doing (each then sees ErrStopped or
// the Stop value); Close releases the resources once both sides are done.
type Pair struct {
	A, B  Endpoint
	Stop  func()
	Close func() error
}

// Echo answers every value received on e until Stop or an error.
func Echo(e Endpoint) error {
	if l, ok := e.(looper); ok {
		return l.echo()
	}
	for {
		v, err := e.Recv()
		if err != nil {
			if errors.Is(err, ErrStopped) {
				return nil
			}
			return err
		}
		if v == Stop {
			return nil
		}
		if err := e.Send(v); err != nil {
			if errors.Is(err, ErrStopped) {
				return nil
			}
			return err
		}
	}
}

// RoundTrips does n round trips from side a: send, then wait for the
// reply. Op i is timed when the sampler (which may be nil) says so.
func RoundTrips(a Endpoint, n int, s *measure.Sampler) error {
	if l, ok := a.(looper); ok {
		return l.roundTrips(n, s)
	}
	for i := 0; i < n; i++ {
		t := s.Start(i)
		if err := a.Send(uint64(i)); err != nil {
			return err
		}
		v, err := a.Recv()
		if err != nil {
			return err
		}
		if v == Stop { // the pair is being torn down (Pair.Stop)
			return ErrStopped
		}
		s.Stop(t)
	}
	return nil
}

// looper is an Endpoint that runs Echo's and RoundTrips' loops itself:
// the same handoff without two dynamic calls per op. For a Go channel
// round trip (~300 ns) those calls were ~8% of the figure
// (BenchmarkEndpointChanRoundTrip against BenchmarkPlainChanRoundTrip,
// measured before chanEnd had its own loops). A kernel mechanism's loops
// run in system-call sections instead (tripper), so that no op pays the
// runtime's system-call bookkeeping.
type looper interface {
	echo() error
	roundTrips(n int, s *measure.Sampler) error
}

// tripper is a looper over a kernel mechanism whose loops run in
// system-call sections (section_linux.go): trips runs n round trips in
// one section, recording the latencies of those s samples.
type tripper interface {
	looper
	trips(n int, s *measure.Sampler) error
}

var threadKinds = map[string]func() (*Pair, error){}
var processKinds = map[string]processKind{}

type processKind struct {
	// parent makes the parent's endpoint and the files to give the child
	// (as fds 3, 4, …); closeChildFiles is called after the child starts.
	parent func() (ep Endpoint, stop func(), childFiles []*os.File, closeAll func() error, err error)
	// child rebuilds the endpoint from the inherited files.
	child func(files []*os.File) (Endpoint, error)
}

// ThreadKinds lists the mechanisms that connect two threads (or goroutines) of one process.
func ThreadKinds() []string { return keys(threadKinds) }

// ProcessKinds lists the mechanisms that connect two processes.
func ProcessKinds() []string { return keys(processKinds) }

// NewPair connects two workers of one process with mechanism kind.
func NewPair(kind string) (*Pair, error) {
	f, ok := threadKinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown in-process mechanism %q (have %v)", kind, ThreadKinds())
	}
	return f()
}

// ParentEnd makes the parent's side of a cross-process pair: its endpoint,
// a stop function that unblocks it, the files to pass to the child, and a
// close function for the parent's resources.
func ParentEnd(kind string) (Endpoint, func(), []*os.File, func() error, error) {
	k, ok := processKinds[kind]
	if !ok {
		return nil, nil, nil, nil, fmt.Errorf("unknown cross-process mechanism %q (have %v)", kind, ProcessKinds())
	}
	return k.parent()
}

// ChildEnd rebuilds the child's endpoint from inherited files.
func ChildEnd(kind string, files []*os.File) (Endpoint, error) {
	k, ok := processKinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown cross-process mechanism %q", kind)
	}
	return k.child(files)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
