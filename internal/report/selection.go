package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// selectionLegend says once, at the top, what the compact tables' columns
// are.
const selectionLegend = "figures: median of the repetitions' means per op, min–max of them in the median's unit; " +
	"n: repetitions; switches: OS context switches per op (voluntary + involuntary) of the arm's threads and processes"

// selectionLines is the verdict of a run that measured a selection rather
// than a suite: what ran, hyperfine-style. For each experiment a compact
// table, one line per arm (median, min–max, n, switches per op, and, where
// the width has room, the sampled p50 and p99), grouped by what one op is;
// the arms that did not run, by reason; its noise, said once; its checks,
// held or not; and its readings; then the run's cost of a switch, when it
// measured one (price.DirectCost).
func selectionLines(run *result.Run, stored bool, width int) []string {
	names := experimentOrder(run)
	what := strings.Join(names, ", ")
	if what == "" {
		what = "no experiment"
	}
	out := header(run, what, width)
	out = append(out, textcol.Wrap(selectionLegend, width)...)
	exps := experimentIndex(run)
	more := "ctxlab run --detail"
	if stored {
		more = "ctxlab show " + run.ID
	}
	for _, name := range names {
		out = append(out, "")
		out = append(out, experimentLines(exps[name], name, armsOf(run, name), width, more)...)
	}
	if len(names) == 0 {
		out = append(out, "", "no arm ran")
	}
	if c, ok := price.DirectCost(run); ok { // the one cost of a switch, as a suite's verdict, budget and watch give it
		out = append(out, "")
		out = append(out, textcol.Wrap(c.Line(), width)...)
	}
	out = append(out, "")
	foot := closing(run, stored)
	if stored {
		foot[0] = "every column and note: ctxlab show " + run.ID
	}
	return append(out, textcol.WrapAll(foot, width)...)
}

// maxReadings is how many of an experiment's readings (its findings, in
// the order it gives them) a selection's verdict shows; the rest are
// counted, and more says where they are.
const maxReadings = 3

// experimentLines is one experiment's part of a selection's verdict.
func experimentLines(e result.Experiment, name string, arms []result.Arm, width int, more string) []string {
	title := name
	if e.Summary != "" {
		title += " — " + e.Summary
	}
	out := textcol.Wrap(title, width)
	var measured, shown []result.Arm // shown: in the table, too few ops too
	var few []string
	notRun := map[string][]string{} // the arms that did not run, by why
	var reasons []string
	for _, a := range arms {
		if exp.Measured(a) {
			measured = append(measured, a)
			shown = append(shown, a)
			continue
		}
		if a.Status == result.StatusTooFewOps { // a row that says so, the reason under the table
			shown = append(shown, a)
			few = append(few, fmt.Sprintf("  %s: %s — %s", a.Status, exp.ShortName(a), a.Reason))
			continue
		}
		why := a.Status
		if a.Reason != "" && a.Reason != a.Status {
			why += ": " + a.Reason
		}
		if notRun[why] == nil {
			reasons = append(reasons, why)
		}
		notRun[why] = append(notRun[why], exp.ShortName(a))
	}
	out = append(out, armTable(name, shown, width)...)
	for _, f := range few { // the reason whole: it is what the row's place says
		out = append(out, textcol.Wrap(f, width)...)
	}
	for _, why := range reasons {
		which := plural(len(notRun[why]), "arm")
		if len(notRun[why]) <= 3 { // a few are named
			which = strings.Join(notRun[why], ", ")
		}
		out = append(out, textcol.WrapLines(fmt.Sprintf("  not measured: %s — %s", which, why), width, 2)...)
	}
	if len(measured) > 0 {
		out = append(out, textcol.WrapLines(verdictNoise(measured, "  noise"), width, 2)...)
	}
	if l := counterLine(measured); l != "" {
		out = append(out, textcol.WrapLines(l, width, 4)...)
	}
	out = append(out, checkLines(e.Checks, width)...)
	if len(e.Findings) > 0 {
		out = append(out, "  readings:")
		for i, f := range e.Findings {
			if i == maxReadings {
				out = append(out, textcol.Wrap(fmt.Sprintf("    … %d more: %s", len(e.Findings)-i, more), width)...)
				break
			}
			out = append(out, textcol.Wrap("    "+f, width)...)
		}
	}
	return out
}

// counterLine says, once for the arms, which perf counters --counters
// read and which it could not, with why: "" when no arm carries counters.
// The figures per arm are in the detail.
func counterLine(arms []result.Arm) string {
	var read, order []string
	seen, armsRead := map[string]bool{}, 0
	why := map[string][]string{} // reason -> counters
	for _, a := range arms {
		got := false
		for _, c := range a.Counters {
			if seen[c.Name] {
				got = got || c.PerOp != nil
				continue
			}
			seen[c.Name] = true
			switch {
			case c.PerOp != nil:
				read, got = append(read, c.Name), true
			case c.Unsupported != "":
				if why[c.Unsupported] == nil {
					order = append(order, c.Unsupported)
				}
				why[c.Unsupported] = append(why[c.Unsupported], c.Name)
			}
		}
		if got {
			armsRead++
		}
	}
	if len(read) == 0 && len(order) == 0 {
		return ""
	}
	parts := []string{}
	for _, r := range order { // first: what the user asked for and did not get
		parts = append(parts, fmt.Sprintf("unsupported here: %s — %s", strings.Join(why[r], ", "), r))
	}
	if len(read) > 0 {
		parts = append(parts, fmt.Sprintf("read per op on %s: %s (the figures: the detail)", plural(armsRead, "arm"), strings.Join(read, ", ")))
	}
	return "  counters: " + strings.Join(parts, "; ")
}

// plural is "1 arm", "3 arms".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// A column of the compact table: its header, each arm's cell, and whether
// it is right-aligned (a number).
type column struct {
	head  string
	cell  func(a result.Arm) string
	right bool
}

// armTable is the compact table of measured arms: a header row, then the
// arms grouped by their op in run order (the header row names the first
// op, a row of its own each later one; an op too wide for the names'
// column is a line of its own above its rows, so it never widens the
// table). The sampled p50 and p99 come in only where the width has room
// for them with the names whole; names too long for what is left wrap at
// a '/', never cut.
func armTable(experiment string, arms []result.Arm, width int) []string {
	if len(arms) == 0 {
		return nil
	}
	var groups []string
	byOp := map[string][]result.Arm{}
	for _, a := range arms {
		op := result.ShortOp(a.Op)
		if byOp[op] == nil {
			groups = append(groups, op)
		}
		byOp[op] = append(byOp[op], a)
	}
	cols, tail := tableColumns(arms)
	marks := column{"", armMark, false}
	names := map[string]string{}
	nameWidth := 0
	for _, a := range arms {
		names[a.Name] = exp.ShortName(a)
		nameWidth = max(nameWidth, textcol.Width(names[a.Name]))
	}
	const indent = 2
	if tail != nil && indent+nameWidth+columnsSpan(append(append(append([]column{}, cols...), tail...), marks), arms) <= width {
		cols = append(cols, tail...)
	}
	cols = append(cols, marks)
	room := max(width-indent-columnsSpan(cols, arms), 12)
	// Too narrow for the names beside the figures (a phone's report): each
	// name on a line of its own, its figures on the next.
	stacked := nameWidth > room && room < minNameRoom
	shown := fitNames(arms, names, room)
	if stacked {
		shown = fitNames(arms, names, width-indent)
	}
	labelWidth := namesWidth(shown)
	pre := map[int][]string{}          // lines before a row: a heading, a stacked name
	skip := map[int]bool{}             // rows that stand for a heading on a line of its own
	heading := func(g string) string { // "" when it goes on a line of its own
		if !stacked && textcol.Width("per "+g) <= max(labelWidth, room) {
			return "per " + g
		}
		return ""
	}
	line := func(s string) []string { return textcol.Wrap(strings.Repeat(" ", indent)+s, width) }
	rows := [][]string{append([]string{heading(groups[0])}, headsOf(cols)...)}
	if rows[0][0] == "" {
		pre[0] = line("per " + groups[0])
	}
	for i, g := range groups {
		if i > 0 {
			h := heading(g)
			if h == "" {
				pre[len(rows)], skip[len(rows)] = line("per "+g), true
			}
			rows = append(rows, cellsOf(h, cols, nil))
		}
		for _, a := range byOp[g] {
			parts := shown[a.Name]
			if stacked {
				for j, p := range parts {
					pre[len(rows)] = append(pre[len(rows)], line(strings.Repeat("  ", min(j, 1))+p)...)
				}
				rows = append(rows, cellsOf("", cols, &a))
				continue
			}
			rows = append(rows, cellsOf(parts[0], cols, &a))
			for _, p := range parts[1:] {
				rows = append(rows, cellsOf("  "+p, cols, nil))
			}
		}
	}
	right := func(col, ncols int) bool { return col > 0 && col <= len(cols) && cols[col-1].right }
	var b strings.Builder
	textcol.Write(&b, rows, strings.Repeat(" ", indent), right)
	return interleave(strings.Split(strings.TrimRight(b.String(), "\n"), "\n"), pre, skip)
}

// namesWidth is the names' column as the table will have it: each name's
// widest part, its continuations indented two.
func namesWidth(shown map[string][]string) int {
	w := 0
	for _, parts := range shown {
		for i, p := range parts {
			w = max(w, textcol.Width(p)+2*min(i, 1))
		}
	}
	return w
}

// interleave puts the lines of pre before the table's row of the same
// index, and leaves out the rows skip names.
func interleave(table []string, pre map[int][]string, skip map[int]bool) []string {
	var out []string
	for i, l := range table {
		out = append(out, pre[i]...)
		if !skip[i] {
			out = append(out, l)
		}
	}
	return out
}

// minNameRoom is the least room for names beside the figures; with less
// (a narrow screen), each name goes on a line of its own.
const minNameRoom = 24

// tableColumns are the compact table's figure columns: median, range,
// repetitions and, where any arm has them, switches; tail is the sampled
// p50 and p99, where any arm has samples, for the caller to add when the
// width has room.
func tableColumns(arms []result.Arm) (cols, tail []column) {
	has := func(ok func(a result.Arm) bool) bool {
		for _, a := range arms {
			if ok(a) {
				return true
			}
		}
		return false
	}
	cols = []column{
		{"median", func(a result.Arm) string { return cellValue(a.Median, a.Unit) }, true},
		{"min–max", exp.Spread, true},
		{"n", func(a result.Arm) string { return repetitions(a) }, true},
	}
	if has(func(a result.Arm) bool { return a.Switches != nil }) {
		cols = append(cols, column{"switches", func(a result.Arm) string {
			if a.Switches == nil {
				return "—"
			}
			return switchesText(a.Switches.Total())
		}, true})
	}
	if has(func(a result.Arm) bool { return a.Percentiles != nil && a.Percentiles.Samples > 0 }) {
		pct := func(get func(p *result.Percentiles) float64) func(a result.Arm) string {
			return func(a result.Arm) string {
				if p := a.Percentiles; p != nil && p.Samples > 0 {
					return result.FormatNs(get(p))
				}
				return "—"
			}
		}
		tail = []column{
			{"p50", pct(func(p *result.Percentiles) float64 { return p.P50 }), true},
			{"p99", pct(func(p *result.Percentiles) float64 { return p.P99 }), true},
		}
	}
	return noFigures(cols, true), noFigures(tail, false)
}

// noFigures makes cols show no figure of an arm whose repetitions held
// too few ops: the first column says "too few ops" where say is set, the
// others are empty.
func noFigures(cols []column, say bool) []column {
	out := make([]column, len(cols))
	for i, c := range cols {
		first, cell := say && i == 0, c.cell
		out[i] = c
		out[i].cell = func(a result.Arm) string {
			switch {
			case a.Status != result.StatusTooFewOps:
				return cell(a)
			case first:
				return a.Status
			}
			return ""
		}
	}
	return out
}

// columnsSpan is the width cols take beside the names, a gap before each
// column that is not empty for every arm.
func columnsSpan(cols []column, arms []result.Arm) int {
	const gap = 2
	w := 0
	for _, c := range cols {
		cw := textcol.Width(c.head)
		for _, a := range arms {
			cw = max(cw, textcol.Width(c.cell(a)))
		}
		if cw > 0 {
			w += gap + cw
		}
	}
	return w
}

// headsOf are the columns' heads.
func headsOf(cols []column) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.head)
	}
	return out
}

// cellsOf is a row: label, then each column's cell of a (empty cells
// for a row of no arm: a heading, a name's continuation).
func cellsOf(label string, cols []column, a *result.Arm) []string {
	r := []string{label}
	for _, c := range cols {
		if a == nil {
			r = append(r, "")
		} else {
			r = append(r, c.cell(*a))
		}
	}
	return r
}

// fitNames gives each arm's short name as the table shows it, in room
// columns: whole when it fits, else wrapped at '/' onto lines of its own
// (never cut: a cut name is not an arm a user can run or look up).
func fitNames(arms []result.Arm, names map[string]string, room int) map[string][]string {
	out := map[string][]string{}
	for _, a := range arms {
		n := names[a.Name]
		if textcol.Width(n) <= room {
			out[a.Name] = []string{n}
		} else {
			out[a.Name] = wrapName(n, room)
		}
	}
	return out
}

// wrapName breaks an arm name after a '/' into pieces of at most room
// columns (the pieces after the first are indented two columns by the
// caller); a part with no '/' to break at is cut where it must be.
func wrapName(n string, room int) []string {
	var out []string
	first := true
	for n != "" {
		w := room
		if !first {
			w = room - 2
		}
		if w < 4 {
			w = 4
		}
		r := []rune(n)
		if len(r) <= w {
			out = append(out, n)
			break
		}
		cut := strings.LastIndex(string(r[:w]), "/")
		if cut <= 0 {
			cut = len(string(r[:w])) - 1
		}
		out = append(out, n[:cut+1])
		n = n[cut+1:]
		first = false
	}
	return out
}

// cellValue is a figure in its unit, times as plain durations: the
// group's row says what they are per.
func cellValue(v float64, unit string) string {
	if strings.HasPrefix(unit, "ns/") {
		return result.FormatNs(v)
	}
	return result.FormatValue(v, unit)
}

// repetitions is how many repetitions an arm's figures come from.
func repetitions(a result.Arm) string {
	if n := len(a.RepMeans); n > 0 {
		return strconv.Itoa(n)
	}
	return "—"
}

// switchesText writes switches per op with the precision that matters at
// their size: 0.00, 2.05, 12.3, 158.
func switchesText(s float64) string {
	switch {
	case s >= 100:
		return fmt.Sprintf("%.0f", s)
	case s >= 10:
		return fmt.Sprintf("%.1f", s)
	}
	return fmt.Sprintf("%.2f", s)
}

// armMark says in a word what the figures alone do not: the arm did not
// finish every repetition, or it is noisy (the noise line under the table
// says why, once).
func armMark(a result.Arm) string {
	if a.Status == result.StatusTooFewOps { // it says so in its figures' place, and has none to be noisy
		return ""
	}
	var marks []string
	if a.Status != result.StatusOK {
		marks = append(marks, a.Status)
	}
	if a.Noise.Noisy {
		marks = append(marks, "noisy")
	}
	return strings.Join(marks, ", ")
}

// checkLines are an experiment's checks under a head that counts them: a
// check that held by name, one that did not with its figures, each name
// once (with how many arms it was evaluated on).
func checkLines(checks []result.Check, width int) []string {
	if len(checks) == 0 {
		return nil
	}
	type group struct {
		name    string
		holds   bool
		skipped bool
		details []string
	}
	var order []*group
	by := map[string]*group{}
	held, failed, skipped := 0, 0, 0
	for _, c := range checks {
		state := "holds"
		switch {
		case c.Skipped:
			state, skipped = "skipped", skipped+1
		case c.Holds:
			held++
		default:
			state, failed = "does not hold", failed+1
		}
		k := state + "\x00" + c.Name
		g := by[k]
		if g == nil {
			g = &group{name: c.Name, holds: c.Holds, skipped: c.Skipped}
			by[k] = g
			order = append(order, g)
		}
		g.details = append(g.details, c.Detail)
	}
	head := fmt.Sprintf("  checks: %d of %d hold", held, held+failed)
	if skipped > 0 {
		head += fmt.Sprintf(", %d skipped", skipped)
	}
	out := []string{head}
	for _, g := range order {
		times := ""
		if len(g.details) > 1 {
			times = fmt.Sprintf(" (on %d arms)", len(g.details))
		}
		switch {
		case g.skipped:
			out = append(out, textcol.WrapLines("    skipped: "+g.name+times+" — "+strings.Join(g.details, " | "), width, 2)...)
		case g.holds:
			out = append(out, textcol.WrapLines("    holds: "+g.name+times, width, 2)...)
		default:
			out = append(out, textcol.WrapLines("    does not hold: "+g.name+times+" — "+strings.Join(g.details, " | "), width, 3)...)
		}
	}
	return out
}
