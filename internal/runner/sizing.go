package runner

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Policy is how the runner warms an arm up, sizes its repetitions and
// chooses which ops to time on their own: one rule for the Go arms and
// the self-timed ones (the CPython driver runs the batches and
// repetitions it is told to, and decides nothing).
//
// Warm-up and sizing, as testing.B sizes b.N: run a batch from one op up,
// predict from it the ops that fill Share of BenchTime, pad the prediction
// by Overshoot, grow at most GrowMax times (and at least by one op), and run
// again, until the warm-up time (or op count) is spent and a batch that is
// not the arm's first filled its share with at least MinOpsPerRep ops. A
// repetition then runs BenchTime ÷ that batch's cost per op, at most
// MaxOpsPerRep, and at least MinOpsPerRep where those fit in MaxStretch ×
// BenchTime (the time budget of one repetition); where they do not, sizing
// stops at the first batch that shows it, and the arm is "too few ops"
// (SPEC §2 rule 10). Sampling: an op is timed on its own at most every
// ⌈SampleClockFactor × clock cost ÷ op cost⌉-th op, so the timestamps stay
// far below the op they time.
type Policy struct {
	Share             float64 // a sizing batch aims at this fraction of BenchTime
	GrowMax           float64 // a sizing batch grows at most this many times over the last
	Overshoot         float64 // a sizing prediction is padded by this factor
	MaxOpsPerRep      int64   // no batch or repetition runs more ops
	MaxStretch        float64 // a repetition may last this many BenchTimes to hold MinOpsPerRep ops
	SampleClockFactor float64 // minimum sampling interval, in clock costs per op cost
}

// DefaultPolicy is testing.B's growth (≤ 100×, padded 1.2×, at most 1e9
// ops), batches of a tenth of the benchtime, repetitions stretched up to
// 5× the benchtime to hold the minimum ops (an op of up to half the
// benchtime: 30 ms in the quick suite, whose slowest ops, a timer behind
// a spinning goroutine and a process exec, take ~20 and ~8 ms; about 2 s
// more for the quick suite, most of it the timer's ten repetitions), and a
// sampling interval that keeps timestamps under ~0.1% of the op
// (measured: sampling every 6 µs pipe round trip added 3–10% to the
// mean, every 10th op under 1%).
var DefaultPolicy = Policy{Share: 0.1, GrowMax: 100, Overshoot: 1.2, MaxOpsPerRep: 1e9, MaxStretch: 5, SampleClockFactor: 2000}

// policy is the runner's policy (tests change it).
var policy = DefaultPolicy

// batchFunc runs one untimed batch of about n ops and returns the ops it
// did and the ns they took.
type batchFunc func(n int) (ops int, ns int64, err error)

// size warms the bench up and finds its cost per op the way testing.B
// sizes b.N: run a batch, predict from it how many ops fill the batch's
// share of the benchtime (a tenth), grow at most 100× and at least by one,
// and run again, until the warm-up time (or op count) is spent and a batch
// that is not the first filled its share with at least MinOpsPerRep ops.
// So a slow first op (a child's start-up, a cold cache) cannot size the
// repetitions, nor can a cost every batch pays once (waking 32 sweep
// workers) that a batch of two ops mistakes for the ops' own. Where
// MinOpsPerRep ops fit a repetition's budget the next batch holds at least
// that many; where they do not, the first batch after the first that
// shows it is trusted (the arm will be too few ops, and sizing need not
// spend more). The ops a batch did, not the ops it was asked for, are
// what count (a ring runs whole laps).
func size(ctx context.Context, cfg Config, batch batchFunc) (perOp float64, err error) {
	share := max(int64(policy.Share*float64(cfg.BenchTime)), 1)
	n, ops := 1, 0
	start := measure.Now()
	for i := 0; ; i++ {
		done, el, err := batch(n)
		if err != nil {
			return 0, err
		}
		ops += done
		perOp = math.Max(float64(el)/float64(max(done, 1)), 1e-3)
		warm := measure.Now()-start >= int64(cfg.WarmUp) || ops >= cfg.WarmUpOps
		// A batch at the op cap is as large as a repetition may be: accept
		// it even if it falls short of its share (an op of a few ns under a
		// long --benchtime), or sizing would never end.
		atCap := done >= int(policy.MaxOpsPerRep)
		full := done >= MinOpsPerRep && el >= share
		reachable := minReachable(cfg.BenchTime, perOp)
		if warm && i > 0 && (full || atCap || !reachable) {
			return perOp, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n = predictN(share, done, el)
		if reachable {
			n = max(n, min(MinOpsPerRep, int(policy.MaxOpsPerRep)))
		}
	}
}

// minReachable says whether MinOpsPerRep ops of perOp ns each fit in a
// repetition's budget: MaxStretch × benchTime.
func minReachable(benchTime time.Duration, perOp float64) bool {
	return float64(MinOpsPerRep)*perOp <= policy.MaxStretch*float64(benchTime)
}

// loopBatch is a Loop's sizing batch: n ops under a fresh B, no samples.
func loopBatch(ctx context.Context, run func(*measure.B) error) batchFunc {
	return func(n int) (int, int64, error) {
		b := measure.NewB(ctx, n, nil, nil)
		b.StartTimer()
		if err := run(b); err != nil {
			return 0, 0, err
		}
		b.StopTimer()
		return n, b.Elapsed(), nil
	}
}

// predictN is testing.B's rule: the ops that should take goal ns if the
// last n took el ns, padded by the policy's overshoot, growing at most
// GrowMax times and at least by one, and at most MaxOpsPerRep.
func predictN(goal int64, n int, el int64) int {
	if el <= 0 {
		el = 1
	}
	next := float64(goal) * float64(n) / float64(el) * policy.Overshoot
	next = min(next, policy.GrowMax*float64(n), float64(policy.MaxOpsPerRep))
	return int(min(max(int64(next), int64(n)+1), policy.MaxOpsPerRep))
}

// opsPerRep is how many ops a repetition runs once sizing found perOp:
// as many as fill the benchtime, at least one (or minOps, a self-timed
// bench's own floor), at most the policy's cap, and at least MinOpsPerRep
// where they fit in the repetition's budget (minReachable).
func opsPerRep(benchTime time.Duration, perOp float64, minOps int) int {
	n := max(minOps, int(math.Max(1, math.Min(float64(policy.MaxOpsPerRep), float64(benchTime)/perOp))))
	if n < MinOpsPerRep && minReachable(benchTime, perOp) {
		n = min(MinOpsPerRep, int(policy.MaxOpsPerRep))
	}
	return n
}

// repTarget is how long a repetition of ops ops was sized to last: the
// benchtime, or longer where it was stretched to hold MinOpsPerRep ops.
func repTarget(benchTime time.Duration, ops int, perOp float64) time.Duration {
	return max(benchTime, time.Duration(float64(ops)*perOp))
}

// sampleEvery is the sampling interval, in units of unitOps ops: keep at
// most maxSamples of the units ops make, and time a unit on its own no
// more often than every ⌈SampleClockFactor × clock ÷ unit cost⌉-th one.
// Timestamps cost more than the calibrated clock read around a blocking op
// (measured: sampling every 6 µs pipe round trip added 3–10% to the mean,
// every 10th op under 1%): every op is timed only from ~50 µs up.
func sampleEvery(ops, unitOps, maxSamples int, clockNs, perOp float64) int {
	unitOps = max(unitOps, 1)
	units, maxSamples := max(1, ops/unitOps), max(1, maxSamples)
	every := (units + maxSamples - 1) / maxSamples
	return max(1, every, int(math.Ceil(policy.SampleClockFactor*clockNs/(perOp*float64(unitOps)))))
}

// sizingReasons flags repetitions too short or too long to trust: a wall
// time far from the target they were sized for (the op's cost changed
// after sizing, or sizing was misled). Too few ops is no noise but a
// status (fewOps).
func sizingReasons(walls []int64, target time.Duration) []string {
	if len(walls) == 0 {
		return nil
	}
	s := append([]int64(nil), walls...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := time.Duration(s[len(s)/2])
	if med < target/4 || med > 4*target {
		return []string{fmt.Sprintf("repetitions lasted %s, not the %s they were sized for", result.FormatNs(float64(med)), result.FormatNs(float64(target)))}
	}
	return nil
}

// MinOpsPerRep is the fewest ops a repetition may hold for its mean to be
// an answer: below it one slow op moves the mean (SPEC §2 rule 10).
const MinOpsPerRep = 10

// fewOps applies SPEC §2 rule 10 to an arm whose figures are summed up
// from repetitions of ops ops each, sized at perOp ns an op: with fewer
// than MinOpsPerRep, no figure of it is an answer. An arm that ran to the
// end becomes StatusTooFewOps with the reason, its figures kept as
// evidence; one that stopped early keeps its status, its reason says so,
// and the repetitions it finished give no figure at all.
func fewOps(r *result.Arm, ops int, perOp float64, benchTime time.Duration) {
	if ops >= MinOpsPerRep || len(r.RepMeans) == 0 {
		return
	}
	why := fewOpsReason(ops, perOp, benchTime)
	if r.Status == result.StatusOK {
		r.Status, r.Reason = result.StatusTooFewOps, why
		return
	}
	r.Reason += "; no figure from the repetitions that finished: " + why
	r.RepMeans, r.Median, r.Min, r.Max = nil, 0, 0, 0
}

// fewOpsReason says how few ops a repetition held, and why no more fitted.
func fewOpsReason(ops int, perOp float64, benchTime time.Duration) string {
	why := fmt.Sprintf("only %d ops per repetition (< %d)", ops, MinOpsPerRep)
	if ops == 1 {
		why = fmt.Sprintf("only 1 op per repetition (< %d)", MinOpsPerRep)
	}
	if perOp <= 0 || minReachable(benchTime, perOp) {
		return why + ": one slow op moves the mean"
	}
	return fmt.Sprintf("%s: sizing found %s an op, so %d would last %s, over the %s a repetition may (%g× the %s benchtime)",
		why, result.FormatNs(perOp), MinOpsPerRep, result.FormatNs(float64(MinOpsPerRep)*perOp),
		result.FormatNs(policy.MaxStretch*float64(benchTime)), policy.MaxStretch, result.FormatNs(float64(benchTime)))
}
