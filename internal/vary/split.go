package vary

import (
	"fmt"
	"math"
	"strings"

	"github.com/ctxlab/ctxlab/internal/compare"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Cost is this host's measured cost of a switch that the direct part is
// priced with: the one every command uses (price.FromHistory: the newest
// quiet thread round trip on one CPU in the history, or a calibration),
// with where it came from; or, when there is none, why.
type Cost struct {
	price.Cost
	OK  bool
	Why string
	// Curve is the run with this host's refill curve, which the indirect
	// cost is estimated from (the working set per thread); CurveWhy says
	// why there is none.
	Curve    *result.Run
	CurveWhy string
}

// Split is the extra CPU time between the first value and another, cut
// into the part in the switch path and the rest, per run or per unit of
// work. Every figure is a difference of medians; nothing is estimated
// that was not measured.
type Split struct {
	Base, Other string // the two values' labels
	Per         string // "run" or "unit"
	CPUA, CPUB  float64
	ExtraCPU    float64 // Δ CPU time (task-clock), ns
	CPURow      compare.Row
	SwA, SwB    float64
	// ExtraSwitches is Δ switches; DirectNs = ExtraSwitches × the cost
	// per switch and RestNs = ExtraCPU − DirectNs, when priced.
	ExtraSwitches   float64
	Priced          bool
	PerSwitchNs     float64
	DirectNs        float64
	RestNs          float64
	DirectShare     float64 // DirectNs / ExtraCPU, when ExtraCPU > 0
	DirectOverflows bool    // the priced direct part is more than the extra CPU time
	Cost            Cost
	// Hardware holds the explanation where the machine counts cycles and
	// instructions; HardwareWhy why it does not.
	Hardware    *Hardware
	HardwareWhy string
	// Beside the rest where there are no hardware counters: run-queue
	// wait, migrations and page faults of the two values (Stat.OK false:
	// unsupported).
	Runq, Migrations, Faults, User, Sys [2]Stat
	// Indirect is the indirect cost of the two values' switches estimated
	// from their working sets (IndirectEstimate), beside the rest.
	Indirect IndirectEstimate
}

// IndirectEstimate is each value's switches × the refill cost at its
// working set per thread, read off this host's curve (price.RefillAt),
// and how much of the rest their difference explains; Why says why
// there is none ("" with Off: --wss off, nothing to say).
type IndirectEstimate struct {
	OK                     bool
	Off                    bool
	A, B                   float64 // ns per run (per unit with units of work)
	PerSwitchA, PerSwitchB float64
	WA, WB                 float64 // working set per thread
	Delta                  float64
	SourceA, SourceB       string
	Why                    string
	// Over names the values whose estimate exceeds their CPU time: there
	// it is no figure, only a sign that the indirect cost is large.
	Over []string
}

// indirectOf estimates the indirect cost of base's and other's switches.
func indirectOf(base, other Value, cost Cost) IndirectEstimate {
	wa, wb := base.Fig(KeyWSSThread), other.Fig(KeyWSSThread)
	sa, sb := base.Fig(KeySwitches), other.Fig(KeySwitches)
	var e IndirectEstimate
	switch {
	case wa.Unsupported == "--wss off" || wb.Unsupported == "--wss off":
		return IndirectEstimate{Off: true}
	case !wa.OK():
		e.Why = "working set at " + base.Point.Label() + ": unsupported: " + wa.Unsupported
	case !wb.OK():
		e.Why = "working set at " + other.Point.Label() + ": unsupported: " + wb.Unsupported
	case !sa.OK() || !sb.OK():
		e.Why = "the switches were not counted"
	case cost.Curve == nil:
		e.Why = cost.CurveWhy
		if e.Why == "" {
			e.Why = cost.Why
		}
	}
	if e.Why != "" {
		return e
	}
	ra, oka := price.RefillAt(cost.Curve, int64(wa.Median))
	rb, okb := price.RefillAt(cost.Curve, int64(wb.Median))
	if !oka || !okb {
		return IndirectEstimate{Why: "run " + cost.Curve.ID + " has no refill curve"}
	}
	ra.Calibrated, rb.Calibrated = price.IsCalibration(cost.Curve), price.IsCalibration(cost.Curve)
	e = IndirectEstimate{OK: true, WA: wa.Median, WB: wb.Median, PerSwitchA: ra.Ns, PerSwitchB: rb.Ns,
		A: sa.Median * ra.Ns, B: sb.Median * rb.Ns, SourceA: ra.Source(), SourceB: rb.Source()}
	e.Delta = e.B - e.A
	for _, v := range []struct {
		val Value
		est float64
	}{{base, e.A}, {other, e.B}} {
		if c := v.val.Fig(KeyCPU); c.OK() && v.est > c.Median {
			e.Over = append(e.Over, fmt.Sprintf("%s (%s of CPU time)", v.val.Point.Label(), result.FormatNs(c.Median)))
		}
	}
	return e
}

// indirectLine puts the estimate beside the rest: "" with --wss off.
func (s Split) indirectLine() string {
	e := s.Indirect
	switch {
	case e.Off:
		return ""
	case !e.OK:
		return "  indirect estimate (from the working set): not made — " + e.Why
	}
	l := fmt.Sprintf("  indirect estimate (from the working set and this host's refill curve): %s %s switches × %s at %s per thread = %s; %s %s × %s at %s = %s: %s",
		s.Base, Format(KindCount, s.SwA), result.FormatNs(e.PerSwitchA), result.FormatBytes(e.WA), result.FormatNs(e.A),
		s.Other, Format(KindCount, s.SwB), result.FormatNs(e.PerSwitchB), result.FormatBytes(e.WB), result.FormatNs(e.B), signedNs(e.Delta))
	switch {
	case len(e.Over) > 0:
		l += fmt.Sprintf(": more than all the CPU time of %s — the threads cannot refetch that much after every switch, so it is no figure there, only a sign that the indirect cost is large", strings.Join(e.Over, ", "))
	case !s.Priced || s.DirectOverflows || s.ExtraCPU <= 0:
		l += " (no rest to set it beside)"
	case s.RestNs <= 0:
		l += fmt.Sprintf(" beside a rest of %s: nothing left for it to explain", signedNs(s.RestNs))
	default:
		l += fmt.Sprintf(", %s of the rest (%s)", share(e.Delta/s.RestNs), signedNs(s.RestNs))
	}
	src := e.SourceB
	if e.SourceA != e.SourceB {
		src = e.SourceA + "; " + e.SourceB
	}
	return l + "; refill cost from " + src
}

// Hardware is what the counters say of the rest: cycles against
// instructions, and misses per 1 000 instructions (nil: unsupported).
type Hardware struct {
	InstrA, InstrB, CyclesA, CyclesB, IPCA, IPCB float64
	LLC, DTLB                                    [2]*float64
}

// NewSplit splits the extra CPU time of other over base with cost. Both
// values must be OK.
func NewSplit(base, other Value, perUnit bool, cost Cost) Split {
	s := Split{Base: base.Point.Label(), Other: other.Point.Label(), Per: "run", Cost: cost}
	if perUnit {
		s.Per = "unit"
	}
	ca, cb := base.Fig(KeyCPU), other.Fig(KeyCPU)
	if ca.OK() && cb.OK() {
		s.CPUA, s.CPUB, s.ExtraCPU = ca.Median, cb.Median, cb.Median-ca.Median
		s.CPURow = compare.Values("cpu", "ns/op", ca.Values, cb.Values)
	}
	sa, sb := base.Fig(KeySwitches), other.Fig(KeySwitches)
	if sa.OK() && sb.OK() {
		s.SwA, s.SwB, s.ExtraSwitches = sa.Median, sb.Median, sb.Median-sa.Median
		if cost.OK && ca.OK() && cb.OK() {
			s.Priced, s.PerSwitchNs = true, cost.PerSwitchNs
			s.DirectNs = s.ExtraSwitches * cost.PerSwitchNs
			s.RestNs = s.ExtraCPU - s.DirectNs
			if s.ExtraCPU > 0 {
				s.DirectShare = s.DirectNs / s.ExtraCPU
				s.DirectOverflows = s.DirectNs > s.ExtraCPU
			}
		}
	}
	ia, ib := base.Fig(KeyInstructions), other.Fig(KeyInstructions)
	ya, yb := base.Fig(KeyCycles), other.Fig(KeyCycles)
	switch {
	case !ia.OK():
		s.HardwareWhy = "instructions: unsupported: " + ia.Unsupported
	case !ib.OK():
		s.HardwareWhy = "instructions: unsupported: " + ib.Unsupported
	case !ya.OK():
		s.HardwareWhy = "cycles: unsupported: " + ya.Unsupported
	case !yb.OK():
		s.HardwareWhy = "cycles: unsupported: " + yb.Unsupported
	default:
		h := &Hardware{InstrA: ia.Median, InstrB: ib.Median, CyclesA: ya.Median, CyclesB: yb.Median}
		if ya.Median > 0 && yb.Median > 0 {
			h.IPCA, h.IPCB = ia.Median/ya.Median, ib.Median/yb.Median
		}
		for i, key := range []string{KeyLLC, KeyDTLB} {
			a, b := base.Fig(key), other.Fig(key)
			if a.OK() && b.OK() {
				pair := [2]*float64{&a.Median, &b.Median}
				if i == 0 {
					h.LLC = pair
				} else {
					h.DTLB = pair
				}
			}
		}
		s.Hardware = h
	}
	s.Runq = [2]Stat{base.Fig(KeyRunq), other.Fig(KeyRunq)}
	s.Migrations = [2]Stat{base.Fig(KeyMigrations), other.Fig(KeyMigrations)}
	s.Faults = [2]Stat{base.Fig(KeyFaults), other.Fig(KeyFaults)}
	s.User = [2]Stat{base.Fig(KeyUser), other.Fig(KeyUser)}
	s.Sys = [2]Stat{base.Fig(KeySys), other.Fig(KeySys)}
	s.Indirect = indirectOf(base, other, cost)
	return s
}

// Lines is the split in words: the extra CPU time and whether it is more
// than noise, the direct part with where its cost per switch came from,
// and the rest, explained by the hardware counters or, without them, set
// beside the run-queue wait and the migrations and named for what it is.
func (s Split) Lines() []string {
	out := s.lines()
	if l := s.indirectLine(); l != "" {
		out = append(out, l)
	}
	return out
}

func (s Split) lines() []string {
	head := fmt.Sprintf("split %s → %s, per %s:", s.Base, s.Other, s.Per)
	if s.CPUA == 0 && s.CPUB == 0 {
		return []string{head + " no CPU time for one of the two values, nothing to split"}
	}
	out := []string{fmt.Sprintf("%s extra CPU time %s (%s → %s; %s)", head, signedNs(s.ExtraCPU),
		result.FormatNs(s.CPUA), result.FormatNs(s.CPUB), Significance(s.CPURow))}
	switch {
	case !s.Cost.OK:
		out = append(out, fmt.Sprintf("  direct (in the switch path): %s switches, not priced: %s", signedCount(s.ExtraSwitches), s.Cost.Why))
		return out
	case !s.Priced:
		out = append(out, "  direct (in the switch path): not priced, the switches were not counted")
		return out
	}
	from := s.Cost.Line()
	if s.ExtraCPU <= 0 {
		out = append(out, fmt.Sprintf("  no extra CPU time: nothing to split (the %s switches × %s per switch would be %s)",
			signedCount(s.ExtraSwitches), result.FormatNs(s.PerSwitchNs), signedNs(s.DirectNs)),
			"  "+from)
		return out
	}
	direct := fmt.Sprintf("  direct (in the switch path): %s switches × %s per switch = %s", signedCount(s.ExtraSwitches),
		result.FormatNs(s.PerSwitchNs), signedNs(s.DirectNs))
	if s.DirectOverflows {
		out = append(out, direct+", more than the extra CPU time: the cost per switch measured here (a thread round trip) overstates these switches, or the difference is within noise; no rest is shown",
			"  "+from)
		return out
	}
	out = append(out, fmt.Sprintf("%s, %s of the extra", direct, share(s.DirectShare)), "  "+from)
	rest := fmt.Sprintf("  not in the switch path: %s, %s of the extra", signedNs(s.RestNs), share(1-s.DirectShare))
	if h := s.Hardware; h != nil {
		rest += fmt.Sprintf(": cycles %s for instructions %s", change(h.CyclesA, h.CyclesB), change(h.InstrA, h.InstrB))
		if h.IPCA > 0 && h.IPCB > 0 {
			rest += fmt.Sprintf(" (IPC %.2f → %.2f)", h.IPCA, h.IPCB)
		}
		for _, m := range []struct {
			name string
			v    [2]*float64
		}{{"LLC", h.LLC}, {"dTLB", h.DTLB}} {
			if m.v[0] != nil {
				rest += fmt.Sprintf("; %s misses per 1k instructions %.3g → %.3g", m.name, *m.v[0], *m.v[1])
			}
		}
		if math.Abs(h.InstrB/h.InstrA-1) <= SameWork {
			rest += ": more cycles for the same instructions, the indirect cost of switching and sharing the caches"
		} else {
			rest += ": the instructions differ too, so part of it is more work, not slower work"
		}
		return append(out, rest)
	}
	rest += fmt.Sprintf(". This machine has no hardware counters (%s), so it cannot attribute it: it is the indirect cost (caches and TLB cold after other threads ran) or contention", s.HardwareWhy)
	var beside []string
	if s.User[0].OK() && s.User[1].OK() && s.Sys[0].OK() && s.Sys[1].OK() {
		beside = append(beside, fmt.Sprintf("user time %s, system time %s (rusage)",
			signedNs(s.User[1].Median-s.User[0].Median), signedNs(s.Sys[1].Median-s.Sys[0].Median)))
	}
	if s.Runq[0].OK() && s.Runq[1].OK() {
		beside = append(beside, fmt.Sprintf("run-queue wait %s → %s (sampled from /proc)", result.FormatNs(s.Runq[0].Median), result.FormatNs(s.Runq[1].Median)))
	}
	if s.Migrations[0].OK() && s.Migrations[1].OK() {
		beside = append(beside, fmt.Sprintf("migrations %s → %s", Format(KindCount, s.Migrations[0].Median), Format(KindCount, s.Migrations[1].Median)))
	}
	if s.Faults[0].OK() && s.Faults[1].OK() {
		beside = append(beside, fmt.Sprintf("page faults %s → %s (each fault is kernel time in the CPU time)", Format(KindCount, s.Faults[0].Median), Format(KindCount, s.Faults[1].Median)))
	}
	if len(beside) > 0 {
		rest += "; beside it: " + joinAnd(beside)
	}
	return append(out, rest)
}

// SameWork is how far instruction counts may differ and still be the
// same work: a few percent.
const SameWork = 0.03

func signedNs(ns float64) string {
	if ns < 0 {
		return "−" + result.FormatNs(-ns)
	}
	return "+" + result.FormatNs(ns)
}

func signedCount(n float64) string {
	if n < 0 {
		return "−" + Format(KindCount, -n)
	}
	return "+" + Format(KindCount, n)
}

// change is b against a in percent, "+118%".
func change(a, b float64) string {
	if a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*(b/a-1))
}

func share(f float64) string { return price.Percent(math.Max(f, 0)) }

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	out := parts[0]
	for _, p := range parts[1 : len(parts)-1] {
		out += ", " + p
	}
	return out + " and " + parts[len(parts)-1]
}
