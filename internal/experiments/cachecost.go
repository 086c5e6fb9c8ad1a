package experiments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// cachecost: the indirect cost of switching (SPEC §5.8) — after other
// workers ran, a thread's caches, TLB and predictors are cold and the same
// work runs slower. No switch counter shows it; wall and on-CPU time do.
func init() {
	exp.Register(&cachecostExp{exp.Spec{
		Name:       "cachecost",
		Order:      90,
		References: cachecostRefs,
		Summary:    "the indirect cost of switching: cold caches after other workers ran (sweep, per-switch, slice)",
		Op:         "element visited",
		OpLabels:   []exp.OpLabel{{Label: "elementvisited", Has: "sweep"}, {Label: "roundtrip", Has: "pingpong"}},
		Doc: `sweep: T locked threads each follow their own W-byte working set (one
4-byte element per load, sequential or a shuffled cycle of dependent loads),
the same total work at T = cores and at T ≫ cores (16× by default), with
GOMAXPROCS > T so the kernel multiplexes them; a variant at GOMAXPROCS =
cores lets the Go runtime do it instead. One op is one element visited by
any worker: wall ns per element; per-worker on-CPU time (CLOCK_THREAD_CPUTIME_ID)
and run-queue wait (schedstat) per element separate "waited for a CPU" from
"ran slower on a CPU" (the indirect cost).
per-switch: two threads pinned to one CPU ping-pong over a futex, each
following its whole W-byte array (random) between handoffs; indirect cost
per switch = (round trip at W − two warm traversals alone − round trip at
W=0) / 2, as a curve over W.
slice: a worker doing fixed work (256 KiB random) that hands the CPU to a
partner with its own 4 MiB working set every ~50 µs vs every ~4 ms of its
work; reports its throughput (on-CPU ns per element) in both cases.
Counters (instructions, cycles, LLC/dTLB misses) are opened for every arm
and shown side by side where the machine has them.`,
		Arms:     cachecostArms,
		Checks:   cachecostChecks,
		Findings: cachecostFindings,
		Metrics:  cachecostMetrics,
	}})
	exp.RegisterOption(cachecostW)
	exp.RegisterOption(cachecostT)
	exp.RegisterOption(cachecostPattern)
}

// cachecostExp is cachecost with its hooks: its verdict lines, the
// indirect cost curve price reads and the arms that measure it, the pairs
// measured side by side, and its working sets drawn on a bytes axis.
type cachecostExp struct{ exp.Spec }

var _ interface {
	exp.Verdicter
	exp.IndirectCoster
	exp.Pairer
	exp.Sizer
} = (*cachecostExp)(nil)

func (*cachecostExp) Verdict(v *exp.VerdictRun) []exp.VerdictSection { return cachecostVerdict(v) }

func (*cachecostExp) IndirectCost(arms []result.Arm) []exp.CostPoint { return cachecostCurve(arms) }

func (*cachecostExp) IndirectArms() []string { return []string{"cachecost/per-switch/*"} }

func (*cachecostExp) Pairs() []exp.Pair { return cachecostPairs }

func (*cachecostExp) SizeParams() []string { return []string{"W_bytes"} }

// cachecost's --set options. T's floor, more than the run's CPUs, is
// checked with the run's CPUs (cachecostArms).
var (
	cachecostW = &exp.Option[[]int64]{Key: "cachecost.w", Parse: parseSizes,
		Doc: "sweep working-set sizes per worker, e.g. 16KiB,2MiB,32MiB (4KiB..1GiB; default 16KiB,256KiB,2MiB,8MiB,32MiB,128MiB)"}
	cachecostT = &exp.Option[int]{Key: "cachecost.t",
		Doc: "sweep: the many-workers count T ≫ cores (cores+1..4096; default 16× the run's CPUs)",
		Parse: func(s string) (int, error) {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > maxSweepT {
				return 0, fmt.Errorf("--set cachecost.t=%s: want a whole number of workers, more than the run's CPUs, to %d", s, maxSweepT)
			}
			return n, nil
		}}
	cachecostPattern = exp.WordsOption("cachecost.pattern", "sweep access patterns: seq, random or seq,random (default both)",
		"pattern", []string{"seq", "random"}, "seq, random or seq,random")
)

// Sizes and defaults of the cachecost arms.
const (
	minSweepW   = 4 * result.KiB
	maxSweepW   = result.GiB
	maxSweepT   = 4096
	manyFactor  = 16 // T ≫ cores: 16× cores by default
	sliceXBytes = 256 * result.KiB
	sliceYBytes = 4 * result.MiB
	// memShare is the part of MemAvailable a sweep may fill.
	memShare = 0.75
)

var (
	defaultSweepW = []int64{16 * result.KiB, 256 * result.KiB, 2 * result.MiB, 8 * result.MiB, 32 * result.MiB, 128 * result.MiB}
	quickSweepW   = []int64{256 * result.KiB, 8 * result.MiB}
	// gomaxprocs=cores variants run at these sizes (every size with --full).
	runtimeMuxW    = []int64{256 * result.KiB, 32 * result.MiB}
	perSwitchW     = []int64{0, 16 * result.KiB, 256 * result.KiB, 1 * result.MiB, 4 * result.MiB}
	perSwitchWFull = []int64{0, 16 * result.KiB, 64 * result.KiB, 256 * result.KiB, 1 * result.MiB, 4 * result.MiB, 16 * result.MiB}
	sliceEvery     = []struct {
		name string
		ns   int64
	}{{"50µs", 50_000}, {"4ms", 4_000_000}}
)

func cachecostArms(p exp.Params) ([]exp.Arm, error) {
	cp, err := cachecostOptions(p)
	if err != nil {
		return nil, err
	}
	if p.Host != nil {
		cp.memAvail = p.Host.MemAvailableB
	}
	// A sweep whose working sets cannot fit is refused before anything
	// starts: sizes the user chose are a usage error, default sizes are
	// listed as unsupported with the same reason.
	for _, w := range cp.ws {
		if why := cp.fits(w, cp.many); why != "" && (cp.wGiven || cp.tGiven) {
			return nil, errors.New("cachecost sweep: " + why)
		}
	}
	arms := cp.sweepArms(p)
	if p.Suite == exp.SuiteQuick {
		return arms, nil
	}
	return append(arms, cachecostPairArms(p)...), nil
}

// cachecostKey is a cachecost arm's key: cachecost/sweep/random/W=8MiB/T=64,
// cachecost/per-switch/solo/W=1MiB, cachecost/slice/block-every=4ms.
func cachecostKey(segs ...exp.Segment) exp.ArmKey { return exp.Key("cachecost", segs...) }

// cachecostPairs: the verdict's sweep line, the most threads against the
// fewest at the largest working set of the default sweep, measured side by
// side (runner: pairs; the two run at different GOMAXPROCS, so they
// alternate by repetition).
var cachecostPairs = []exp.Pair{{Label: "32 vs 2 threads sweeping 8 MiB each",
	A: cachecostKey(exp.Seg("sweep"), exp.Seg("seq"), exp.KV("W", "8MiB"), exp.KV("T", 32)).String(),
	B: cachecostKey(exp.Seg("sweep"), exp.Seg("seq"), exp.KV("W", "8MiB"), exp.KV("T", 2)).String()}}

// cachecostPlan is what the sweep's arms are built from: the run's
// options and the memory their working sets may fill.
type cachecostPlan struct {
	cores    int
	ws       []int64
	wGiven   bool
	many     int // T ≫ cores
	tGiven   bool
	patterns []string
	memAvail int64
}

// cachecostOptions reads --set cachecost.w, cachecost.t and
// cachecost.pattern, and holds T to the host's thread limits.
func cachecostOptions(p exp.Params) (cachecostPlan, error) {
	cores := len(p.CPUs)
	ws, wGiven := defaultSweepW, false
	if p.Suite == exp.SuiteQuick {
		ws = quickSweepW
	}
	if w, ok := cachecostW.Get(p); ok {
		ws, wGiven = w, true
	}
	many, tGiven := manyFactor*cores, false
	if n, ok := cachecostT.Get(p); ok {
		if n <= cores {
			return cachecostPlan{}, fmt.Errorf("--set cachecost.t=%d: want a whole number of workers from %d (more than the run's %d CPUs) to %d", n, cores+1, cores, maxSweepT)
		}
		many, tGiven = n, true
	}
	if h := p.Host; h != nil {
		if lim := h.ThreadsMax / 2; lim > 0 && int64(many) > lim {
			return cachecostPlan{}, fmt.Errorf("cachecost sweep: T=%d workers is more than half of threads-max (%d); use --set cachecost.t=%d or fewer", many, h.ThreadsMax, lim)
		}
		if lim := h.NprocLimit / 2; lim > 0 && int64(many) > lim {
			return cachecostPlan{}, fmt.Errorf("cachecost sweep: T=%d workers is more than half of RLIMIT_NPROC (%d); use --set cachecost.t=%d or fewer", many, h.NprocLimit, lim)
		}
	}
	patterns := []string{"seq", "random"}
	if p.Suite == exp.SuiteQuick {
		patterns = []string{"seq"}
	}
	patterns = cachecostPattern.Or(p, patterns)
	return cachecostPlan{cores: cores, ws: ws, wGiven: wGiven, many: many, tGiven: tGiven, patterns: patterns}, nil
}

// fits says why T working sets of W bytes do not fit the memory share,
// "" when they do.
func (cp cachecostPlan) fits(w int64, t int) string {
	need := w * int64(t+1) // T sets plus the cycle they are copied from
	if cp.memAvail <= 0 || float64(need) <= memShare*float64(cp.memAvail) {
		return ""
	}
	return fmt.Sprintf("W=%s × T=%d workers needs %s of working sets; %.0f%% of MemAvailable is %s: use a smaller W (--set cachecost.w=%s) or fewer workers (--set cachecost.t=…)",
		result.SizeName(w), t, result.FormatBytes(float64(need)), 100*memShare, result.FormatBytes(memShare*float64(cp.memAvail)), result.SizeName(largestFitting(cp.memAvail, t)))
}

// sweepArms: each pattern and W at T = cores and T ≫ cores, GOMAXPROCS
// above T, and at some sizes T ≫ cores at GOMAXPROCS = cores (the Go
// runtime multiplexes them).
func (cp cachecostPlan) sweepArms(p exp.Params) []exp.Arm {
	unp := exp.Unpinned(p)
	var arms []exp.Arm
	for _, pat := range cp.patterns {
		for _, w := range cp.ws {
			type variant struct {
				t, gmp     int
				runtimeMux bool // GOMAXPROCS = cores: named for it
			}
			vs := []variant{{cp.cores, cp.cores + 1, false}, {cp.many, cp.many + 1, false}}
			if p.Suite == exp.SuiteFull || slices.Contains(runtimeMuxW, w) && p.Suite != exp.SuiteQuick {
				vs = append(vs, variant{cp.many, cp.cores, true})
			}
			for _, v := range vs {
				name := cachecostKey(exp.Seg("sweep"), exp.Seg(pat), exp.KV("W", result.SizeName(w)), exp.KV("T", v.t))
				mux := "kernel"
				if v.runtimeMux {
					name, mux = name.With(exp.KV("gomaxprocs", cp.cores)), "go-runtime"
				}
				arms = append(arms, exp.Arm{
					Name:      name.String(),
					Substrate: "thread", Mechanism: "preemption", Unit: "ns/element",
					Params: map[string]string{"mode": "sweep", "pattern": pat, "W": result.SizeName(w), "W_bytes": strconv.FormatInt(w, 10),
						"T": strconv.Itoa(v.t), "cores": strconv.Itoa(cp.cores), "multiplexer": mux,
						// the report's side-by-side block pairs arms with the same key
						"compare": fmt.Sprintf("sweep %s W=%s", pat, result.SizeName(w))},
					GOMAXPROCS: v.gmp, Placement: unp.Name, CPUs: unp.Process,
					Quick:       p.Suite == exp.SuiteQuick && !v.runtimeMux,
					Reps:        quickReps(p),
					Unsupported: cp.fits(w, v.t),
					Counters:    true,
					Open: func(ctx context.Context) (exp.Bench, error) {
						return openSweep(ctx, v.t, w, pat == "random")
					},
				})
			}
		}
	}
	return arms
}

// cachecostPairArms are the arms of two threads on one CPU: per-switch's
// round trips over W-byte arrays beside solo's traversals without a
// switch, and slice's fixed work blocking often or rarely.
func cachecostPairArms(p exp.Params) []exp.Arm {
	same := exp.Placements(p)[1]
	psw := perSwitchW
	if p.Suite == exp.SuiteFull {
		psw = perSwitchWFull
	}
	var arms []exp.Arm
	for _, w := range psw {
		arms = append(arms, exp.Arm{
			Name:      cachecostKey(exp.Seg("per-switch"), exp.Seg("pingpong"), exp.KV("W", result.SizeName(w))).String(),
			Substrate: "thread", Mechanism: "futex", Op: "round trip (2 switches, each side follows its whole array)",
			Params:     map[string]string{"mode": "per-switch", "W": result.SizeName(w), "W_bytes": strconv.FormatInt(w, 10), "pattern": "random"},
			GOMAXPROCS: 3, Placement: same.Name, CPUs: same.Process, Counters: true,
			Open: func(ctx context.Context) (exp.Bench, error) { return openPairBench(same.A, w, w, 0) },
		})
		if w == 0 {
			continue
		}
		arms = append(arms, exp.Arm{
			Name:      cachecostKey(exp.Seg("per-switch"), exp.Seg("solo"), exp.KV("W", result.SizeName(w))).String(),
			Substrate: "thread", Mechanism: "none", Op: "two traversals of one warm array, no switch",
			Params:     map[string]string{"mode": "per-switch-solo", "W": result.SizeName(w), "W_bytes": strconv.FormatInt(w, 10), "pattern": "random"},
			GOMAXPROCS: 3, Placement: same.Name, CPUs: same.Process, Counters: true,
			Open: func(ctx context.Context) (exp.Bench, error) { return openSolo(same.A, w) },
		})
	}
	for _, e := range sliceEvery {
		arms = append(arms, exp.Arm{
			Name:      cachecostKey(exp.Seg("slice"), exp.KV("block-every", e.name)).String(),
			Substrate: "thread", Mechanism: "futex", Unit: "ns/element",
			Op: "element of the blocking worker's fixed work (wall includes the partner's turns)",
			Params: map[string]string{"mode": "slice", "block_every": e.name, "block_every_ns": strconv.FormatInt(e.ns, 10),
				"W_worker": result.SizeName(sliceXBytes), "W_partner": result.SizeName(sliceYBytes)},
			GOMAXPROCS: 3, Placement: same.Name, CPUs: same.Process, Counters: true,
			Open: func(ctx context.Context) (exp.Bench, error) {
				return openPairBench(same.A, sliceXBytes, sliceYBytes, e.ns)
			},
		})
	}
	return arms
}

// quickReps: the quick sweep's repetitions are short (60 ms), so take 5
// of them rather than 3 to see through a shared machine's noise.
func quickReps(p exp.Params) int {
	if p.Suite == exp.SuiteQuick {
		return 5
	}
	return 0
}

// largestFitting is the largest power-of-two W whose T sets fit the memory share.
func largestFitting(memAvail int64, t int) int64 {
	w := int64(minSweepW)
	for w*2*int64(t+1) <= int64(memShare*float64(memAvail)) && w*2 <= maxSweepW {
		w *= 2
	}
	return w
}

// parseSizes parses "16KiB,2MiB,512" (KiB/K, MiB/M, GiB/G, or bytes).
func parseSizes(s string) ([]int64, error) {
	if n := strings.Count(s, ",") + 1; n > maxSweepSizes {
		return nil, fmt.Errorf("--set cachecost.w=%s: %d sizes; at most %d", s, n, maxSweepSizes)
	}
	var out []int64
	for _, part := range strings.Split(s, ",") {
		w, err := result.ParseSize(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("--set cachecost.w=%s: %v", s, err)
		}
		if w < minSweepW || w > maxSweepW {
			return nil, fmt.Errorf("--set cachecost.w=%s: %s is out of range; want %s..%s", s, part, result.SizeName(minSweepW), result.SizeName(maxSweepW))
		}
		out = append(out, w)
	}
	return out, nil
}

// maxSweepSizes bounds cachecost.w: each size is a set of arms.
const maxSweepSizes = 32

// openPairBench opens the two threads on CPU cpu with arrays of wa and wb
// bytes: per-switch's round trips when every is 0, else slice's, whose
// turn is calibrated to ~every ns of A's warm work.
func openPairBench(cpu []int, wa, wb int64, every int64) (exp.Bench, error) {
	if every <= 0 {
		ps := &perSwitchBench{}
		if err := ps.open(cpu, wa, wb); err != nil {
			return nil, err
		}
		whole := len(ps.by)
		ps.startB(func() int { return whole })
		return ps, nil
	}
	sl := &sliceBench{}
	if err := sl.open(cpu, wa, wb); err != nil {
		return nil, err
	}
	// Calibrate A's warm cost per element so its turn lasts ~every ns.
	var per float64
	sl.a.Do(func() {
		sl.apos = chase(sl.ax, sl.apos, 4*len(sl.ax))
		t0 := measure.Now()
		sl.apos = chase(sl.ax, sl.apos, 4*len(sl.ax))
		per = float64(measure.Now()-t0) / float64(4*len(sl.ax))
	})
	sl.chunkA = max(1, int(float64(every)/max(per, 0.1)))
	sl.startB(func() int { return int(sl.turn.Load()) })
	return sl, nil
}
