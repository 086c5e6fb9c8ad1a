package report

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// VerdictMaxLines bounds the verdict: one terminal screen.
const VerdictMaxLines = 40

// VerdictRate is the handoff rate the verdict prices in CPU.
const VerdictRate = 10000

// Verdict writes the answer first: one screen that says, for this machine,
// what a handoff costs between each kind of worker and what the gap is made
// of, what one busy worker does to the tail, what a thread hop adds to a
// microsecond operation, the indirect cost of a cold cache, what handoffs
// cost in CPU, and which checks did not hold. Each figure comes with its
// spread and, where SPEC §8 has one, the published figure. It reads only
// the result model, so a stored run gives the same verdict; an answer
// whose arms were not measured says so.
func Verdict(w io.Writer, run *result.Run) error {
	for _, l := range VerdictLines(run) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// VerdictLines is the verdict as lines (at most VerdictMaxLines).
func VerdictLines(run *result.Run) []string {
	v := verdict{run: run, arms: map[string]result.Arm{}}
	for _, a := range run.Arms {
		if measured(a) && a.Median > 0 {
			v.arms[a.Name] = a
		}
	}
	head := []string{
		fmt.Sprintf("ctxlab verdict · %s · %s, %d CPUs%s · Linux %s · run %s (%s)",
			orDash(run.Env.Hostname), orDash(run.Env.CPUModel), run.Env.LogicalCPUs, virt(run.Env), orDash(run.Env.Kernel), run.ID, run.Suite),
		"figures: median of the repetitions' means per op (min–max); † not pinned (goroutines: GOMAXPROCS = all); published: SPEC §8, elsewhere",
	}
	sections := [][]string{v.handoff(), v.tail(), v.hop(), v.indirect(), v.budget()}
	checks, noise := v.checks(), v.noise()
	foot := []string{"per-experiment tables: ctxlab run --detail, ctxlab show " + run.ID + ", ctxlab report -o report.html"}
	// Fit one screen: the checks list gives way first, the figures never.
	count := len(head) + len(noise) + len(foot)
	for _, s := range sections {
		count += len(s) + 1
	}
	count++ // blank line before the checks
	if room := VerdictMaxLines - count; len(checks) > room {
		if room < 2 {
			room = 2
		}
		more := len(checks) - room + 1
		checks = append(checks[:room-1], fmt.Sprintf("  … %d more in the per-experiment tables (--detail)", more))
	}
	out := head
	for _, s := range append(sections, checks) {
		out = append(out, "")
		out = append(out, s...)
	}
	out = append(out, noise...)
	out = append(out, foot...)
	if len(out) > VerdictMaxLines {
		out = out[:VerdictMaxLines]
	}
	return out
}

type verdict struct {
	run  *result.Run
	arms map[string]result.Arm // measured arms by name
}

// pick returns the first measured arm of names.
func (v verdict) pick(names ...string) (result.Arm, bool) {
	for _, n := range names {
		if a, ok := v.arms[n]; ok {
			return a, true
		}
	}
	return result.Arm{}, false
}

// where returns the measured arms of experiment exp that keep returns true
// for, in run order.
func (v verdict) where(exp string, keep func(a result.Arm) bool) []result.Arm {
	var out []result.Arm
	for _, a := range v.run.Arms {
		if _, ok := v.arms[a.Name]; ok && a.Experiment == exp && keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// armFigure is an arm's median with its min–max spread: "6.69 µs (6.68–6.78)";
// the range names its unit only where it differs from the median's.
func armFigure(a result.Arm) string {
	m := result.FormatValue(a.Median, a.Unit)
	sp := span(a.Min, a.Max, a.Unit)
	if i := strings.LastIndexByte(m, ' '); i > 0 && strings.HasSuffix(sp, m[i:]) && strings.Count(sp, m[i:]) == 1 {
		sp = strings.TrimSuffix(sp, m[i:])
	}
	return m + " (" + sp + ")"
}

// span is "lo–hi" with the unit once when both ends share it.
func span(lo, hi float64, unit string) string {
	l, h := result.FormatValue(lo, unit), result.FormatValue(hi, unit)
	li, hi2 := strings.LastIndexByte(l, ' '), strings.LastIndexByte(h, ' ')
	if li > 0 && hi2 > 0 && l[li:] == h[hi2:] {
		l = l[:li]
	}
	return l + "–" + h
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// handoffRow is one kind of worker: the arm on one CPU, the arms across
// CPUs (or unpinned) in order of preference, and the published figure.
type handoffRow struct {
	label     string
	one       []string
	across    []string
	published string
	pubIsP50  bool
}

var handoffRows = []handoffRow{
	{"goroutines, Go channel", []string{"pingpong/goroutine/chan/gomaxprocs=1"}, []string{"pingpong/goroutine/chan/gomaxprocs=all"}, "", false},
	{"OS threads, futex", []string{"pingpong/thread/futex/same-cpu"}, []string{"pingpong/thread/futex/cross-cpu", "pingpong/thread/futex/unpinned"}, "", false},
	{"processes, pipe", []string{"pingpong/process/pipe/same-cpu"}, []string{"pingpong/process/pipe/cross-cpu", "pingpong/process/pipe/unpinned"}, published["process pipe"], true},
	{"CPython threads, SimpleQueue", []string{"pingpong/pythread/simplequeue/same-cpu"}, []string{"pingpong/pythread/simplequeue/cross-cpu", "pingpong/pythread/simplequeue/unpinned"}, published["pythread"], false},
	{"asyncio tasks, asyncio.Queue", []string{"pingpong/pytask/asyncio-queue/same-cpu"}, []string{"pingpong/pytask/asyncio-queue/cross-cpu", "pingpong/pytask/asyncio-queue/unpinned"}, published["pytask"], false},
}

// pinned says whether the arm's workers were placed by ctxlab.
func pinned(a result.Arm) bool { return a.Placement == "same-cpu" || a.Placement == "cross-cpu" }

func (v verdict) handoff() []string {
	rows := [][]string{{"handoff, one round trip", "one CPU", "across CPUs", "published"}}
	tailNote := ""
	for _, r := range handoffRows {
		row := []string{"  " + r.label, "not measured", "not measured", orDash(r.published)}
		cell := func(a result.Arm) string {
			s := armFigure(a)
			if !pinned(a) && !strings.Contains(a.Name, "gomaxprocs=1") {
				s += " †"
			}
			if p := a.Percentiles; p != nil && p.Samples > 0 && p.P50 > 0 && a.Median/p.P50 > tailRatio {
				s += " *"
				if tailNote == "" { // explained once, on the first such arm
					tailNote = tailWhy(a)
				}
			}
			return s
		}
		one, ok1 := v.pick(r.one...)
		if ok1 {
			row[1] = cell(one)
		}
		across, ok2 := v.pick(r.across...)
		if ok2 {
			row[2] = cell(across)
		}
		if r.pubIsP50 && (ok1 || ok2) {
			a := one
			if !ok1 {
				a = across
			}
			if a.Percentiles != nil && a.Percentiles.Samples > 0 {
				row[3] += "; here p50 " + result.FormatNs(a.Percentiles.P50)
			}
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	textcol.Write(&b, rows, "", nil)
	out := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if tailNote != "" {
		out = append(out, "  * "+tailNote)
	}
	return append(out, v.gap()...)
}

// tailWhy explains a batch mean well above the sampled p50.
func tailWhy(a result.Arm) string {
	p := a.Percentiles
	return fmt.Sprintf("%s: the median is a mean per op and carries the slow tail (p99 %s, max %s); the sampled p50 is %s",
		shortName(a), result.FormatNs(p.P99), result.FormatNs(p.Max), result.FormatNs(p.P50))
}

func shortName(a result.Arm) string { return strings.TrimPrefix(a.Name, a.Experiment+"/") }

// gap says what the thread/goroutine and cross/same-CPU gaps are made of,
// from the switch counts and (where recorded) CPU time.
func (v verdict) gap() []string {
	var out []string
	g, okG := v.pick("pingpong/goroutine/chan/gomaxprocs=1")
	// Same CPU only: unpinned or across CPUs the round trip also waits for
	// another CPU to wake, which is not a cost per switch.
	t, okT := v.pick("pingpong/thread/futex/same-cpu")
	if okG && okT && t.Switches != nil {
		s := t.Switches
		line := fmt.Sprintf("  gap: a thread round trip is %.0f× a goroutine's: %.2f OS switches (%.2f voluntary + %.2f involuntary)", t.Median/g.Median, s.Total(), s.Voluntary, s.Involuntary)
		if g.Switches != nil {
			line += fmt.Sprintf(" vs %.2f", g.Switches.Total())
		}
		if s.Total() >= 0.5 {
			line += fmt.Sprintf(", ≈ %s per switch", result.FormatNs((t.Median-g.Median)/s.Total()))
		}
		out = append(out, line)
	} else {
		out = append(out, "  gap: not measured (needs pingpong/goroutine/chan/gomaxprocs=1 and pingpong/thread/futex/same-cpu)")
	}
	one, ok1 := v.pick("pingpong/thread/futex/same-cpu")
	x, ok2 := v.pick("pingpong/thread/futex/cross-cpu")
	if ok1 && ok2 {
		line := fmt.Sprintf("  across CPUs a thread round trip costs %.1f× one CPU", x.Median/one.Median)
		if c, src, ok := price.CPUPerOp(x); ok {
			line += fmt.Sprintf("; on CPU %s of %s (%s): the rest is waiting for the other CPU to wake", result.FormatNs(c), result.FormatNs(x.Median), src)
		} else {
			line += ": each handoff wakes the other CPU from idle"
		}
		if v.run.Env.Hypervisor {
			line += " (a VM: an idle vCPU)"
		}
		out = append(out, line)
	}
	tp, okTP := v.pick("pingpong/thread/pipe/same-cpu")
	pp, okPP := v.pick("pingpong/process/pipe/same-cpu")
	if okTP && okPP && tp.Switches != nil && pp.Switches != nil && tp.Switches.Total() > 0 {
		ps, ts := pp.Switches.Total(), tp.Switches.Total()
		line := fmt.Sprintf("  processes vs threads over a pipe on one CPU: %.1f× with %.2f vs %.2f switches", pp.Median/tp.Median, ps, ts)
		if math.Abs(ps/ts-1) < 0.1 {
			line += ": the extra is per switch (address space, the child's own runtime)"
		} else {
			line += fmt.Sprintf(": the process arm makes %+.2f switches per round trip", ps-ts)
		}
		out = append(out, line)
	}
	return out
}

func param(a result.Arm, k string) string { return a.Params[k] }

func (v verdict) tail() []string {
	out := []string{"one busy worker, the tail (sampled p50 and p99, no busy worker → one)"}
	base := v.where("interference", func(a result.Arm) bool { return param(a, "hogs") == "0" && a.Percentiles != nil })
	n := 0
	for _, b := range base {
		hogs := v.where("interference", func(a result.Arm) bool {
			return param(a, "shape") == param(b, "shape") && param(a, "hogs") == "1" && a.Percentiles != nil
		})
		var same, fixes []result.Arm
		for _, h := range hogs {
			if h.GOMAXPROCS == b.GOMAXPROCS && strings.Contains(param(h, "hog"), "goroutine") {
				same = append(same, h)
			} else {
				fixes = append(fixes, h)
			}
		}
		if len(same) == 0 {
			continue
		}
		h := same[0]
		pb, ph := b.Percentiles, h.Percentiles
		out = append(out, fmt.Sprintf("  %s, GOMAXPROCS=%d, 1 %s hog: p50 %s → %s, p99 %s → %s",
			armOp(b), b.GOMAXPROCS, param(h, "hog"), result.FormatNs(pb.P50), result.FormatNs(ph.P50), result.FormatNs(pb.P99), result.FormatNs(ph.P99)))
		var fx []string
		for _, f := range fixes {
			how := param(f, "hog") + " hog"
			if f.GOMAXPROCS != b.GOMAXPROCS {
				how += fmt.Sprintf(" at GOMAXPROCS=%d", f.GOMAXPROCS)
			}
			fx = append(fx, fmt.Sprintf("%s: p99 %s", how, result.FormatNs(f.Percentiles.P99)))
		}
		if len(fx) > 0 {
			out = append(out, "    instead: "+strings.Join(fx, "; "))
		}
		n++
	}
	if n == 0 {
		out = append(out, "  Go: not measured (run interference)")
	}
	py := v.where("interference", func(a result.Arm) bool {
		return a.Substrate == "pythread" && param(a, "busy") == "1" && a.Percentiles != nil
	})
	if len(py) > 0 {
		a := py[0]
		line := fmt.Sprintf("  CPython thread round trip, 1 busy thread, switch interval %s: p50 %s, p99 %s", orDash(param(a, "switch_interval")), result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99))
		if b, ok := v.pick(strings.Replace(a.Name, "busy=1", "busy=0", 1)); ok && b.Percentiles != nil {
			line = fmt.Sprintf("  CPython thread round trip, 1 busy thread, switch interval %s: p50 %s → %s, p99 %s → %s", orDash(param(a, "switch_interval")),
				result.FormatNs(b.Percentiles.P50), result.FormatNs(a.Percentiles.P50), result.FormatNs(b.Percentiles.P99), result.FormatNs(a.Percentiles.P99))
		}
		out = append(out, line+"; published "+published["busy thread"])
	} else {
		out = append(out, "  CPython: not measured (python3 missing or its arms not selected); published "+published["busy thread"])
	}
	return out
}

// armOp is what an interference arm's op is, shortened.
func armOp(a result.Arm) string {
	op := a.Op
	if i := strings.Index(op, " ("); i > 0 {
		op = op[:i]
	}
	return op
}

func (v verdict) hop() []string {
	out := []string{"a thread hop over a microsecond operation"}
	// The Go arms: the operation with a thread arm, at its GOMAXPROCS.
	threads := v.where("hop", func(a result.Arm) bool { return param(a, "way") == "thread" })
	if len(threads) == 0 {
		out = append(out, "  Go: not measured (run hop)")
	}
	for i, t := range threads {
		if i == 2 {
			break
		}
		same := func(way string) (result.Arm, bool) {
			as := v.where("hop", func(a result.Arm) bool {
				return param(a, "op") == param(t, "op") && a.GOMAXPROCS == t.GOMAXPROCS && param(a, "way") == way
			})
			if len(as) == 0 {
				return result.Arm{}, false
			}
			return as[0], true
		}
		d, ok := same("direct")
		if !ok {
			continue
		}
		parts := []string{"direct " + armFigure(d)}
		for _, w := range []struct{ way, label string }{{"goroutine", "goroutine hop"}, {"thread", "thread hop"}, {"thread-2hop", "two thread hops"}} {
			if a, ok := same(w.way); ok {
				parts = append(parts, fmt.Sprintf("%s %s (%.1f×)", w.label, armFigure(a), a.Median/d.Median))
			}
		}
		out = append(out, fmt.Sprintf("  %s, GOMAXPROCS=%d: a thread hop adds %s", param(t, "op"), t.GOMAXPROCS, result.FormatNs(t.Median-d.Median)),
			"    "+strings.Join(parts, " · "))
	}
	d, ok1 := v.pick("hop/pytask/direct")
	e, ok2 := v.pick("hop/pytask/executor")
	if ok1 && ok2 {
		line := fmt.Sprintf("  CPython sqlite3: direct %s · executor hop %s (%.1f×)", armFigure(d), armFigure(e), e.Median/d.Median)
		if t, ok := v.pick("hop/pytask/two-hop"); ok {
			line += fmt.Sprintf(" · two hops %s (%.1f×)", armFigure(t), t.Median/d.Median)
		}
		out = append(out, line)
	}
	return append(out, "    published (CPython 3.14 sqlite3): "+published["hop"])
}

// Metric names the verdict and the budget read.
const (
	metricOnCPUPerElement = "oncpu-ns/element"
)

func (v verdict) indirect() []string {
	out := []string{"the indirect cost: cold caches after other workers ran"}
	// per-switch curve: (RT(W) − solo(W) − RT(0)) / 2 at the largest W.
	if c := price.Curve(v.run); c != "" {
		out = append(out, "  per switch, on top of the direct cost, by working set touched: "+c)
	}
	sweep := v.where("cachecost", func(a result.Arm) bool { return param(a, "mode") == "sweep" && param(a, "compare") != "" })
	groups := map[string][]result.Arm{}
	var key string
	var keyW int64 = -1
	for _, a := range sweep {
		k := param(a, "compare")
		groups[k] = append(groups[k], a)
		if wb, _ := strconv.ParseInt(param(a, "W_bytes"), 10, 64); wb > keyW {
			key, keyW = k, wb
		}
	}
	if g := groups[key]; len(g) >= 2 {
		sort.Slice(g, func(i, j int) bool { return atoi(param(g[i], "T")) < atoi(param(g[j], "T")) })
		few, many := g[0], g[len(g)-1]
		line := fmt.Sprintf("  W=%s per thread, %s vs %s threads on %d CPUs: wall per element %s → %s (%+.0f%%)",
			param(few, "W"), param(many, "T"), param(few, "T"), v.run.Env.LogicalCPUs, armFigure(few), armFigure(many), 100*(many.Median/few.Median-1))
		out = append(out, line)
		if fc, mc := few.Metrics[metricOnCPUPerElement], many.Metrics[metricOnCPUPerElement]; fc > 0 && mc > 0 {
			out = append(out, fmt.Sprintf("    on CPU per element %s → %s (%+.0f%%): the indirect cost; the rest of the wall time is waiting for a CPU",
				result.FormatValue(fc, "ns/element"), result.FormatValue(mc, "ns/element"), 100*(mc/fc-1)))
		}
	} else if len(out) == 1 {
		out = append(out, "  not measured (run cachecost)")
	}
	return append(out, "    published: "+published["indirect"])
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func (v verdict) budget() []string {
	out := []string{fmt.Sprintf("what %s handoffs per second cost in CPU (on-CPU time per op, all participants; ctxlab budget --rate N/s)", fmtThousands(VerdictRate))}
	var parts []string
	sources := map[string]bool{}
	var srcs []string
	for _, names := range [][]string{
		{"pingpong/goroutine/chan/gomaxprocs=1"},
		{"pingpong/thread/futex/same-cpu", "pingpong/thread/futex/unpinned"},
		{"pingpong/thread/futex/cross-cpu"},
		{"pingpong/process/pipe/same-cpu", "pingpong/process/pipe/unpinned"},
	} {
		a, ok := v.pick(names...)
		if !ok {
			continue
		}
		c, src, ok := price.CPUPerOp(a)
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s of a core (%s/op)", shortName(a), pct(c*VerdictRate/1e9), result.FormatNs(c)))
		if !sources[src] {
			sources[src] = true
			srcs = append(srcs, src)
		}
	}
	if len(parts) == 0 {
		return append(out, "  not measured: this run recorded no CPU time per op for the pingpong arms")
	}
	return append(out, "  "+strings.Join(parts, " · ")+" — from "+strings.Join(srcs, ", "))
}

func pct(f float64) string { return price.Percent(f) }

func fmtThousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (v verdict) checks() []string {
	var bad []string
	total, failed := 0, 0
	for _, e := range v.run.Experiments {
		details := map[string][]string{} // a check evaluated on several arms is said once
		var names []string
		for _, c := range e.Checks {
			if c.Skipped {
				continue
			}
			total++
			if c.Holds {
				continue
			}
			failed++
			if details[c.Name] == nil {
				names = append(names, c.Name)
			}
			details[c.Name] = append(details[c.Name], c.Detail)
		}
		for _, n := range names {
			bad = append(bad, clip(fmt.Sprintf("  ✗ %s: %s — %s", e.Name, n, strings.Join(details[n], " | ")), 180))
		}
	}
	if total == 0 {
		return []string{"checks: none evaluated"}
	}
	return append([]string{fmt.Sprintf("checks that did not hold on this machine: %d of %d", failed, total)}, bad...)
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// noise says once how many arms are noisy and why: each kind of reason
// once, with one arm's wording and how many arms gave it.
func (v verdict) noise() []string {
	kinds, order, noisy := noiseReasons(v.run.Arms)
	if noisy == 0 {
		return []string{"noise: no arm is noisy"}
	}
	var parts []string
	for _, k := range order {
		rk := kinds[k]
		if rk.varied {
			parts = append(parts, fmt.Sprintf("%s (e.g.; %d arms)", rk.example, rk.arms))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d arms)", rk.example, rk.arms))
		}
	}
	return []string{clip(fmt.Sprintf("noise: %d of %d arms noisy — %s", noisy, len(v.run.Arms), strings.Join(parts, "; ")), 240)}
}

type reasonKind struct {
	example string
	arms    int
	varied  bool // the arms' figures differ: example is one of them
}

// noiseReasons counts the arms per kind of noise reason; reasons that
// differ only in their figures ("repetitions spread 2.15x …") are one kind.
func noiseReasons(arms []result.Arm) (kinds map[string]*reasonKind, order []string, noisy int) {
	kinds = map[string]*reasonKind{}
	for _, a := range arms {
		if !a.Noise.Noisy {
			continue
		}
		noisy++
		for _, r := range a.Noise.Reasons {
			k := figures.ReplaceAllString(r, "#")
			if kinds[k] == nil {
				kinds[k] = &reasonKind{example: r}
				order = append(order, k)
			}
			kinds[k].arms++
			kinds[k].varied = kinds[k].varied || r != kinds[k].example
		}
	}
	return kinds, order, noisy
}

// figures matches the numbers (and their units) in a reason.
var figures = regexp.MustCompile(`[0-9][0-9.,]*\s*(µs|ms|ns|s|x|%)?`)
