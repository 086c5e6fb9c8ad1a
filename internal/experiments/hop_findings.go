package experiments

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// What hop reads from its Go arms: each way's multiple of the direct call,
// the checks on what hops add, the findings, and its part of the verdict.

// hopKey is an arm's op, way and GOMAXPROCS, to find its direct baseline.
type hopKey struct {
	op, way string
	gmp     int
}

func hopIndex(arms []result.Arm) map[hopKey]*result.Arm {
	out := map[hopKey]*result.Arm{}
	for i := range arms {
		a := &arms[i]
		if a.Experiment != "hop" || a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		out[hopKey{a.Params["op"], a.Params["way"], a.GOMAXPROCS}] = a
	}
	return out
}

// hopDerive adds each arm's multiple of the direct call and the time the
// hops added (Metrics "direct-ratio" and "added-ns/op").
func hopDerive(arms []result.Arm) {
	idx := hopIndex(arms)
	for k, a := range idx {
		d, ok := idx[hopKey{k.op, "direct", k.gmp}]
		if !ok {
			continue
		}
		a.SetMetric("direct-ratio", a.Median/d.Median)
		a.SetMetric("added-ns/op", a.Median-d.Median)
	}
	// The cgo crossing next to the cgo driver's lookup.
	for k, a := range idx {
		if k.op != "cgo-call" {
			continue
		}
		if m, ok := idx[hopKey{"mattn-memory", "direct", k.gmp}]; ok {
			m.SetMetric("cgo-call-ns", a.Median)
		}
	}
}

// Check thresholds: two hops cost twice one, within ±25%.
const (
	hopTwoLow, hopTwoHigh = 1.5, 2.5
	hopMinThreadSw        = 1.5 // locked-thread hop: a sleeping thread woken each way
)

func hopChecks(arms []result.Arm) []result.Check {
	idx := hopIndex(arms)
	var out []result.Check
	for _, k := range hopSortedKeys(idx, "direct") {
		d := idx[k]
		if t, ok := idx[hopKey{k.op, "thread", k.gmp}]; ok {
			added := t.Median - d.Median
			out = append(out, result.Check{
				Name:  "one hop costs more than the operation itself (thread − direct > direct)",
				Holds: added > d.Median,
				Detail: fmt.Sprintf("%s at GOMAXPROCS=%d: the hop to a locked thread %s to a %s call",
					hopOpWords(k.op), k.gmp, adds("adds", added), result.FormatNs(d.Median)),
				Arms: []string{d.Name, t.Name},
			})
			if t2, ok := idx[hopKey{k.op, "thread-2hop", k.gmp}]; ok && added > 0 {
				r := (t2.Median - d.Median) / added
				out = append(out, result.Check{
					Name:  fmt.Sprintf("two hops ≈ twice one hop ((2 hops − direct) / (1 hop − direct) in %.1f..%.1f)", hopTwoLow, hopTwoHigh),
					Holds: r >= hopTwoLow && r <= hopTwoHigh,
					Detail: fmt.Sprintf("%s at GOMAXPROCS=%d: two hops %s, one %s (%.2f×)",
						hopOpWords(k.op), k.gmp, adds("add", t2.Median-d.Median), adds("adds", added), r),
					Arms: []string{d.Name, t.Name, t2.Name},
				})
			}
			if t.Switches != nil && k.op == hopRepresentative(idx, k.gmp) {
				out = append(out, result.Check{
					Name:   fmt.Sprintf("a hop to a locked-thread worker costs OS switches (≥ %.1f per call)", hopMinThreadSw),
					Holds:  t.Switches.Total() >= hopMinThreadSw,
					Detail: fmt.Sprintf("%s: %.2f switches per call", t.Name, t.Switches.Total()),
					Arms:   []string{t.Name},
				})
			}
		}
		if g, ok := idx[hopKey{k.op, "goroutine", k.gmp}]; ok && k.gmp == 1 && g.Switches != nil && k.op == hopRepresentative(idx, 1) {
			out = append(out, noSwitchCheck(*g, "a hop to a goroutine at GOMAXPROCS=1", "call"))
		}
	}
	return out
}

// hopSortedKeys lists the keys of one way in the order of hopOps, then GOMAXPROCS.
func hopSortedKeys(idx map[hopKey]*result.Arm, way string) []hopKey {
	var out []hopKey
	for _, op := range slices.Concat(hopOps, hopPreparedOps, []string{"cgo-call"}) {
		var gs []int
		for k := range idx {
			if k.op == op && k.way == way {
				gs = append(gs, k.gmp)
			}
		}
		slices.Sort(gs)
		for _, g := range gs {
			out = append(out, hopKey{op, way, g})
		}
	}
	return out
}

// hopPreferred is the order in which ops stand for all in the switch
// checks and explanations: the SQLite lookup the issue is about first.
var hopPreferred = []string{"modernc-memory", "mattn-memory", "modernc-file", "mattn-file", "map"}

// hopRepresentative is the op whose arms stand for all in the switch
// checks and explanations: the first measured of hopPreferred.
func hopRepresentative(idx map[hopKey]*result.Arm, gmp int) string {
	for _, op := range hopPreferred {
		if _, ok := idx[hopKey{op, "direct", gmp}]; ok {
			return op
		}
	}
	return ""
}

func hopFindings(arms []result.Arm) []string {
	idx := hopIndex(arms)
	out := hopWayFindings(idx)
	// Which effect made the goroutine hop cost what it did.
	var gmps []int
	for k := range idx {
		if k.way == "direct" && k.op != "cgo-call" && !slices.Contains(gmps, k.gmp) {
			gmps = append(gmps, k.gmp)
		}
	}
	slices.Sort(gmps)
	if len(gmps) >= 2 {
		out = append(out, hopStealFindings(idx, gmps[0], gmps[len(gmps)-1])...)
	}
	for _, g := range gmps {
		op := hopRepresentative(idx, g)
		d, ok1 := idx[hopKey{op, "direct", g}]
		t, ok2 := idx[hopKey{op, "thread", g}]
		if !ok1 || !ok2 || t.Switches == nil {
			continue
		}
		out = append(out, fmt.Sprintf("locked-thread hop at GOMAXPROCS=%d over %s %s with %.2f OS switches per call: the worker may run only on its own OS thread, so each direction wakes a sleeping thread and puts another to sleep",
			g, op, adds("adds", t.Median-d.Median), t.Switches.Total()))
	}
	return append(out, hopDriverFindings(idx, gmps)...)
}

// hopWayFindings: each operation at each GOMAXPROCS, direct and every way
// beside it, with its multiple of direct.
func hopWayFindings(idx map[hopKey]*result.Arm) []string {
	var out []string
	wayLabel := map[string]string{"goroutine": "goroutine hop", "thread": "thread hop", "thread-2hop": "2 thread hops", "pool": "pool"}
	for _, k := range hopSortedKeys(idx, "direct") {
		if k.op == "cgo-call" {
			continue
		}
		d := idx[k]
		parts := []string{"direct " + result.FormatNs(d.Median)}
		for _, w := range hopWays[1:] {
			a, ok := idx[hopKey{k.op, w, k.gmp}]
			if !ok {
				continue
			}
			label := wayLabel[w]
			if w == "pool" {
				label = fmt.Sprintf("pool of %s workers for %s callers", a.Params["pool"], a.Params["callers"])
			}
			parts = append(parts, fmt.Sprintf("%s %s (%.1f×)", label, result.FormatNs(a.Median), a.Median/d.Median))
		}
		if len(parts) > 1 {
			out = append(out, fmt.Sprintf("%s at GOMAXPROCS=%d: %s", hopOpWords(k.op), k.gmp, strings.Join(parts, " · ")))
		}
	}
	return out
}

// hopStealFindings: whether a goroutine hop at GOMAXPROCS hi (with Ps
// idle) woke another OS thread to steal the worker, against lo.
func hopStealFindings(idx map[hopKey]*result.Arm, lo, hi int) []string {
	var out []string
	for _, op := range hopPreferred {
		d1, ok1 := idx[hopKey{op, "direct", lo}]
		g1, ok2 := idx[hopKey{op, "goroutine", lo}]
		dn, ok3 := idx[hopKey{op, "direct", hi}]
		gn, ok4 := idx[hopKey{op, "goroutine", hi}]
		if !(ok1 && ok2 && ok3 && ok4) {
			continue
		}
		a1, an := g1.Median-d1.Median, gn.Median-dn.Median
		sw := 0.0
		if gn.Switches != nil {
			sw = gn.Switches.Total()
		}
		if an > 1.5*a1 && an > 0 {
			out = append(out, fmt.Sprintf("seen: idle P wake-up and steal — over %s a goroutine hop %s at GOMAXPROCS=%d but %s at GOMAXPROCS=%d (%.2f OS switches per call): with a P idle, the request wakes another OS thread that steals the worker goroutine, so each hop crosses threads; at GOMAXPROCS=%d the worker simply runs next on the caller's thread",
				op, adds("adds", an), hi, addsFigure(a1), lo, sw, lo))
		} else {
			out = append(out, fmt.Sprintf("not seen: idle P wake-up and steal — over %s a goroutine hop %s at GOMAXPROCS=%d and %s at GOMAXPROCS=%d (%.2f OS switches per call): here the worker mostly ran on the caller's thread either way",
				op, adds("adds", an), hi, addsFigure(a1), lo, sw))
		}
		break
	}
	return out
}

// hopDriverFindings: the two SQLite drivers side by side, and each
// fresh query beside its prepared statement.
func hopDriverFindings(idx map[hopKey]*result.Arm, gmps []int) []string {
	var out []string
	for _, g := range gmps {
		m, ok1 := idx[hopKey{"mattn-memory", "direct", g}]
		p, ok2 := idx[hopKey{"modernc-memory", "direct", g}]
		if !ok1 || !ok2 {
			continue
		}
		line := fmt.Sprintf("drivers at GOMAXPROCS=%d: a :memory: lookup through the cgo driver costs %s, through the pure-Go driver %s (%.2f×)",
			g, result.FormatNs(m.Median), result.FormatNs(p.Median), m.Median/p.Median)
		if c, ok := idx[hopKey{"cgo-call", "direct", g}]; ok {
			line += fmt.Sprintf("; one bare cgo call costs %s, and a lookup makes several (bind, step, column, reset)", result.FormatNs(c.Median))
		}
		out = append(out, line)
	}
	for _, g := range gmps {
		for _, drv := range []string{"modernc", "mattn"} {
			// file vs :memory: is hopStoreFindings' one line, Go's and CPython's side by side.
			for _, store := range []string{"file", "memory"} {
				q, ok1 := idx[hopKey{drv + "-" + store, "direct", g}]
				p, ok2 := idx[hopKey{drv + "-" + store + "-prepared", "direct", g}]
				if ok1 && ok2 {
					out = append(out, fmt.Sprintf("%s-%s fresh query vs prepared statement at GOMAXPROCS=%d: %s vs %s per lookup (%.1f×); a fresh query compiles the SQL each call (database/sql and the driver cache no statement; CPython's sqlite3 does)",
						drv, store, g, result.FormatNs(q.Median), result.FormatNs(p.Median), q.Median/p.Median))
				}
			}
		}
	}
	return out
}

// hopMetrics declares the figures hop arms add beside the median.
var hopMetrics = []exp.Metric{
	{Name: "direct-ratio", Unit: "ratio", Better: exp.LowerIsBetter, Doc: "the call as a multiple of the direct call of the same operation at the same GOMAXPROCS"},
	{Name: "added-ns/op", Unit: "ns", Better: exp.LowerIsBetter, Doc: "what the hop adds to the direct call, per call"},
	{Name: "cgo-call-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the cgo driver's direct lookup (its cgo call cost included)"},
}

// hopStoreFindings is the one file vs :memory: line: the Go drivers'
// direct lookups on a file beside their :memory: ones (each at the highest
// GOMAXPROCS it ran at), and CPython's beside them, per interpreter.
func hopStoreFindings(arms []result.Arm) []string {
	native, py := splitCPython(arms)
	idx := hopIndex(native)
	var parts []string
	for _, drv := range []string{"modernc", "mattn"} {
		gmp := 0
		for k := range idx {
			if k.op == drv+"-file" && k.way == "direct" && k.gmp > gmp {
				gmp = k.gmp
			}
		}
		f, ok1 := idx[hopKey{drv + "-file", "direct", gmp}]
		m, ok2 := idx[hopKey{drv + "-memory", "direct", gmp}]
		if ok1 && ok2 && m.Median > 0 {
			parts = append(parts, fmt.Sprintf("Go %s (GOMAXPROCS=%d) %s vs %s (%.1f×)", drv, gmp, result.FormatNs(f.Median), result.FormatNs(m.Median), f.Median/m.Median))
		}
	}
	by := okArms(py)
	for _, tag := range interpreterTags(py) {
		f, ok1 := by.get(hopPyKey("direct", "file").WithInterpreter(tag))
		m, ok2 := by.get(hopPyKey("direct", "memory").WithInterpreter(tag))
		if ok1 && ok2 && m.Median > 0 {
			parts = append(parts, fmt.Sprintf("CPython sqlite3%s %s vs %s (%.1f×)", onInterpreter(tag), result.FormatNs(f.Median), result.FormatNs(m.Median), f.Median/m.Median))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"the SQLite lookup on a file vs in :memory:, direct: " + strings.Join(parts, " · ") +
		"; on a file every read transaction takes and drops POSIX locks, looks for a hot journal and checks the file header: system calls that :memory: skips"}
}

// hopRefs: SPEC §8's published hop, about the experiment as a whole.
var hopRefs = []exp.Reference{
	{Text: "CPython 3.14: SQLite lookup 8.4 µs direct, 30.4 µs via run_in_executor (3.6×), 58.8 µs via aiosqlite (7.0×)"},
}

// hopVerdict: what a thread hop adds to the operation, at up to two
// GOMAXPROCS (a line of what it adds, a line of the figures it comes
// from, a note of the goroutine hop and two thread hops), and what an
// executor hop adds to CPython's sqlite3 lookup.
func hopVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	// The user's own operation leads, when one was measured.
	lines := userVerdictLines(v)
	goLines, notes := hopGoVerdict(v)
	pyLines, pyMore, pyNotes := hopPyVerdict(v)
	return []exp.VerdictSection{{Block: exp.BlockHop, Heading: "a thread hop over a microsecond operation",
		Lines: append(append(lines, goLines...), pyLines...), More: pyMore, Notes: append(notes, pyNotes...),
		Foot: []string{"  published (CPython 3.14 sqlite3): direct 8.4 µs · run_in_executor 30.4 µs · aiosqlite 58.8 µs"}}}
}

// hopGoVerdict: the operations with a thread arm, at their GOMAXPROCS
// (up to two): what a thread hop adds, the figures it comes from, and a
// note of the goroutine hop and two thread hops.
func hopGoVerdict(v *exp.VerdictRun) (lines, notes []string) {
	threads := v.Where("hop", func(a result.Arm) bool {
		return a.Params["way"] == "thread" && a.Params["op"] != userOpName && a.Params["op"] != userImmutableOpName
	})
	if len(threads) == 0 {
		lines = append(lines, "  Go: "+unmeasured(v, "hop", "run hop"))
	}
	for i, t := range threads {
		if i == 2 {
			break
		}
		same := func(way string) (result.Arm, bool) {
			as := v.Where("hop", func(a result.Arm) bool {
				return a.Params["op"] == t.Params["op"] && a.GOMAXPROCS == t.GOMAXPROCS && a.Params["way"] == way
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
		lines = append(lines, fmt.Sprintf("  %s, GOMAXPROCS=%d: a thread hop %s", hopOpWords(t.Params["op"]), t.GOMAXPROCS, adds("adds", t.Median-d.Median)),
			"    direct "+exp.Figure(d)+" · thread hop "+exp.Figure(t))
		if c, ok := v.Comparison(t.Name, d.Name); ok {
			notes = append(notes, fmt.Sprintf("  %s, GOMAXPROCS=%d, side by side: the thread hop is %s than direct", hopOpWords(t.Params["op"]), t.GOMAXPROCS, exp.PairWords(c, "slower", "faster")))
		}
		var more []string
		for _, w := range []struct{ way, label string }{{"goroutine", "a goroutine hop"}, {"thread-2hop", "two thread hops"}} {
			if a, ok := same(w.way); ok {
				more = append(more, w.label+" "+exp.Figure(a))
			}
		}
		if len(more) > 0 {
			notes = append(notes, fmt.Sprintf("  %s, GOMAXPROCS=%d: %s", hopOpWords(t.Params["op"]), t.GOMAXPROCS, strings.Join(more, " · ")))
		}
	}
	return lines, notes
}

// hopPyVerdict: an sqlite3 lookup from asyncio, direct and through
// executor hops, on a database file, or in :memory: when only those
// measured (a run stored before the file arms has only those); a line per
// interpreter, found by key, --python all's interpreters included: the
// first interpreter's in lines, the others' in more (they give way on a
// full screen).
func hopPyVerdict(v *exp.VerdictRun) (lines, more, notes []string) {
	py := v.Where("hop", isCPython)
	by := indexArms(py, func(result.Arm) bool { return true })
	for _, tag := range interpreterTags(py) {
		pick := func(how, db string) (result.Arm, bool) { return by.get(hopPyKey(how, db).WithInterpreter(tag)) }
		for _, db := range hopPyDBs {
			d, ok1 := pick("direct", db)
			e, ok2 := pick("executor", db)
			if !ok1 || !ok2 {
				continue
			}
			on := map[string]string{"file": "database file", "memory": "in-memory database"}[db]
			if tag != "" {
				on += ", " + interpreterText(tag)
			}
			figs := []string{fmt.Sprintf("  CPython sqlite3, %s: an executor hop %s", on, adds("adds", e.Median-d.Median)),
				"    direct " + exp.Figure(d) + " · executor hop " + exp.Figure(e)}
			if len(lines) == 0 {
				lines = figs
			} else {
				more = append(more, figs...)
			}
			if c, ok := v.Comparison(e.Name, d.Name); ok {
				notes = append(notes, fmt.Sprintf("  CPython sqlite3, %s, side by side: the executor hop is %s than direct", on, exp.PairWords(c, "slower", "faster")))
			}
			var also []string
			if t, ok := pick("two-hop", db); ok {
				also = append(also, "two hops "+exp.Figure(t))
			}
			if a, ok := pick("aiosqlite", db); ok {
				also = append(also, "aiosqlite "+exp.Figure(a))
			}
			if m, ok := pick("direct", "memory"); ok && db == "file" {
				also = append(also, "direct in :memory: "+exp.Figure(m))
			}
			if len(also) > 0 {
				notes = append(notes, "  CPython sqlite3: "+strings.Join(also, " · "))
			}
			break
		}
	}
	return lines, more, notes
}

// hopOpWords says what a hop operation is in words a user can look up:
// "pure-Go SQLite, in-memory database" for modernc-memory.
func hopOpWords(op string) string {
	base, prepared := strings.CutSuffix(op, "-prepared")
	drv, store, _ := strings.Cut(base, "-")
	words := map[string]string{"modernc": "pure-Go SQLite", "mattn": "cgo SQLite (mattn)"}[drv]
	switch {
	case op == "map":
		return "a Go map lookup"
	case op == "cgo-call":
		return "a bare cgo call"
	case op == userOpName:
		return "your query"
	case op == userImmutableOpName:
		return "your query, immutable connection"
	case words == "":
		return op
	}
	switch store {
	case "memory":
		words += ", in-memory database"
	case "file":
		words += ", database file"
	}
	if prepared {
		words += ", prepared statement"
	}
	return words
}

// adds is what a hop costs over the direct call, worded with verb ("adds",
// "add"): "adds 18.2 µs"; a hop that measured faster than the direct call
// (noise: the two arms ran at different moments) never reads as a
// negative cost: "adds nothing measurable (18.6 µs below direct)".
func adds(verb string, ns float64) string {
	if ns >= 0 {
		return verb + " " + result.FormatNs(ns)
	}
	return verb + " nothing measurable (" + result.FormatNs(-ns) + " below direct)"
}

// addsFigure is the cost alone, as adds says it after its verb.
func addsFigure(ns float64) string { return strings.TrimPrefix(adds("", ns), " ") }
