package runner

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"golang.org/x/sys/unix"
)

// work does `weight` units of arithmetic an op and logs each Run (its
// name) in a shared journal, so a test sees the turns' order.
type work struct {
	name    string
	weight  int
	journal *journal
	opened  int
	closed  int
}

type journal struct {
	mu   sync.Mutex
	runs []string
}

func (j *journal) add(s string) { j.mu.Lock(); j.runs = append(j.runs, s); j.mu.Unlock() }

var sink int

func (w *work) Run(b *measure.B) error {
	w.journal.add(w.name)
	x := 0
	for i := 0; i < b.N; i++ {
		for j := 0; j < 200*w.weight; j++ {
			x += j ^ i
		}
	}
	sink = x
	return nil
}
func (w *work) Close() error                   { w.closed++; return nil }
func (w *work) Participants() exp.Participants { return exp.WholeProcess() }

// pairArms are two arms of weights wa and wb for a spec that pairs them.
func pairArms(j *journal, wa, wb int) (*exp.Spec, []exp.Arm, []*work) {
	ws := []*work{{name: "fake/a", weight: wa, journal: j}, {name: "fake/b", weight: wb, journal: j}}
	var arms []exp.Arm
	for _, w := range ws {
		arms = append(arms, exp.Arm{Name: w.name, Open: func(context.Context) (exp.Bench, error) { w.opened++; return w, nil }})
	}
	s := exp.Bind(&paired{exp.Spec{Name: "fake", Op: "op"}})
	return s, arms, ws
}

// paired is the fake experiment with its pairs, one of them of an arm it lacks.
type paired struct{ exp.Spec }

func (*paired) Pairs() []exp.Pair {
	return []exp.Pair{{Label: "a vs b", A: "fake/a", B: "fake/b"}, {Label: "not run", A: "fake/a", B: "fake/c"}}
}

// A pair both of whose arms were measured is measured again side by side:
// each arm opened once more and closed, the turns alternating in the
// order the coin says, the rounds the policy asks, the ratio of A over B
// inside its interval, and a pair with an arm the run lacks left out.
func TestPairTakesTurns(t *testing.T) {
	coins := 0
	defer func(f func() int) { pairCoin = f }(pairCoin)
	pairCoin = func() int { coins++; return coins % 2 }
	j := &journal{}
	s, arms, ws := pairArms(j, 4, 1)
	c := cfg()
	c.PairBudget = time.Nanosecond // no rounds added
	_, exps, _ := Run(context.Background(), c, []exp.Selection{{Spec: s, Arms: arms}})
	if len(exps) != 1 || len(exps[0].Comparisons) != 1 {
		t.Fatalf("comparisons: %+v", exps)
	}
	cp := exps[0].Comparisons[0]
	t.Logf("%s", cp)
	if cp.Label != "a vs b" || cp.A != "fake/a" || cp.B != "fake/b" || cp.Paired != result.PairedBursts || cp.Rounds != pairPolicy.Rounds {
		t.Errorf("comparison: %+v", cp)
	}
	for _, w := range ws {
		if w.opened != 2 || w.closed != 2 {
			t.Errorf("%s opened %d, closed %d times; want 2 and 2 (its own arm, the pair)", w.name, w.opened, w.closed)
		}
	}
	// The pair's turns are the journal's tail: a warm-up turn each, then
	// the rounds, the first turn of each round the coin's.
	tail := j.runs[len(j.runs)-2-2*pairPolicy.Rounds:]
	if tail[0] != "fake/a" || tail[1] != "fake/b" {
		t.Errorf("warm-up turns: %v", tail[:2])
	}
	for r := 0; r < pairPolicy.Rounds; r++ {
		first := []string{"fake/a", "fake/b"}[(r+1)%2]
		if got := tail[2+2*r]; got != first || tail[3+2*r] == first {
			t.Errorf("round %d: turns %v, want %s first", r, tail[2+2*r:4+2*r], first)
		}
	}
	for _, r := range []*result.Ratio{&cp.Wall, cp.CPU} {
		if r != nil && !(r.Lo <= r.Ratio && r.Ratio <= r.Hi && r.Lo > 0) {
			t.Errorf("interval %+v", *r)
		}
	}
	// A does four times B's arithmetic an op: its CPU time an op is more.
	if cp.CPU == nil || cp.CPU.Ratio <= 1 {
		t.Errorf("CPU ratio of 4× the work: %+v", cp.CPU)
	}
	if cp.Answer == result.AnswerUndecided && !strings.Contains(cp.Note, "budget ran out after 12 rounds") {
		t.Errorf("undecided without saying the budget ran out: %q", cp.Note)
	}
	if err := (&result.Run{Schema: 2, ID: "x", Experiments: exps}).Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
}

// Arms of different GOMAXPROCS cannot run under one placement: they
// alternate by repetition-long turns, each under its own GOMAXPROCS.
func TestPairAlternatesPlacement(t *testing.T) {
	j := &journal{}
	s, arms, _ := pairArms(j, 1, 1)
	arms[0].GOMAXPROCS = 1
	c := cfg()
	c.PairBudget = time.Nanosecond
	_, exps, _ := Run(context.Background(), c, []exp.Selection{{Spec: s, Arms: arms}})
	cp := exps[0].Comparisons[0]
	if cp.Paired != result.PairedReps || cp.TurnNs < int64(pairPolicy.MinBurst) {
		t.Errorf("paired %q, turn %d ns", cp.Paired, cp.TurnNs)
	}
}

// A pair whose arm cannot be set up again says so, with no ratio.
func TestPairSetupFails(t *testing.T) {
	j := &journal{}
	s, arms, _ := pairArms(j, 1, 1)
	n := 0
	open := arms[1].Open
	arms[1].Open = func(ctx context.Context) (exp.Bench, error) {
		if n++; n > 1 {
			return nil, errors.New("no second time")
		}
		return open(ctx)
	}
	_, exps, _ := Run(context.Background(), cfg(), []exp.Selection{{Spec: s, Arms: arms}})
	cp := exps[0].Comparisons[0]
	if cp.Rounds != 0 || !strings.Contains(cp.Note, "not measured side by side: fake/b: no second time") {
		t.Errorf("comparison: %+v", cp)
	}
}

// The paired ratio is the median of the rounds' ratios, its interval
// order statistics around it; an answer needs the whole interval on one
// side of SameWithin.
func TestPairedRatioAndAnswer(t *testing.T) {
	a := []float64{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24}
	b := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 6}
	r := pairedRatio(a, b)
	if r.Ratio != 2 || r.Lo != 2 || r.Hi != 2 {
		t.Errorf("ratio %+v, want 2 (2–2): 11 rounds of 2 and one of 4", r)
	}
	if x := pairedRatio([]float64{1, 2, 3}, []float64{1, 1, 1}); x.Ratio != 2 || x.Lo != 1 || x.Hi != 3 {
		t.Errorf("three rounds: %+v", x)
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{0.95, 1.05, result.AnswerSame}, {1.2, 1.5, result.AnswerDiffer}, {0.5, 0.8, result.AnswerDiffer},
		{1.05, 1.2, result.AnswerUndecided}, {0.85, 1.0, result.AnswerUndecided},
	} {
		if got := PairAnswer(result.Ratio{Ratio: math.Sqrt(c.lo * c.hi), Lo: c.lo, Hi: c.hi}); got != c.want {
			t.Errorf("%v–%v: %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

// A turn that never ends (a starved partner) is stopped at the pair's
// time limit: the bench is closed, which unblocks it, and the comparison
// says it was not measured.
func TestPairTurnStuck(t *testing.T) {
	j := &journal{}
	s, arms, _ := pairArms(j, 1, 1)
	st := &stuck{release: make(chan struct{})}
	n := 0
	open := arms[1].Open
	arms[1].Open = func(ctx context.Context) (exp.Bench, error) {
		if n++; n > 1 {
			return st, nil
		}
		return open(ctx)
	}
	c := cfg()
	c.Timeout = time.Second
	_, exps, _ := Run(context.Background(), c, []exp.Selection{{Spec: s, Arms: arms}})
	cp := exps[0].Comparisons[0]
	if cp.Rounds != 0 || !strings.HasPrefix(cp.Note, "not measured side by side: fake/b: ") || st.closes.Load() == 0 {
		t.Errorf("comparison %+v, %d closes", cp, st.closes.Load())
	}
}

// A decided comparison whose interval is wider than the policy's Width
// takes more rounds, four at a time, until it narrows or the budget runs
// out, and says which; one within Width stops at the policy's rounds. The
// ratio stated is the CPU time's wherever both arms' CPU time was read.
func TestPairRoundsUntilNarrow(t *testing.T) {
	defer func(p PairPolicy) { pairPolicy = p }(pairPolicy)
	for _, tc := range []struct {
		width float64
		more  bool
	}{{width: 1e9, more: false}, {width: 1, more: true}} {
		pairPolicy.Width = tc.width
		j := &journal{}
		s, arms, _ := pairArms(j, 4, 1)
		c := cfg()
		c.PairBudget = 2 * time.Second // the policy's rounds take ~50 ms quiet
		_, exps, _ := Run(context.Background(), c, []exp.Selection{{Spec: s, Arms: arms}})
		cp := exps[0].Comparisons[0]
		t.Logf("width %g: %s; note %q", tc.width, cp, cp.Note)
		if cp.CPU == nil || cp.Basis != result.BasisCPU {
			t.Errorf("width %g: basis %q with CPU %+v, want the CPU time's", tc.width, cp.Basis, cp.CPU)
		}
		added := cp.Rounds - pairPolicy.Rounds
		switch {
		case !tc.more && added != 0:
			t.Errorf("width %g: %d rounds added to an interval within it", tc.width, added)
		case tc.more && added%pairPolicy.More != 0:
			t.Errorf("width %g: %d rounds added, want a multiple of %d", tc.width, added, pairPolicy.More)
		case tc.more && added == 0:
			t.Errorf("width %g: no round added to an interval wider than it within a %v budget", tc.width, c.PairBudget)
		case tc.more && cp.Answer != result.AnswerUndecided && !strings.Contains(cp.Note, "still wider than 1×"):
			t.Errorf("width %g: note %q does not say the interval stayed wide", tc.width, cp.Note)
		}
	}
}

// pinned is a bench whose worker thread its set-up pins to one CPU; each
// op asks the worker for its CPU set and counts the ops that found it
// otherwise.
type pinned struct {
	cpu   int
	tid   int
	ask   chan chan []int
	wrong atomic.Int64
}

func openPinned(cpu int) (*pinned, error) {
	p := &pinned{cpu: cpu, ask: make(chan chan []int)}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p.tid = unix.Gettid()
		ready <- measure.PinThread([]int{cpu})
		for reply := range p.ask {
			m, _ := measure.TaskAffinity(0)
			reply <- m
		}
	}()
	return p, <-ready
}

func (p *pinned) Run(b *measure.B) error {
	reply := make(chan []int)
	for i := 0; i < b.N; i++ {
		p.ask <- reply
		if m := <-reply; len(m) != 1 || m[0] != p.cpu {
			p.wrong.Add(1)
		}
	}
	return nil
}
func (p *pinned) Close() error                   { close(p.ask); return nil }
func (p *pinned) Participants() exp.Participants { return exp.Threads(p.tid) }

// Arms under different placements alternate, the process placed for each
// turn; a placement sets every thread's CPU set, and the arms' threads
// get theirs back before they run: a cross-CPU arm's thread pinned to the
// second CPU stays there through the one-CPU arm's turns (found measuring
// the cross-CPU pair unpinned in its pair: its wall ratio to one CPU read
// 1.0 where the arms read 10×).
func TestPairKeepsArmsPins(t *testing.T) {
	cpus, err := measure.Affinity()
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs two CPUs: %v %v", cpus, err)
	}
	var benches []*pinned
	arms := []exp.Arm{
		{Name: "fake/a", CPUs: cpus[:2], Open: func(context.Context) (exp.Bench, error) {
			p, err := openPinned(cpus[1])
			benches = append(benches, p)
			return p, err
		}},
		{Name: "fake/b", CPUs: cpus[:1], Open: func(context.Context) (exp.Bench, error) {
			p, err := openPinned(cpus[0])
			benches = append(benches, p)
			return p, err
		}},
	}
	s := exp.Bind(&paired{exp.Spec{Name: "fake", Op: "op"}})
	c := cfg()
	c.PairBudget = time.Nanosecond
	c.BenchTime = 20 * time.Millisecond // enough round trips a repetition on a loaded machine
	res, exps, _ := Run(context.Background(), c, []exp.Selection{{Spec: s, Arms: arms}})
	if len(exps) != 1 || len(exps[0].Comparisons) != 1 {
		// A loaded machine can leave an arm with too few ops to be an
		// answer (a round trip to a thread on a CPU other work holds): then
		// there is no pair to check.
		for _, r := range res {
			if r.Status != result.StatusOK || !r.HasFigure() {
				t.Skipf("%s has no figure to pair (%s: %s): the machine kept its thread from its CPU", r.Name, r.Status, r.Reason)
			}
		}
		t.Fatalf("no comparison: %+v", exps)
	}
	cp := exps[0].Comparisons[0]
	if cp.Paired != result.PairedReps || cp.Rounds == 0 || len(benches) != 4 {
		t.Fatalf("comparison %+v, %d set-ups", cp, len(benches))
	}
	for i, b := range benches {
		if n := b.wrong.Load(); n > 0 {
			t.Errorf("set-up %d (pinned to CPU %d): %d ops ran on another CPU set", i, b.cpu, n)
		}
	}
}

// An arm whose turns' time per op spreads over turnSpread is named in the
// comparison's note with its range; steady arms are not.
func TestPairNotesSpread(t *testing.T) {
	a := &pairSide{arm: exp.Arm{Name: "e/a"}, wall: []float64{12e3, 15e3, 117e3}}
	b := &pairSide{arm: exp.Arm{Name: "e/b"}, wall: []float64{4e3, 4.5e3, 5e3}}
	got := spreadNote([2]*pairSide{a, b})
	if !strings.HasPrefix(got, "e/a's turns ranged 12 µs–117 µs an op (over 2×") || strings.Contains(got, "e/b") {
		t.Errorf("note %q", got)
	}
	if got := spreadNote([2]*pairSide{b, b}); got != "" {
		t.Errorf("steady arms: note %q", got)
	}
	if got := spreadNote([2]*pairSide{{arm: exp.Arm{Name: "e/none"}}, b}); got != "" { // no turn kept
		t.Errorf("an arm without turns: note %q", got)
	}
	if got := joinNotes("", "x") + joinNotes("y", "") + joinNotes("a", "b"); got != "xya; b" {
		t.Errorf("joinNotes: %q", got)
	}
}

// The arms' own figures give the same ratio on the comparison's basis,
// with the range of their repetitions; a note says when that range misses
// the pair's interval.
func TestPairAloneRatio(t *testing.T) {
	cpu := func(v float64) *float64 { return &v }
	res := [2]result.Arm{{Median: 5000, Min: 4900, Max: 5500, CPUNsPerOp: cpu(4400)}, {Median: 250, Min: 240, Max: 260, CPUNsPerOp: cpu(245)}}
	c := result.Comparison{Basis: result.BasisCPU, Rounds: 12, CPU: &result.Ratio{Ratio: 14, Lo: 13.4, Hi: 14.9}, Wall: result.Ratio{Ratio: 15, Lo: 14, Hi: 16}}
	al := aloneRatio(c, res)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*b }
	if al == nil || !near(al.Ratio, 4400.0/245) || !near(al.Lo, 4400*0.98/(245*1.04)) || !near(al.Hi, 4400*1.1/(245*0.96)) {
		t.Fatalf("CPU basis: alone %+v, want %v (%v–%v)", al, 4400.0/245, 4400*0.98/(245*1.04), 4400*1.1/(245*0.96))
	}
	c.Alone = al
	if n := aloneNote(c); !strings.HasPrefix(n, "measured alone, each at another moment: 18× (16.9–20.6× over their repetitions); side by side") {
		t.Errorf("note %q", n)
	}
	c.CPU.Hi = 17 // the two ranges meet
	if n := aloneNote(c); n != "" {
		t.Errorf("ranges that meet: note %q", n)
	}
	w := result.Comparison{Basis: result.BasisWall, Rounds: 12, Wall: result.Ratio{Ratio: 15, Lo: 14, Hi: 16}}
	if got := aloneRatio(w, res); got == nil || got.Ratio != 20 {
		t.Errorf("wall basis: alone %+v, want the medians' 20", got)
	}
	res[1].Min, res[1].Max = 0, 0 // one repetition: no spread of its own
	if got := aloneRatio(w, res); got == nil || !near(got.Lo, 4900.0/250) || !near(got.Hi, 5500.0/250) {
		t.Errorf("an arm without a spread: alone %+v", got)
	}
	res[1].CPUNsPerOp = nil
	if got := aloneRatio(c, res); got != nil {
		t.Errorf("an arm without CPU time: alone %+v, want none", got)
	}
}
