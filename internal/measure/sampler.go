package measure

import (
	"sort"
	_ "unsafe" // go:linkname
)

// Sampler records per-op latencies for a sample of ops into a buffer
// allocated before the timed loop, so recording never allocates.
type Sampler struct {
	every int
	left  int // calls to Start until the next sampled op
	buf   []int64
	n     int
	// markN and markLeft are n and left at the last Mark.
	markN, markLeft int
}

// NewSampler prepares to sample every `every`-th op of a loop of ops ops,
// keeping at most max samples and sampling no more often than every
// minEvery-th op (so the timestamps' own cost stays small next to the ops).
func NewSampler(ops, max, minEvery int) *Sampler {
	if max < 1 {
		max = 1
	}
	every := 1
	if ops > max {
		every = (ops + max - 1) / max
	}
	if every < minEvery {
		every = minEvery
	}
	return &Sampler{every: every, buf: make([]int64, ops/every+1)}
}

// Start returns a timestamp if this op is sampled, or 0 if it is not:
// every Every()-th call, counted down (a modulo per op costs more than the
// cheapest ops ctxlab times). i, the op's index, documents the call site.
func (s *Sampler) Start(i int) int64 {
	if s == nil {
		return 0
	}
	if s.left > 0 {
		s.left--
		return 0
	}
	s.left = s.every - 1
	return Now() | 1 // never 0: 0 means "not sampled"; 1 ns is below any clock's resolution
}

// Unsampled returns how many of the next max ops Start would not sample,
// and counts them as started: a bench that runs unsampled ops in bulk (a
// system-call section) runs that many, then takes the next op with Take
// (or Start). Like Take and Record it runs inside system-call sections,
// so it is //go:nosplit and calls nothing.
//
//go:nosplit
func (s *Sampler) Unsampled(max int) int {
	if s == nil {
		return max
	}
	k := min(s.left, max)
	s.left -= k
	return k
}

// Take counts the next op as sampled, as Start would, without reading the
// clock: for a bench that times it with SectionNow and hands the latency
// to Record. It reports false when the next op is not one to sample.
//
//go:nosplit
func (s *Sampler) Take() bool {
	if s == nil || s.left > 0 {
		return false
	}
	s.left = s.every - 1
	return true
}

// SectionNow reads the runtime's monotonic clock (the one Now reads, from
// another origin: only a difference of two readings means anything) where
// no ordinary Go call may run: inside a system-call section (mech), on a
// thread that has given up its P, every call must be //go:nosplit. The
// receiver is not used; the method is the sampler's because a bench reads
// the clock only through the sampler the runner hands it.
//
//go:nosplit
func (*Sampler) SectionNow() int64 { return nanotime() }

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Stop records the latency of op i started at t (a value from Start).
func (s *Sampler) Stop(t int64) {
	if t == 0 || s == nil || s.n >= len(s.buf) {
		return
	}
	s.buf[s.n] = Now() - t
	s.n++
}

// Stamp is a timestamp for an op the bench chose to sample itself (a
// whole lap of a ring, every Every() ops), for StopPer.
func (s *Sampler) Stamp() int64 { return Now() | 1 }

// StopLess records the latency of an op started at t (a value from Start)
// less d ns, never below 0: how late a sleep of d ended.
func (s *Sampler) StopLess(t, d int64) {
	if t == 0 || s == nil || s.n >= len(s.buf) {
		return
	}
	s.buf[s.n] = max(0, Now()-t-d)
	s.n++
}

// StopPer records the time since t (a value from Start) divided by per:
// the mean of per ops timed together (one lap of a ring of per hops).
func (s *Sampler) StopPer(t int64, per int) {
	if t == 0 || s == nil || s.n >= len(s.buf) || per < 1 {
		return
	}
	s.buf[s.n] = (Now() - t) / int64(per)
	s.n++
}

// SinceMono records the time since stamp, a CLOCK_MONOTONIC reading in ns
// taken by another process (the clock every process shares), for a
// sampled op (t from Start, 0 = not sampled).
func (s *Sampler) SinceMono(t, stamp int64) {
	if t == 0 || s == nil || s.n >= len(s.buf) {
		return
	}
	s.buf[s.n] = max(0, MonoNow()-stamp)
	s.n++
}

// Record stores an externally measured latency in ns.
//
//go:nosplit
func (s *Sampler) Record(ns int64) {
	if s == nil || uint(s.n) >= uint(len(s.buf)) { // unsigned: no bounds check, which a section may not call
		return
	}
	s.buf[s.n] = ns
	s.n++
}

// Mark remembers how many samples are recorded, so that Rollback can drop
// what a repetition that then fails recorded. It does not allocate; the
// runner calls it outside the clock, before each timed repetition.
func (s *Sampler) Mark() {
	if s == nil {
		return
	}
	s.markN, s.markLeft = s.n, s.left
}

// Rollback drops every sample recorded since the last Mark (all of them if
// Mark was never called), and restarts the sampling countdown where it
// was: a failed repetition leaves nothing in the samples.
func (s *Sampler) Rollback() {
	if s == nil {
		return
	}
	s.n, s.left = s.markN, s.markLeft
}

// Every is the sampling interval.
func (s *Sampler) Every() int {
	if s == nil {
		return 0
	}
	return s.every
}

// Sorted returns the recorded samples in ascending order (a copy).
func (s *Sampler) Sorted() []int64 {
	out := append([]int64(nil), s.buf[:s.n]...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Len is the number of samples recorded.
func (s *Sampler) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}
