package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// VerdictMaxLines bounds the suites' verdict: a 40-line terminal screen
// less the command that ran it and the line that says where the run was
// stored.
const VerdictMaxLines = 38

// VerdictWidth is the width the verdict is laid out for when the output
// is not a terminal (a file, a pipe, `ctxlab show`).
const VerdictWidth = 80

// VerdictRate is the handoff rate the verdict prices in CPU.
const VerdictRate = exp.VerdictRate

// PublishedSource says where the published figures come from, in words a
// user can look up.
const PublishedSource = "README: Published figures"

// Verdict writes the answer first, laid out for VerdictWidth columns (see
// VerdictLines). It reads only the result model, so a stored run gives
// the same verdict.
func Verdict(w io.Writer, run *result.Run) error {
	for _, l := range VerdictLines(run, true, VerdictWidth) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// VerdictLines is the verdict as lines for a terminal width columns wide
// (≤ 0: VerdictWidth); no line is wider, except a single word or figure
// wider than the whole line. A suite (quick, default, full) gets one screen
// of at most VerdictMaxLines lines that answers the same questions every
// time, from what the experiments declare (exp.Headliner and
// exp.Verdicter): what a handoff costs between each kind of worker and
// what the gap is made of, what one busy worker does to the tail, what a
// thread hop adds to a microsecond operation, the indirect cost of a cold
// cache, what handoffs cost in CPU, and which checks did not hold; an
// answer whose arms were not measured says so. Any other selection (a
// "custom" run: `ctxlab run ring`, and a diagnose --vary run) gets the figures of what it ran
// instead: a compact table per experiment with its checks (selectionLines).
// stored says whether the run is in the history, where `ctxlab show ID`
// and `report` find it. The run's warnings close it. Text from outside
// (the host, the CPU model, an imported run's names) is escaped.
func VerdictLines(run *result.Run, stored bool, width int) []string {
	run = termsafe.Strings(run)
	if width <= 0 {
		width = VerdictWidth
	}
	if run.Suite == "custom" || run.Suite == result.SuiteDiagnose { // a diagnose --vary run: its values are its arms
		return selectionLines(run, stored, width)
	}
	return screenLines(run, exp.All(), stored, width)
}

// A line of the suite's screen gives way, when the screen is full, in the
// order of its kind (giveWay): the published figures first, then the
// checks that did not hold after the first few, the blank lines between
// blocks, the readings, and the first checks; figures never.
type lineKind int

const (
	keepLine lineKind = iota
	noteLine
	spacerLine
	publishedLine
	moreLine       // a second interpreter's or build's figures (exp.VerdictSection.More)
	checkLine      // a check that did not hold, after the first few
	firstCheckLine // one of the first few
)

// giveWay is the order in which kinds of lines leave a full screen.
var giveWay = []lineKind{publishedLine, checkLine, spacerLine, noteLine, firstCheckLine, moreLine}

// firstChecks is how many checks that did not hold stay on the screen
// after the readings have given way.
const firstChecks = 2

// screenLine is one logical line of the screen, already wrapped to the
// width. A check line stands for one check (by name).
type screenLine struct {
	rows []string
	kind lineKind
}

// screen collects the lines of the suite's verdict at one width.
type screen struct {
	width int
	lines []screenLine
	more  string // where the checks left out are found
}

func (s *screen) add(kind lineKind, text ...string) {
	for _, t := range text {
		s.lines = append(s.lines, screenLine{rows: textcol.Wrap(t, s.width), kind: kind})
	}
}

// fit drops lines in giveWay order, the last first, until the screen
// holds at most max rows; the dropped check lines are counted on one line
// of their own.
func (s *screen) fit(max int) []string {
	drop := make([]bool, len(s.lines))
	out := s.assemble(drop)
	for _, kind := range giveWay {
		for i := len(s.lines) - 1; i >= 0 && len(out) > max; i-- {
			if s.lines[i].kind == kind && !drop[i] {
				drop[i] = true
				out = s.assemble(drop)
			}
		}
	}
	if len(out) > max { // cut at the bottom: the answers stay, the closing lines go
		out = out[:max]
	}
	return out
}

// assemble is the screen without the dropped lines, with "… N more"
// after the last check line kept (or in place of them all), a line after
// the last of the other interpreters' figures that gave way (moreLine)
// counting them all.
func (s *screen) assemble(drop []bool) []string {
	more, last := 0, -1
	for i, l := range s.lines {
		if l.kind == checkLine || l.kind == firstCheckLine {
			last = i
			if drop[i] {
				more++
			}
		}
	}
	gone, lastMore := 0, -1 // other interpreters' rows that gave way
	for i, l := range s.lines {
		if drop[i] && l.kind == moreLine {
			gone, lastMore = gone+len(l.rows), i
		}
	}
	var out []string
	for i, l := range s.lines {
		if !drop[i] {
			out = append(out, l.rows...)
		}
		if i == lastMore {
			out = append(out, textcol.Wrap(fmt.Sprintf("  … %d lines more of other interpreters' figures: %s", gone, s.more), s.width)...)
		}
		if i == last && more > 0 {
			out = append(out, textcol.Wrap(fmt.Sprintf("  … %d more: %s", more, s.more), s.width)...)
		}
	}
	return out
}

// screenLines is a suite's verdict: the same questions every time.
func screenLines(run *result.Run, specs []*exp.Spec, stored bool, width int) []string {
	v := exp.NewVerdictRun(run)
	s := &screen{width: width, more: "ctxlab run --detail"}
	if stored {
		s.more = "ctxlab show " + run.ID
	}
	s.add(keepLine, header(run, suiteName(run.Suite), width)...)
	s.add(keepLine, "figures: median of the repetitions' means per op, (min–max) in its unit")
	for _, blk := range blocks(v, specs, width) {
		s.add(spacerLine, "")
		s.lines = append(s.lines, blk.lines...)
	}
	s.add(spacerLine, "")
	if l := tooFewLine(run.Arms, s.more); l != "" { // a figure's place says "too few ops"; here is why
		s.add(keepLine, l)
	}
	head, bad := verdictChecks(run)
	s.add(keepLine, head)
	for i, b := range bad {
		kind := checkLine
		if i < firstChecks {
			kind = firstCheckLine
		}
		s.lines = append(s.lines, screenLine{rows: textcol.WrapLines(b, width, 2), kind: kind})
	}
	s.lines = append(s.lines, screenLine{rows: textcol.WrapLines(verdictNoise(run.Arms, "noise"), width, 2)})
	s.add(keepLine, closing(run, stored)...)
	return s.fit(VerdictMaxLines)
}

// maxTooFew is how many arms with too few ops the suite's screen names;
// the first with its reason, the rest are counted.
const maxTooFew = 3

// tooFewLine names the arms whose repetitions held too few ops to give a
// figure, the first with its reason ("" when there are none): the screen
// shows "too few ops" where their figures would be, and this says why.
func tooFewLine(arms []result.Arm, more string) string {
	var few []result.Arm
	for _, a := range arms {
		if a.Status == result.StatusTooFewOps {
			few = append(few, a)
		}
	}
	if len(few) == 0 {
		return ""
	}
	line := "too few ops, so no figure: " + few[0].Name + " — " + few[0].Reason
	var others []string
	for i, a := range few[1:] {
		if i+1 == maxTooFew {
			others = append(others, fmt.Sprintf("… %d more: %s", len(few)-maxTooFew, more))
			break
		}
		others = append(others, a.Name)
	}
	if len(others) > 0 {
		line += "; also " + strings.Join(others, ", ")
	}
	return line
}

// suiteName is how the screen's first line names the suite.
func suiteName(suite string) string {
	if suite == "" {
		return "a run"
	}
	return suite + " suite"
}

// header is the run and the machine: one line when it fits, else two.
func header(run *result.Run, what string, width int) []string {
	first := "ctxlab · " + what
	second := fmt.Sprintf("%s · %s, %d CPUs%s · Linux %s", orDash(run.Env.Hostname), orDash(run.Env.CPUModel),
		run.Env.LogicalCPUs, virt(run.Env), orDash(run.Env.Kernel))
	if one := first + " · " + second; textcol.Width(one) <= width {
		return []string{one}
	}
	return append(textcol.Wrap(first, width), textcol.Wrap(second, width)...) // many experiments: `ctxlab run python`
}

// closing is where the details are, the run's warnings, and whether it
// was interrupted.
func closing(run *result.Run, stored bool) []string {
	out := []string{"detail: ctxlab show " + run.ID + " · ctxlab report -o report.html"}
	if !stored {
		out = []string{"detail: ctxlab run --detail; this run is not in the history, so show and report cannot find it (--format json -o FILE keeps it)"}
	}
	for _, w := range run.Warnings {
		out = append(out, "warning: "+w)
	}
	if run.Interrupted {
		out = append(out, "interrupted: the verdict covers the arms that finished")
	}
	if _, busy := exp.Busy(run); !busy { // a busy machine's line under the handoff table says it
		if l := suiteLength(run); l != "" {
			out = append(out, "length: the arms took "+l+", over the quick suite's 30 s on a quiet 2-core machine")
		}
	}
	return out
}

// QuickSuiteLimit is how long the quick suite takes at most on a quiet
// 2-core machine.
const QuickSuiteLimit = 30 * time.Second

// suiteLength is how long a quick suite's arms took when the machine made
// it longer than QuickSuiteLimit (their durations, set-up included, which
// leave out the start and the comparisons side by side); "" otherwise.
func suiteLength(run *result.Run) string {
	if run.Suite != exp.SuiteQuick {
		return ""
	}
	var ns int64
	for _, a := range run.Arms {
		ns += a.DurationNs
	}
	if time.Duration(ns) <= QuickSuiteLimit {
		return ""
	}
	return time.Duration(ns).Round(time.Second).String()
}

// block is one answer of the screen, its lines already wrapped.
type block struct{ lines []screenLine }

// blocks lays out what the experiments declare: the handoff table from
// their Headline rows, then each block's first heading, every
// experiment's lines, notes and foot lines, in experiment order. A block
// nothing writes to is left out.
func blocks(v *exp.VerdictRun, specs []*exp.Spec, width int) []block {
	var rows []exp.Headline
	heading := make([]string, exp.NumBlocks)
	secs := make([][]exp.VerdictSection, exp.NumBlocks)
	for _, s := range specs {
		if h, ok := exp.Hook[exp.Headliner](s); ok {
			rows = append(rows, h.Headline()...)
		}
		vd, ok := exp.Hook[exp.Verdicter](s)
		if !ok {
			continue
		}
		for _, sec := range vd.Verdict(v) {
			if sec.Block < 0 || sec.Block >= exp.NumBlocks {
				continue
			}
			if heading[sec.Block] == "" {
				heading[sec.Block] = sec.Heading
			}
			secs[sec.Block] = append(secs[sec.Block], sec)
		}
	}
	var out []block
	for b := exp.Block(0); b < exp.NumBlocks; b++ {
		s := &screen{width: width}
		var notes, foot []string
		if b == exp.BlockHandoff && len(rows) > 0 {
			table, tails, published := handoffTable(v, rows, width)
			s.add(keepLine, table...)
			notes, foot = tails, published
		} else if heading[b] != "" {
			s.add(keepLine, heading[b])
		}
		for _, sec := range secs[b] {
			s.add(keepLine, sec.Lines...)
		}
		for _, sec := range secs[b] {
			s.add(moreLine, sec.More...)
		}
		for _, sec := range secs[b] {
			s.add(noteLine, sec.Notes...)
		}
		s.add(noteLine, notes...) // the table's own notes go first
		for _, sec := range secs[b] {
			foot = append(foot, sec.Foot...)
		}
		s.add(publishedLine, foot...)
		if len(s.lines) > 0 {
			out = append(out, block{s.lines})
		}
	}
	return out
}

// pinned says whether the arm's workers were placed by ctxlab.
func pinned(a result.Arm) bool { return a.Placement == "same-cpu" || a.Placement == "cross-cpu" }

// acrossCPUs says whether an arm's workers could be on two CPUs at once:
// pinned apart, or unpinned with more than one CPU (and, for goroutines,
// more than one P). An unpinned arm of a run confined to one CPU (--cpus 0)
// is one more one-CPU figure, not an across-CPUs one.
func acrossCPUs(a result.Arm, env result.Env) bool {
	if a.Placement == "cross-cpu" {
		return true
	}
	if a.Placement == "same-cpu" || a.GOMAXPROCS == 1 {
		return false
	}
	cpus := len(a.CPUs)
	if cpus == 0 {
		cpus = len(env.OnlineCPUs)
	}
	return cpus > 1
}

// handoffTable is the experiments' Headline rows as a table: each kind of
// worker on one CPU and across CPUs, each figure with its spread, and how
// the across-CPUs workers were placed (a run confined to one CPU has no
// such column, and says why); the published figures as a column when the
// width has room for it, else as lines under the table. notes say which
// medians carry a slow tail, in words.
func handoffTable(v *exp.VerdictRun, rows []exp.Headline, width int) (table, notes, published []string) {
	head := []string{"handoff, one round trip", "one CPU", "across CPUs", "", "published (see README)"}
	busyWhy, busy := exp.Busy(v.Run)
	cpuLed := busy && headlineCPU(v, rows)
	cells := [][]string{head}
	var tails, pubs []string
	anyAcross, confined := false, false
	var split string // the busy line's example: the row whose participants waited most
	most := -1.0
	var pyRows []handoffRow
	for _, r := range rows {
		h := newHandoffRow(v, r, cpuLed)
		if h.split != "" && h.wait > most {
			split, most = h.split, h.wait
		}
		tails = append(tails, h.tails...)
		anyAcross, confined = anyAcross || h.across || h.acrossFew, confined || h.confined
		if r.Published != "" {
			pubs = append(pubs, r.Label+" "+h.cells[4])
		}
		cells = append(cells, h.cells)
		pyRows = append(pyRows, h)
	}
	pyNote := pyTags(cells, pyRows)
	if !anyAcross {
		for i := range cells {
			cells[i] = append(cells[i][:2], cells[i][4])
		}
	}
	table = writeCells(cells)
	if tableWidth(table) > width && len(pubs) > 0 { // the published figures go under the table
		for i := range cells {
			cells[i] = cells[i][:len(cells[i])-1]
		}
		table = writeCells(cells)
		published = []string{"  published, on other machines (" + PublishedSource + "): " + strings.Join(pubs, " · ")}
	}
	if tableWidth(table) > width { // a narrow screen (a phone's report): a row's figures under its label
		table = stackCells(cells, width)
	}
	if !anyAcross && confined {
		table = append(table, "  across CPUs: not measured, the run was confined to one CPU (--cpus)")
	}
	if pyNote != "" {
		table = append(table, pyNote)
	}
	if busy {
		if l := suiteLength(v.Run); l != "" {
			busyWhy += "; the quick suite's arms took " + l
		}
		table = append(table, busyLine(busyWhy, split, cpuLed))
	}
	if len(tails) > 0 {
		notes = append(notes, "  slow tail: these medians (means per op) stand well above the typical op, p50: "+strings.Join(tails, " · "))
	}
	return table, notes, published
}

// pyTags says whose CPython figures the table's rows hold (--python all):
// where they are all one interpreter's, in one line under the table (a
// tag in each cell would widen the rows past an 80-column screen); where
// they are several interpreters', with each figure (the cells are changed
// in place).
func pyTags(cells [][]string, rows []handoffRow) string {
	seen := map[string]bool{}
	var all []string
	for _, h := range rows {
		for _, py := range h.py {
			if py != "" && !seen[py] {
				seen[py] = true
				all = append(all, py)
			}
		}
	}
	switch len(all) {
	case 0:
		return ""
	case 1:
		return "  CPython rows: py=" + all[0] + " (the run's other interpreters: in the detail tables)"
	}
	for i, h := range rows {
		for col, py := range h.py {
			if py != "" {
				cells[i+1][col] += " (py=" + py + ")"
			}
		}
	}
	return ""
}

// handoffRow is one Headline row of the handoff table: its cells (label,
// one CPU, across CPUs, how the across-CPUs workers were placed, the
// published figure), the figures that carry a slow tail, whether it has
// an across-CPUs figure (or one with too few ops), and whether one was
// measured only on one CPU (a run confined to one).
type handoffRow struct {
	cells            []string
	tails            []string
	across, confined bool
	acrossFew        bool // its across-CPUs arm has too few ops
	// split is one of its figures split into CPU and wait (exp.CostSplit)
	// on a busy machine, and wait that figure's share of wall time waiting.
	split string
	wait  float64
	// py are the interpreters of its figures by their cell (--python
	// all: 1 one CPU, 2 across CPUs), "" where none is named.
	py [3]string
}

// busyLine says, under the handoff table, that the machine was busy, why,
// and what its figures then are: CPU time with one figure split into CPU
// and wait (cpuLed), or wall times that the run cannot split.
func busyLine(why, split string, cpuLed bool) string {
	if !cpuLed {
		return "  busy machine (" + why + "): wall times, with the wait behind other work; no CPU time per op to split it from"
	}
	l := "  busy machine (" + why + "): CPU time per op of all the workers, wall beside it"
	if split != "" {
		l += "; " + split
	}
	return l
}

// headlineCPU says whether one of the handoff table's arms has a CPU time
// per op: the table can lead with CPU time.
func headlineCPU(v *exp.VerdictRun, rows []exp.Headline) bool {
	for _, r := range rows {
		for _, n := range append(append([]string(nil), r.One...), r.Across...) {
			if a, ok := v.Pick(n); ok {
				if _, _, ok := price.CPUPerOp(a); ok {
					return true
				}
			}
		}
	}
	return false
}

// busyFigure is an arm's figure on a busy machine: its CPU time per op,
// with its wall time beside it ("6.2 µs (wall 19)", the unit said once
// where both share it), or its wall time alone, said so, where the run
// has no CPU time for it.
func busyFigure(a result.Arm) string {
	c, _, ok := price.CPUPerOp(a)
	if !ok {
		return result.FormatValue(a.Median, a.Unit) + " wall"
	}
	cs, ws := result.FormatNs(c), result.FormatNs(a.Median)
	if ci, wi := strings.LastIndexByte(cs, ' '), strings.LastIndexByte(ws, ' '); ci > 0 && wi > 0 && cs[ci:] == ws[wi:] {
		ws = ws[:wi]
	}
	return cs + " (wall " + ws + ")"
}

func newHandoffRow(v *exp.VerdictRun, r exp.Headline, busy bool) handoffRow {
	h := handoffRow{cells: []string{"  " + r.Label, "not measured", "—", "", orDash(r.Published)}, wait: -1}
	figure := func(a result.Arm, where string, col int) string {
		s := exp.Figure(a)
		if busy {
			s = busyFigure(a)
			if sp, ok := exp.CostSplit(a); ok {
				// The example: the figure that waited most, of those whose
				// wait fits in its wall time (a goroutine arm's participants
				// are all of ctxlab's threads, whose waits add up).
				w, ok := exp.WaitShare(a)
				fits := !ok || w <= 1
				if fits && w > h.wait {
					h.split, h.wait = r.Label+", "+where+": "+sp, w
				}
			}
		}
		h.py[col] = exp.Interpreter(a.Name) // --python all: whose figure it is (pyTags)
		if p := a.Percentiles; p != nil && p.Samples > 0 && p.P50 > 0 && a.Median/p.P50 > tailRatio {
			kind, _, _ := strings.Cut(r.Label, ",")
			h.tails = append(h.tails, fmt.Sprintf("%s %s %s", kind, where, result.FormatNs(p.P50)))
		}
		return s
	}
	one, ok1 := v.Pick(r.One...)
	if ok1 {
		h.cells[1] = figure(one, "one CPU", 1)
	} else if f, ok := v.TooFew(r.One...); ok {
		h.cells[1] = f.Status
	}
	var across result.Arm
	for _, name := range r.Across {
		a, ok := v.Pick(name)
		if !ok {
			if f, few := v.TooFew(name); few && acrossCPUs(f, v.Run.Env) && !h.across {
				h.cells[2], h.acrossFew = f.Status, true // unless a later one has a figure
			}
			continue
		}
		if !acrossCPUs(a, v.Run.Env) {
			h.confined = true
			continue
		}
		across, h.across = a, true
		break
	}
	if h.across {
		h.cells[2] = figure(across, "across CPUs", 2)
		h.cells[3] = "unpinned"
		if pinned(across) {
			h.cells[3] = "pinned"
		}
	}
	if r.PublishedP50 && (ok1 || h.across) {
		a := one
		if !ok1 {
			a = across
		}
		if a.Percentiles != nil && a.Percentiles.Samples > 0 {
			h.cells[4] += " (here " + result.FormatNs(a.Percentiles.P50) + ")"
		}
	}
	return h
}

// stackCells is the handoff table for a screen too narrow for its
// columns: the head's words on one line, then each row's label and, under
// it, its figures (one CPU · across CPUs and how placed), each wrapped to
// width.
func stackCells(cells [][]string, width int) []string {
	head := cells[0]
	var heads []string
	for _, h := range head[1:] {
		if h != "" && !strings.HasPrefix(h, "published") {
			heads = append(heads, h)
		}
	}
	out := textcol.Wrap(head[0]+": "+strings.Join(heads, " · "), width)
	for _, r := range cells[1:] {
		out = append(out, textcol.Wrap(r[0], width)...)
		figs := r[1]
		if len(r) >= 4 && r[2] != "—" { // label, one CPU, across CPUs, placed
			figs += " · " + strings.TrimSpace(r[2]+" "+r[3])
		}
		out = append(out, textcol.Wrap("    "+figs, width)...)
	}
	return out
}

// writeCells lines cells up in columns (textcol.Write) as lines.
func writeCells(cells [][]string) []string {
	var b strings.Builder
	textcol.Write(&b, cells, "", nil)
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// tableWidth is the widest of lines.
func tableWidth(lines []string) int {
	w := 0
	for _, l := range lines {
		if n := textcol.Width(l); n > w {
			w = n
		}
	}
	return w
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// verdictChecks lists the checks that did not hold, each name once per
// experiment with the number of arms it failed on, under a head that
// counts checks the same way: by name, one per line (so a shortened
// list's "… N more" agrees), and, where a check was evaluated more than
// once (per arm, per pair), also the evaluations: "3 of 20 (4 of 32
// evaluations)".
func verdictChecks(run *result.Run) (head string, bad []string) {
	evaluated, failed, names, failedNames := 0, 0, 0, 0
	for _, e := range run.Experiments {
		details := map[string][]string{} // a check evaluated on several arms is said once
		seen := map[string]bool{}
		var order []string
		for _, c := range e.Checks {
			if c.Skipped {
				continue
			}
			evaluated++
			if !seen[c.Name] {
				seen[c.Name] = true
				names++
			}
			if c.Holds {
				continue
			}
			failed++
			if details[c.Name] == nil {
				order = append(order, c.Name)
			}
			details[c.Name] = append(details[c.Name], c.Detail)
		}
		failedNames += len(order)
		for _, n := range order {
			times := ""
			if k := len(details[n]); k > 1 {
				times = fmt.Sprintf(" (on %d arms)", k)
			}
			bad = append(bad, fmt.Sprintf("  %s: %s%s — %s", e.Name, n, times, strings.Join(details[n], " | ")))
		}
	}
	if evaluated == 0 {
		return "checks: none evaluated", nil
	}
	head = fmt.Sprintf("checks that did not hold on this machine: %d of %d", failedNames, names)
	if failed != failedNames || evaluated != names {
		head += fmt.Sprintf(" (%d of %d evaluations)", failed, evaluated)
	}
	return head, bad
}

// verdictNoise says once how many of arms are noisy and why: each kind of
// reason once, with one arm's wording and how many arms gave it.
func verdictNoise(arms []result.Arm, label string) string {
	kinds, order, noisy := noiseReasons(arms)
	if noisy == 0 {
		return label + ": no arm is noisy"
	}
	var parts []string
	for _, k := range order {
		rk := kinds[k]
		if rk.varied {
			parts = append(parts, fmt.Sprintf("%s (%s, figures vary)", rk.example, plural(rk.arms, "arm")))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%s)", rk.example, plural(rk.arms, "arm")))
		}
	}
	return fmt.Sprintf("%s: %d of %d arms noisy — %s", label, noisy, len(arms), strings.Join(parts, "; "))
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
