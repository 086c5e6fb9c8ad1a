package vary

import (
	"fmt"
	"math"

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
	return s
}

// Lines is the split in words: the extra CPU time and whether it is more
// than noise, the direct part with where its cost per switch came from,
// and the rest, explained by the hardware counters or, without them, set
// beside the run-queue wait and the migrations and named for what it is.
func (s Split) Lines() []string {
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
