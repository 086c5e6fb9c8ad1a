// Package selfcheck proves the harness's overhead on the host it runs on:
// ctxlab's own arms beside instruments ctxlab did not write — perf bench,
// plain loops in processes of their own, a plain perf_counter loop in the
// same interpreter — in interleaved rounds, each in a new shuffled order,
// all pinned the same way, so that drift of the machine cancels in each
// round's ratio. It is scripts/harness-compare.sh built into the binary.
package selfcheck

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Limit is how far an arm may read above its reference before selfcheck
// says so: the harness's own cost, the figure's noise included.
const Limit = 1.05

// Side measures one figure, in ns per op.
type Side func(ctx context.Context) (float64, error)

// Comparison is one of ctxlab's arms beside its reference.
type Comparison struct {
	Arm       string // the arm, as `ctxlab run` names it
	Reference string // the instrument, in words
	Ctxlab    Side
	Ref       Side
	// Unsupported says why the comparison cannot run on this machine
	// (perf not installed, no python3); Ctxlab and Ref are then nil.
	Unsupported string
}

// Row is one comparison's outcome: each round's figures and ratio.
type Row struct {
	Arm       string    `json:"arm"`
	Reference string    `json:"reference"`
	Status    string    `json:"status"` // ok, unsupported, failed
	Reason    string    `json:"reason,omitempty"`
	CtxlabNs  []float64 `json:"ctxlab_ns,omitempty"`
	RefNs     []float64 `json:"reference_ns,omitempty"`
	Ratios    []float64 `json:"ratios,omitempty"` // ctxlab ÷ reference, per round
	Ratio     float64   `json:"ratio,omitempty"`  // their median
	Min       float64   `json:"min,omitempty"`
	Max       float64   `json:"max,omitempty"`
	Limit     float64   `json:"limit"`
}

// Over is whether the arm read above its limit.
func (r Row) Over() bool { return r.Status == result.StatusOK && r.Ratio > r.Limit }

// Plan is how the rounds run.
type Plan struct {
	Rounds int
	Settle time.Duration // pause before every command, so none runs in another's wake
	// Timeout bounds each command (0: none): one that hangs (a partner
	// gone, a stuck perf) fails its row, killed with its process group.
	Timeout time.Duration
	Rand    *rand.Rand // the rounds' order; nil = seeded from the clock
	// Progress, when set, is told before each command: which of how many,
	// and what.
	Progress func(done, total int, what string)
}

// Run runs every supported comparison Rounds times. Each round takes the
// rows in a new random order, and runs each row's arm and reference back
// to back, which of them first also at random: so the two figures of a
// ratio are seconds apart and the machine's drift cancels in it, and no
// command always runs just after the same other one. A command that fails
// fails its row, which then stops; the rest go on. A cancelled ctx stops
// at once, keeping the rounds that finished.
func Run(ctx context.Context, comps []Comparison, p Plan) []Row {
	rows := make([]Row, len(comps))
	var live []int
	for i, c := range comps {
		rows[i] = Row{Arm: c.Arm, Reference: c.Reference, Status: result.StatusOK, Limit: Limit}
		if c.Unsupported != "" {
			rows[i].Status, rows[i].Reason = result.StatusUnsupported, c.Unsupported
			continue
		}
		live = append(live, i)
	}
	rng := p.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5e1f))
	}
	total, done := 2*p.Rounds*len(live), 0
	ctxNs := make([][]float64, len(comps))
	refNs := make([][]float64, len(comps))
rounds:
	for round := 0; round < p.Rounds; round++ {
		order := slices.Clone(live)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			sides := []bool{false, true} // reference?
			if rng.IntN(2) == 1 {
				sides[0], sides[1] = true, false
			}
			for _, ref := range sides {
				done++
				if rows[i].Status != result.StatusOK {
					continue
				}
				what, side := comps[i].Arm, comps[i].Ctxlab
				if ref {
					what, side = comps[i].Reference, comps[i].Ref
				}
				if p.Progress != nil {
					p.Progress(done, total, what)
				}
				if !sleep(ctx, p.Settle) {
					break rounds
				}
				v, err := runSide(ctx, side, p.Timeout)
				if ctx.Err() != nil {
					break rounds
				}
				switch {
				case err != nil:
					rows[i].Status, rows[i].Reason = result.StatusFailed, fmt.Sprintf("%s: %v", what, err)
				case !(v > 0) || math.IsInf(v, 0):
					rows[i].Status, rows[i].Reason = result.StatusFailed, fmt.Sprintf("%s: read %v ns per op", what, v)
				case ref:
					refNs[i] = append(refNs[i], v)
				default:
					ctxNs[i] = append(ctxNs[i], v)
				}
			}
		}
	}
	for i := range rows {
		finish(&rows[i], ctxNs[i], refNs[i])
	}
	return rows
}

// runSide runs one command within limit (0: none); running out of it is
// an error that says so.
func runSide(ctx context.Context, side Side, limit time.Duration) (float64, error) {
	if limit <= 0 {
		return side(ctx)
	}
	sctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	v, err := side(sctx)
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		return 0, fmt.Errorf("no answer within %s: stopped", limit)
	}
	return v, err
}

// finish pairs the rounds' figures (a round cut short by Ctrl-C leaves
// one side without its partner, which is dropped) and takes the median.
func finish(r *Row, c, ref []float64) {
	if r.Status != result.StatusOK {
		return
	}
	n := min(len(c), len(ref))
	r.CtxlabNs, r.RefNs = c[:n], ref[:n]
	if n == 0 {
		r.Status, r.Reason = result.StatusSkipped, "no round finished"
		return
	}
	for k := range n {
		r.Ratios = append(r.Ratios, c[k]/ref[k])
	}
	s := slices.Sorted(slices.Values(r.Ratios))
	r.Ratio, r.Min, r.Max = median(s), s[0], s[len(s)-1]
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Verdict is the one-line answer: how much ctxlab adds here, or which arm
// is over and by how much, and what could not be checked.
func Verdict(rows []Row) string {
	var ok, over, other []Row
	var between []string
	var betweenRows []Row
	for _, r := range rows {
		switch {
		case r.Over():
			if s, found := within(rows, r.Arm); found {
				betweenRows = append(betweenRows, r)
				between = append(between, fmt.Sprintf("%s reads %.2f× %s but %.2f× %s: the %.0f%% between them lies between the two references (a Go process against C ones), not in ctxlab's harness",
					r.Arm, r.Ratio, r.Reference, s.Ratio, s.Reference, 100*(r.Ratio/s.Ratio-1)))
				continue
			}
			over = append(over, r)
		case r.Status == result.StatusOK:
			ok = append(ok, r)
		default:
			other = append(other, r)
		}
	}
	var parts []string
	switch {
	case len(over) > 0:
		sort.Slice(over, func(i, j int) bool { return over[i].Ratio > over[j].Ratio })
		var s []string
		for _, r := range over {
			line := fmt.Sprintf("%s reads %.2f× %s (%+.0f%%, limit %.2f×", r.Arm, r.Ratio, r.Reference, 100*(r.Ratio-1), r.Limit)
			if r.Min <= r.Limit {
				line += fmt.Sprintf("; its rounds read %.2f–%.2f×, not every one over: more --rounds say more", r.Min, r.Max)
			}
			s = append(s, line+")")
		}
		parts = append(parts, "over its limit here: "+strings.Join(s, "; "))
		if len(ok) == 1 {
			parts = append(parts, addsAtMost(ok, "the other row adds"))
		} else if len(ok) > 1 {
			parts = append(parts, fmt.Sprintf("the other %d %s", len(ok), addsAtMost(ok, "rows add")))
		}
	case len(ok) > 0:
		parts = append(parts, addsAtMost(ok, "ctxlab adds")+" here")
	default:
		parts = append(parts, "nothing could be checked")
	}
	parts = append(parts, between...)
	if n := noisyRows(slices.Concat(ok, over, betweenRows)); n != "" {
		parts = append(parts, n)
	}
	if few := fewestRounds(append(ok, over...)); few > 0 && few < 3 {
		rounds := "rounds"
		if few == 1 {
			rounds = "round"
		}
		parts = append(parts, fmt.Sprintf("only %d %s: no spread to judge a 5%% answer by (--rounds 3 or more)", few, rounds))
	}
	// Rows not checked for one reason (no perf, Ctrl-C) share one clause.
	var reasons []string
	byReason := map[string][]string{}
	for _, r := range other {
		if byReason[r.Reason] == nil {
			reasons = append(reasons, r.Reason)
		}
		byReason[r.Reason] = append(byReason[r.Reason], r.Arm)
	}
	for _, why := range reasons {
		parts = append(parts, fmt.Sprintf("not checked: %s (%s)", strings.Join(byReason[why], ", "), why))
	}
	return strings.Join(parts, "; ")
}

// StealNote is the verdict's clause for a check during which the
// hypervisor stole more than limit percent of the CPUs' time (pct), ""
// otherwise: on such a host the rounds disagree, and the user should know
// why before reading a ratio.
func StealNote(pct, limit float64) string {
	if !(pct > limit) {
		return ""
	}
	return fmt.Sprintf("the hypervisor stole %.1f%% of the CPUs' time during the check (over %.0f%%), so its ratios carry that noise too", pct, limit)
}

// within is another row of the same arm that read within its limit: an
// arm held to two references (the process pipe: perf bench's
// single-threaded processes, and the same raw loop between two Go
// processes) is over only if it is over both.
func within(rows []Row, arm string) (Row, bool) {
	for _, r := range rows {
		if r.Arm == arm && r.Status == result.StatusOK && !r.Over() {
			return r, true
		}
	}
	return Row{}, false
}

// fewestRounds is the fewest rounds any of rows finished (0: no rows).
func fewestRounds(rows []Row) int {
	few := 0
	for _, r := range rows {
		if few == 0 || len(r.Ratios) < few {
			few = len(r.Ratios)
		}
	}
	return few
}

// noisySpread is how far a row's rounds may disagree (max ÷ min of their
// ratios) before the verdict says that its median cannot tell 5%.
const noisySpread = 1.25

// noisyRows says which rows' rounds disagree by more than noisySpread:
// on a machine whose speed swings between two runs seconds apart, a median
// of a few rounds is no 5% answer, whatever it reads ("" when none).
func noisyRows(rows []Row) string {
	var worst Row
	n := 0
	for _, r := range rows {
		if r.Min > 0 && r.Max/r.Min > noisySpread {
			n++
			if worst.Min == 0 || r.Max/r.Min > worst.Max/worst.Min {
				worst = r
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("noisy: the rounds of %d of %d rows disagree by more than %.0f%% (worst %s, %.2f–%.2f×), so this machine cannot tell 5%% now: run it again when it is quiet, or with more --rounds",
		n, len(rows), 100*(noisySpread-1), worst.Arm, worst.Min, worst.Max)
}

// addsAtMost says the largest excess over the references, rounded up to
// a whole percent, with the rows' range.
func addsAtMost(rows []Row, subject string) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		lo, hi = math.Min(lo, r.Ratio), math.Max(hi, r.Ratio)
	}
	span := fmt.Sprintf("%.2f–%.2f× the references", lo, hi)
	if len(rows) == 1 {
		span = fmt.Sprintf("%.2f× the reference", hi)
	}
	if hi <= 1 {
		return subject + " nothing measurable (" + span + ")"
	}
	return fmt.Sprintf("%s ≤ %.0f%% (%s)", subject, math.Ceil(100*(hi-1)-1e-9), span)
}

// Usual is how long selfcheck takes with its default flags on a quiet
// 2-CPU machine, as the README and its help say ("about 35 s").
const Usual = 35 * time.Second

// LengthNote says how long the check took and why, when it took longer
// than it usually does (over 1.2 × usual; "" otherwise): the load
// average at its start and end against the CPUs, the steal. usual is
// Usual scaled to the flags given (0: Usual).
func LengthNote(took, usual time.Duration, load0, load1 float64, cpus int, stealPct float64) string {
	if usual <= 0 {
		usual = Usual
	}
	if took <= usual*12/10 {
		return ""
	}
	s := fmt.Sprintf("it took %.0f s, not the about %.0f s it takes on a quiet machine", took.Seconds(), usual.Seconds())
	if cpus > 0 && max(load0, load1) >= float64(cpus)/2 {
		s += fmt.Sprintf(": the load average was %.1f at its start and %.1f at its end on %d CPUs, so its commands waited for a CPU", load0, load1, cpus)
	} else {
		s += fmt.Sprintf(" (load average %.1f at its start, %.1f at its end, on %d CPUs)", load0, load1, cpus)
	}
	if stealPct > 1 {
		s += fmt.Sprintf(", and the hypervisor stole %.1f%% of the CPUs' time", stealPct)
	}
	return s
}
