package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Comparisons measured side by side. Each comparison an experiment's
// verdict states (exp.Pairer) whose two arms the run measured is
// measured again once the experiment's arms are done: both arms are set up
// together and take turns, in random order each round, so that a slow
// phase of the machine falls on both, and the ratio is the median of the
// rounds' ratios, with the interval that holds it with 95% confidence.
// Arms under one placement (GOMAXPROCS and CPU set) take short bursts;
// arms that cannot be live under one placement alternate by
// repetition-long turns, the placement switched between them. Where the
// interval straddles "about the same" and "different", or is wider than
// the policy's Width, rounds are added until it is not or the pair's time
// budget is spent. The ratio stated is the CPU time's wherever both arms'
// CPU time was read, quiet machine or busy (the wall time's is kept beside
// it): CPU time per op is what the arms cost, while the wall time holds
// whatever the machine made them wait, which changes from run to run.

// PairPolicy sizes the turns of a comparison.
type PairPolicy struct {
	// Burst is a burst's length as a share of the benchtime (bursts:
	// 60 ms ÷ 12 = 5 ms in the quick suite), within MinBurst..MaxBurst.
	Burst              float64
	MinBurst, MaxBurst time.Duration
	// Rep is a repetition-long turn's length as a share of the benchtime.
	Rep float64 // (at least MinBurst)
	// Rounds are the rounds every comparison gets; More are added at a
	// time while the answer is undecided, or its interval is wider than
	// Width (hi ÷ lo), and the budget lasts.
	Rounds, More int
	Width        float64
}

// DefaultPairPolicy: bursts of a twelfth of the benchtime (5 ms quick, 17
// ms default), turns of a quarter of it where the placement alternates (15
// and 50 ms), 12 rounds, then 4 at a time until the interval is within
// 1.15× (about ±7% around the ratio: two runs' ratios then agree within
// about 15%).
var DefaultPairPolicy = PairPolicy{Burst: 1.0 / 12, MinBurst: 2 * time.Millisecond, MaxBurst: 25 * time.Millisecond,
	Rep: 0.25, Rounds: 12, More: 4, Width: 1.15}

// pairLimit bounds one comparison's set-up, turns and teardown.
const pairLimit = 30 * time.Second

// comparePairs measures the spec's pairs whose arms sel holds and the run
// measured (measured), in the order the spec declares them; a pair of a
// CPython arm's two builds stands for one pair per version that has both
// (exp.ExpandPairs).
func comparePairs(ctx context.Context, cfg Config, spec *exp.Spec, sel []exp.Arm, measured []result.Arm) []result.Comparison {
	pr, ok := exp.Hook[exp.Pairer](spec)
	if !ok {
		return nil
	}
	var out []result.Comparison
	for _, p := range exp.ExpandPairs(pr.Pairs(), sel) {
		a, okA := armNamed(sel, p.A)
		b, okB := armNamed(sel, p.B)
		ra, okRA := resultNamed(measured, p.A)
		rb, okRB := resultNamed(measured, p.B)
		if !okA || !okB || !okRA || !okRB || ctx.Err() != nil {
			continue
		}
		out = append(out, comparePair(ctx, cfg, p, [2]exp.Arm{a, b}, [2]result.Arm{ra, rb}))
	}
	return out
}

func armNamed(arms []exp.Arm, name string) (exp.Arm, bool) {
	for _, a := range arms {
		if a.Name == name && a.Unsupported == "" {
			return a, true
		}
	}
	return exp.Arm{}, false
}

// resultNamed is the measured arm of that name, if it has a figure that is
// a time per op.
func resultNamed(arms []result.Arm, name string) (result.Arm, bool) {
	for _, a := range arms {
		if a.Name == name && a.Status == result.StatusOK && a.HasFigure() && a.Median > 0 && (a.Unit == "" || strings.HasPrefix(a.Unit, "ns/")) {
			return a, true
		}
	}
	return result.Arm{}, false
}

// pairSide is one arm of a comparison being measured.
type pairSide struct {
	arm        exp.Arm
	gomaxprocs int
	bench      exp.Bench
	// mu guards close: the stop of a pair that ran out of time closes
	// the benches from another goroutine than the turns'.
	mu        sync.Mutex
	close     func() error
	batch     batchFunc
	probe     *taskProbe
	ops       int       // ops a turn
	wall, cpu []float64 // ns per op of each round's turn
	// placeEach: the two arms' placements differ, so each turn puts its
	// own on (else runPair puts the common one on once).
	placeEach bool
	// pins are the CPU sets the arm's set-up gave its own threads (a
	// cross-CPU pair pins each of its two to one CPU). Placing the process
	// for a turn sets every thread's CPU set, the arms' too, so each turn
	// puts these back after it.
	pins map[int][]int
	// reopen: the arm must not be live beside the other's turns
	// (exp.Arm.OneAtATime), so each of its turns sets it up, warms it and
	// tears it down.
	reopen bool
}

// comparePair measures one pair side by side; a pair that cannot be
// measured says why in its note, with no ratio.
func comparePair(ctx context.Context, cfg Config, p exp.Pair, arms [2]exp.Arm, res [2]result.Arm) result.Comparison {
	c := result.Comparison{Label: p.Label, A: p.A, B: p.B, Paired: result.PairedBursts, Basis: result.BasisWall, Answer: result.AnswerUndecided}
	def := runtime.GOMAXPROCS(0)
	sides := [2]*pairSide{}
	for i := range sides {
		sides[i] = &pairSide{arm: arms[i], gomaxprocs: orDefault(arms[i].GOMAXPROCS, def)}
	}
	if sides[0].gomaxprocs != sides[1].gomaxprocs || !slices.Equal(arms[0].CPUs, arms[1].CPUs) {
		c.Paired = result.PairedReps
		sides[0].placeEach, sides[1].placeEach = true, true
	}
	for i, a := range arms {
		if a.OneAtATime {
			c.Paired = result.PairedReps
			sides[i].reopen = true
		}
	}
	turn := pairTurn(cfg.BenchTime, c.Paired)
	c.TurnNs = int64(turn)
	for i, s := range sides {
		s.ops = opsPerTurn(turn, res[i].Median)
	}
	pctx, cancel := context.WithTimeout(ctx, min(cfg.Timeout, pairLimit))
	defer cancel()
	type done struct {
		c   result.Comparison
		err error
	}
	d, gone := await(pctx, func() done {
		work := c // the measuring goroutine's own copy: an abandoned one may still write it
		err := runPair(pctx, cfg, &work, sides)
		return done{work, err}
	}, func() {
		for _, s := range sides {
			s.closeBench()
		}
	}, abandonAfter, nil)
	if gone {
		return abandonedPair(c)
	}
	c, err := d.c, d.err
	for _, s := range sides {
		if cerr := s.closeBench(); cerr != nil && err == nil {
			err = fmt.Errorf("teardown: %w", cerr)
		}
	}
	if err != nil {
		c.Rounds, c.Wall, c.CPU, c.Note = 0, result.Ratio{}, nil, "not measured side by side: "+err.Error()
		return c
	}
	c.Alone = aloneRatio(c, res)
	c.Note = joinNotes(c.Note, aloneNote(c))
	return c
}

// aloneRatio is the comparison's ratio from its arms' own figures, each
// measured alone: CPU time per op for a CPU-time answer, the medians for
// a wall-time one; its range is that of their repetitions' means (for CPU
// time, the CPU time per op scaled by each repetition's share of the
// median), the lowest of one over the highest of the other. Nil where an
// arm lacks its figure.
func aloneRatio(c result.Comparison, res [2]result.Arm) *result.Ratio {
	var fig [2]float64
	for i, a := range res {
		fig[i] = a.Median
		if c.Basis == result.BasisCPU {
			if a.CPUNsPerOp == nil {
				return nil
			}
			fig[i] = *a.CPUNsPerOp
		}
		if !(fig[i] > 0) || !(a.Median > 0) {
			return nil
		}
	}
	lo := func(a result.Arm, f float64) float64 { return f * orFig(a.Min, a.Median) / a.Median }
	hi := func(a result.Arm, f float64) float64 { return f * orFig(a.Max, a.Median) / a.Median }
	return &result.Ratio{Ratio: fig[0] / fig[1], Lo: lo(res[0], fig[0]) / hi(res[1], fig[1]), Hi: hi(res[0], fig[0]) / lo(res[1], fig[1])}
}

// orFig is v, or def where v is not a figure (an arm of one repetition).
func orFig(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// aloneNote says when the arms' own figures, each measured alone at
// another moment, give a ratio whose range misses the pair's interval. Side
// by side, a slow phase of the machine falls on both arms; measured apart,
// each figure holds the phase it fell in (a pipe round trip here read 5.2
// µs in one run and 7.3 µs in the next), or an arm cost otherwise beside
// the other's set-up: the note says what the two measurements read, not
// which one is wrong.
func aloneNote(c result.Comparison) string {
	if !c.AloneOutside() {
		return ""
	}
	return fmt.Sprintf("measured alone, each at another moment: %.3g× (%.3g–%.3g× over their repetitions); "+
		"side by side a slow phase of the machine falls on both arms, apart each holds its own (docs/measurement.md)",
		c.Alone.Ratio, c.Alone.Lo, c.Alone.Hi)
}

// orDefault is v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// pairTurn is how long one arm's turn lasts: a burst under one placement,
// half a repetition where the placement alternates.
func pairTurn(benchTime time.Duration, paired string) time.Duration {
	if paired == result.PairedReps {
		return max(time.Duration(pairPolicy.Rep*float64(benchTime)), pairPolicy.MinBurst)
	}
	return min(max(time.Duration(pairPolicy.Burst*float64(benchTime)), pairPolicy.MinBurst), pairPolicy.MaxBurst)
}

// opsPerTurn fills a turn at the arm's measured cost per op, and holds at
// least MinOpsPerRep ops (a turn then lasts longer).
func opsPerTurn(turn time.Duration, perOp float64) int {
	n := int(math.Min(float64(turn)/perOp, float64(policy.MaxOpsPerRep)))
	return max(n, MinOpsPerRep)
}

// pairPolicy is the runner's pair policy (tests change it).
var pairPolicy = DefaultPairPolicy

// pairCoin says which arm of a pair takes the round's first turn (0 or 1);
// tests fix it.
var pairCoin = func() int { return rand.IntN(2) }

// runPair sets both arms up, warms each with one turn, then takes rounds
// until the answer is decided after the policy's rounds, or the budget is
// spent; c gets the ratios.
func runPair(ctx context.Context, cfg Config, c *result.Comparison, sides [2]*pairSide) error {
	if !sides[0].placeEach {
		undo, err := place(&result.Arm{GOMAXPROCS: sides[0].gomaxprocs}, sides[0].arm.CPUs)
		defer undo()
		if err != nil {
			return err
		}
	}
	for _, s := range sides {
		if s.reopen {
			continue // set up for each turn
		}
		if err := s.open(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.arm.Name, err)
		}
	}
	for _, s := range sides {
		if err := s.turn(ctx, false); err != nil {
			return fmt.Errorf("%s: %w", s.arm.Name, err)
		}
	}
	start := time.Now()
	rounds := pairPolicy.Rounds
	for r := 0; ; r++ {
		if r == rounds {
			decide(c, sides)
			spent := time.Since(start)
			if c.Answer != result.AnswerUndecided && narrow(c.Stated()) || spent >= cfg.pairBudget() {
				c.Note = joinNotes(pairNote(c, rounds, spent, cfg.pairBudget()), spreadNote(sides))
				return nil
			}
			rounds += pairPolicy.More
		}
		first := pairCoin()
		for _, i := range []int{first, 1 - first} {
			if err := sides[i].turn(ctx, true); err != nil {
				return fmt.Errorf("%s: %w", sides[i].arm.Name, err)
			}
		}
	}
}

// turnSpread is how far an arm's turns may spread (max ÷ min of their
// wall time per op) before the comparison's note says so.
const turnSpread = 2.0

// spreadNote names the arms whose turns' wall time per op spread more than
// turnSpread: their cost changed from turn to turn (where the scheduler put
// an unpinned arm's threads, or other work), so the ratio is of the mix of
// turns this pair saw, and another run may see another mix.
func spreadNote(sides [2]*pairSide) string {
	var out []string
	for _, s := range sides {
		if len(s.wall) == 0 {
			continue
		}
		lo, hi := slices.Min(s.wall), slices.Max(s.wall)
		if lo > 0 && hi/lo > turnSpread {
			out = append(out, fmt.Sprintf("%s's turns ranged %s–%s an op", s.arm.Name, result.FormatNs(lo), result.FormatNs(hi)))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(out, ", ") + fmt.Sprintf(" (over %.3g×: its cost changed from turn to turn, as where the scheduler put its threads or other work changed; the ratio is of the turns this pair saw)", turnSpread)
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// narrow says whether a ratio's interval is within the policy's Width.
func narrow(r result.Ratio) bool {
	return r.Lo > 0 && r.Hi/r.Lo <= pairPolicy.Width
}

// pairNote says whether rounds were added, and how the comparison ended.
func pairNote(c *result.Comparison, rounds int, spent, budget time.Duration) string {
	added := rounds - pairPolicy.Rounds
	switch {
	case c.Answer == result.AnswerUndecided:
		return fmt.Sprintf("undecided: the interval still straddles about the same (within %.2g×) and different when its %s budget ran out after %d rounds",
			exp.SameWithin, result.FormatNs(float64(budget)), rounds)
	case !narrow(c.Stated()):
		return fmt.Sprintf("%d rounds: the interval is still wider than %.3g× when its %s budget ran out", rounds, pairPolicy.Width, result.FormatNs(float64(budget)))
	case added > 0:
		return fmt.Sprintf("%d rounds (%d added until the interval decided and was within %.3g×)", rounds, added, pairPolicy.Width)
	}
	return ""
}

// pairBudget is how long a comparison's rounds may last, from its first,
// before it stops adding more: PairBudget (1 s in the quick suite), or 25
// benchtimes (5 s in the default suite).
func (c Config) pairBudget() time.Duration {
	if c.PairBudget > 0 {
		return c.PairBudget
	}
	return 25 * c.BenchTime
}

// open sets the arm up under its placement.
func (s *pairSide) open(ctx context.Context) error {
	s.pins = nil // the threads of an earlier set-up are gone
	undo, err := s.place()
	defer undo()
	if err != nil {
		return err
	}
	b, err := open(ctx, s.arm)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.bench, s.close = b, closeOnce(b)
	s.mu.Unlock()
	switch x := b.(type) {
	case exp.Loop:
		s.batch = loopBatch(ctx, x.Run)
	case exp.SelfTimed:
		if _, err := x.Start(ctx); err != nil {
			return err
		}
		s.batch = func(n int) (int, int64, error) { return x.Batch(ctx, n) }
	default:
		return errors.New("a gauge takes no turns")
	}
	// Who takes part is known once the bench has started (the CPython
	// driver's process).
	parts := b.Participants()
	s.probe = newTaskProbe(parts)
	s.pins = map[int][]int{}
	for _, tid := range parts.TIDs {
		if m, err := measure.TaskAffinity(tid); err == nil {
			s.pins[tid] = m
		}
	}
	return nil
}

// closeBench tears the arm's bench down, once, if one is set up.
func (s *pairSide) closeBench() error {
	s.mu.Lock()
	c := s.close
	s.close = nil
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return c()
}

// place puts the arm's placement on the process, where the two arms'
// placements differ, and its threads' own CPU sets back on them; it
// returns what puts the last placement back.
func (s *pairSide) place() (func(), error) {
	if !s.placeEach {
		return func() {}, nil
	}
	r := result.Arm{GOMAXPROCS: s.gomaxprocs}
	undo, err := place(&r, s.arm.CPUs)
	if err != nil {
		return undo, err
	}
	for tid, m := range s.pins {
		if err := measure.PinTask(tid, m); err != nil {
			return undo, fmt.Errorf("thread %d back on its CPUs: %w", tid, err)
		}
	}
	return undo, nil
}

// turn runs one turn of the arm under its placement and, when keep is
// set, records its wall and CPU time per op.
func (s *pairSide) turn(ctx context.Context, keep bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	undo, err := s.place()
	defer undo()
	if err != nil {
		return err
	}
	if s.reopen {
		if err := s.open(ctx); err != nil {
			return err
		}
		defer s.closeBench()
		if _, _, err := s.batch(max(s.ops/4, 1)); err != nil { // warm the fresh set-up
			return err
		}
	}
	cpu0 := s.probe.acc.cpu + s.probe.childAcc.cpu
	s.probe.begin()
	ops, ns, err := s.batch(s.ops)
	s.probe.end()
	if err != nil {
		return err
	}
	if !keep || ops <= 0 {
		return nil
	}
	s.wall = append(s.wall, float64(ns)/float64(ops))
	s.cpu = append(s.cpu, float64(s.probe.acc.cpu+s.probe.childAcc.cpu-cpu0)/float64(ops))
	return nil
}

// decide reads the rounds' ratios into c and answers it on its basis: the
// CPU time where both arms' CPU time was read, else the wall time.
func decide(c *result.Comparison, sides [2]*pairSide) {
	a, b := sides[0], sides[1]
	c.Rounds = min(len(a.wall), len(b.wall))
	c.Wall = pairedRatio(a.wall, b.wall)
	cpuOK := a.probe.cpuOK && b.probe.cpuOK && positive(a.cpu) && positive(b.cpu)
	if cpuOK {
		r := pairedRatio(a.cpu, b.cpu)
		c.CPU = &r
	} else {
		c.CPU = nil
	}
	c.Basis = result.BasisWall
	if cpuOK {
		c.Basis = result.BasisCPU
	}
	c.Answer = PairAnswer(c.Stated())
}

// PairAnswer is what a paired ratio's interval says: about the same when
// it lies within exp.SameWithin of 1, different when wholly outside, else
// undecided (diagnose --vary answers by it too).
func PairAnswer(r result.Ratio) string {
	switch {
	case r.Lo >= 1/exp.SameWithin && r.Hi <= exp.SameWithin:
		return result.AnswerSame
	case r.Lo >= exp.SameWithin || r.Hi <= 1/exp.SameWithin:
		return result.AnswerDiffer
	}
	return result.AnswerUndecided
}

func positive(xs []float64) bool {
	for _, x := range xs {
		if !(x > 0) {
			return false
		}
	}
	return len(xs) > 0
}

// pairedRatio is measure.PairedRatio as a result.Ratio.
func pairedRatio(a, b []float64) result.Ratio {
	r, lo, hi, _ := measure.PairedRatio(a, b)
	return result.Ratio{Ratio: r, Lo: lo, Hi: hi}
}
