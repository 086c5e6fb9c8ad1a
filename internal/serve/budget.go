package serve

import (
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// Sizing limits of one probe repetition. Below minBenchTime a repetition
// is mostly set-up and timer noise; above maxBenchTime a probe costs more
// than a fleet-wide signal is worth.
const (
	minBenchTime = time.Millisecond
	maxBenchTime = 50 * time.Millisecond
	// probeReps is the repetitions per probe: the fewest that still give a spread.
	probeReps = 3
	// probeShare is the part of the budget the probes may use; the rest is
	// left to the exporter itself (scrapes, the Go runtime) and to a window
	// that holds one cycle start more than it holds cycles (10 minutes at
	// 60 s can see 11 cycles begin).
	probeShare = 0.8
)

// budget keeps the whole exporter's CPU within a fraction of one core
// averaged over time. Each probe gets an equal share of the probes' part of
// a cycle's allowance; after each run its measured CPU (getrusage, self and
// reaped children) resizes its next repetition time (stretch or shrink). A
// probe that costs more than its share even at the smallest size runs only
// every k-th cycle, so its average fits. On top of that a running account
// holds the exporter's whole CPU since start — probes, scrapes, the Go
// runtime, probe partners and hogs — to the allowance (perCycle for every
// interval begun): when the host is busy and probes cost more, the next
// ones are put off until the account has room. Every run over its share
// and every probe put off is counted.
type budget struct {
	perCycle float64 // CPU seconds the exporter may use per cycle
	share    float64 // CPU seconds per probe per cycle
	probes   map[string]*probeBudget
	interval time.Duration
	start    time.Time
	now      func() time.Time
	// cpu reads the exporter's CPU seconds (self and reaped children).
	cpu  func() float64
	cpu0 float64
}

type probeBudget struct {
	benchTime time.Duration
	every     int // run once every `every` cycles
	wait      int // cycles still to skip
	lastCPU   float64
	ran       bool
}

func newBudget(fraction float64, interval time.Duration, names []string) *budget {
	b := &budget{perCycle: fraction * interval.Seconds(), probes: map[string]*probeBudget{},
		interval: interval, now: time.Now, cpu: cpuSeconds}
	b.start, b.cpu0 = b.now(), b.cpu()
	if len(names) > 0 {
		b.share = probeShare * b.perCycle / float64(len(names))
	}
	// First guess: warm-up plus reps repetitions, two busy threads each.
	bt := time.Duration(b.share / float64(2*(probeReps+1)) * float64(time.Second))
	bt = clampDur(bt, minBenchTime, maxBenchTime)
	for _, n := range names {
		b.probes[n] = &probeBudget{benchTime: bt, every: 1}
	}
	return b
}

// spent is the exporter's CPU seconds since start.
func (b *budget) spent() float64 { return b.cpu() - b.cpu0 }

// due says whether a probe runs this cycle; false means put off for the
// budget: its turn in an every-k rotation has not come, or its last cost
// would take the exporter's CPU since start past the allowance. Every probe
// runs once at start, so the page is complete from the first cycle; the
// account then recovers any overdraft from later runs.
func (b *budget) due(name string) bool {
	p := b.probes[name]
	if !p.ran {
		return true
	}
	if p.wait > 0 {
		p.wait--
		return false
	}
	return b.spent()+p.lastCPU <= probeShare*b.allowance()
}

// allowance is the CPU the exporter may have used by now: perCycle for
// every interval begun since start.
func (b *budget) allowance() float64 {
	cycles := math.Floor(b.now().Sub(b.start).Seconds()/b.interval.Seconds()) + 1
	return cycles * b.perCycle
}

// observe records a run's CPU seconds and resizes the probe; it reports
// whether the run went over its share.
func (b *budget) observe(name string, cpu float64) (over bool) {
	p := b.probes[name]
	p.lastCPU, p.ran = cpu, true
	if cpu <= 0 || b.share <= 0 {
		return false
	}
	over = cpu > b.share
	// Aim at 80% of the share, changing size by at most 4× down or 2× up.
	ratio := math.Max(0.25, math.Min(2, 0.8*b.share/cpu))
	bt := clampDur(time.Duration(float64(p.benchTime)*ratio), minBenchTime, maxBenchTime)
	p.every = 1
	if over && bt == p.benchTime && p.benchTime == minBenchTime {
		// Cannot shrink further: spread the cost over several cycles.
		p.every = int(math.Ceil(cpu / b.share))
	}
	p.benchTime = bt
	p.wait = p.every - 1
	return over
}

func clampDur(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(hi, d))
}

// cpuSeconds is this process's CPU time plus that of its reaped children
// (a process probe's partner is reaped when the probe closes).
func cpuSeconds() float64 {
	var self, kids unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &self)
	unix.Getrusage(unix.RUSAGE_CHILDREN, &kids)
	tv := func(t unix.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}
