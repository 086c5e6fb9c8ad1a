package experiments

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/mech"
)

// Hog placements: where a CPU hog runs relative to the measured workers.
const (
	hogGoroutine = "goroutine" // a goroutine in ctxlab's own runtime: it holds a P
	hogThread    = "thread"    // a goroutine locked to its own OS thread: still holds a P while it runs Go code
	hogProcess   = "process"   // a separate ctxlab process: competes for CPUs in the kernel only
)

// Hog kinds: what a hog does with its CPU.
const (
	hogSpin    = "spin"    // pure arithmetic, no calls: only asynchronous preemption stops it
	hogStream  = "stream"  // read-modify-write over a buffer larger than the LLC: pollutes the caches
	hogGosched = "gosched" // spin that calls runtime.Gosched() every few µs: the cooperative fix
)

func init() {
	child.Register("hog", hogChild)
}

// hogSpec says which hogs to start.
type hogSpec struct {
	N        int
	Place    string
	Kind     string
	CPUs     []int // pin hog threads and processes (nil = not pinned)
	BufBytes int64 // stream buffer, > LLC
}

// hogSet is a running set of hogs, of one placement (goroutineHogs,
// threadHogs, processHogs); Stop ends every one of them and waits. Safe
// to call more than once and from any goroutine.
type hogSet interface {
	Stop()
	// PIDs are the hog processes; TIDs the OS threads of thread hogs (for
	// tests that prove they are gone).
	PIDs() []int
	TIDs() []int
}

// sink keeps the hogs' arithmetic from being optimised away.
var sink atomic.Uint64

// hogLoop burns the CPU as kind says until stop is set.
func hogLoop(stop *atomic.Bool, kind string, buf []byte) {
	x := uint64(1)
	switch kind {
	case hogStream:
		for !stop.Load() {
			// One pass over the buffer, a cache line at a time, checking
			// stop every 64 KiB.
			for off := 0; off < len(buf) && !stop.Load(); off += 64 << 10 {
				end := min(off+64<<10, len(buf))
				for i := off; i < end; i += 64 {
					buf[i]++
				}
			}
		}
	default:
		yield := kind == hogGosched
		for !stop.Load() {
			for i := 0; i < 4096; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
			if yield {
				runtime.Gosched()
			}
		}
	}
	sink.Add(x)
}

// streamBuf is the stream hogs' buffer: twice the LLC, at least 8 MiB.
func streamBuf(bytes int64) []byte {
	if bytes < 8<<20 {
		bytes = 8 << 20
	}
	b := make([]byte, bytes)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1 // fault the pages in now, outside any timing
	}
	return b
}

// startHogs starts s.N hogs; on error the ones already started are stopped.
func startHogs(ctx context.Context, s hogSpec) (hogSet, error) {
	if s.N == 0 {
		return noHogs{}, nil
	}
	var buf []byte
	if s.Kind == hogStream && s.Place != hogProcess {
		buf = streamBuf(s.BufBytes)
	}
	switch s.Place {
	case hogGoroutine:
		h := &goroutineHogs{}
		for i := 0; i < s.N; i++ {
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				hogLoop(&h.stop, s.Kind, buf)
			}()
		}
		return h, nil
	case hogThread:
		h := &threadHogs{}
		for i := 0; i < s.N; i++ {
			t, err := mech.StartThread(s.CPUs)
			if err != nil {
				h.Stop()
				return nil, fmt.Errorf("start hog thread: %w", err)
			}
			h.threads = append(h.threads, t)
			t.Go(func() { hogLoop(&h.stop, s.Kind, buf) })
		}
		return h, nil
	case hogProcess:
		h := &processHogs{}
		for i := 0; i < s.N; i++ {
			p, err := child.Start(ctx, child.Options{Role: "hog",
				Args: []string{s.Kind, strconv.FormatInt(s.BufBytes, 10)}, CPUs: s.CPUs})
			if err != nil {
				h.Stop()
				return nil, fmt.Errorf("start hog process: %w", err)
			}
			h.procs = append(h.procs, p)
		}
		return h, nil
	}
	return nil, fmt.Errorf("unknown hog placement %q", s.Place)
}

// noHogs is an arm without hogs.
type noHogs struct{}

func (noHogs) Stop()       {}
func (noHogs) PIDs() []int { return nil }
func (noHogs) TIDs() []int { return nil }

// goroutineHogs are goroutines in ctxlab's own runtime; Stop waits for
// them to return.
type goroutineHogs struct {
	stop atomic.Bool
	wg   sync.WaitGroup
}

func (h *goroutineHogs) Stop()       { h.stop.Store(true); h.wg.Wait() }
func (h *goroutineHogs) PIDs() []int { return nil }
func (h *goroutineHogs) TIDs() []int { return nil }

// threadHogs are locked threads; Stop ends them, and their OS threads
// are destroyed.
type threadHogs struct {
	stop    atomic.Bool
	threads []*mech.Thread
}

func (h *threadHogs) Stop() {
	h.stop.Store(true)
	for _, t := range h.threads {
		t.Stop()
	}
}

func (h *threadHogs) PIDs() []int { return nil }

func (h *threadHogs) TIDs() []int {
	var out []int
	for _, t := range h.threads {
		out = append(out, t.TID)
	}
	return out
}

// processHogs are ctxlab child processes; Stop kills and reaps them.
type processHogs struct{ procs []*child.Proc }

func (h *processHogs) Stop() {
	for _, p := range h.procs {
		p.Kill()
	}
}

func (h *processHogs) PIDs() []int {
	var out []int
	for _, p := range h.procs {
		out = append(out, p.PID())
	}
	return out
}

func (h *processHogs) TIDs() []int { return nil }

// hogChild is the "hog" child role: burn a CPU until killed (the parent
// kills it; the parent-death signal covers a parent that dies first).
// Args: kind, stream buffer bytes.
func hogChild(args []string, files []*os.File) int {
	size, err := childArgs("hog", "kind and buffer size", args, files, 2, 0, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var buf []byte
	if args[0] == hogStream {
		buf = streamBuf(size[0])
	}
	var never atomic.Bool
	hogLoop(&never, args[0], buf)
	return 0
}
