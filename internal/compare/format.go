package compare

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// Formats are the output formats Write accepts for a comparison.
var Formats = []string{"table", "json", "csv", "markdown"}

// Write renders c in format. width is the terminal's width in columns
// for the table (≤ 0: not a terminal, every column and no wrapping).
func Write(w io.Writer, c *Comparison, format string, width int) error {
	if format != "json" {
		c = termsafe.Strings(c) // arm names and hosts may come from imported files
	}
	switch format {
	case "table", "":
		return Table(w, c, width)
	case "json":
		enc := json.NewEncoder(termsafe.JSON(w))
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	case "csv":
		return CSV(w, c)
	case "markdown":
		return Markdown(w, c)
	}
	return fmt.Errorf("unknown format %q (have %s)", format, strings.Join(Formats, ", "))
}

func ratio(v float64) string {
	if v == 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f×", v)
}

// ratioInterval is RatioLo–RatioHi with two decimals, or more on an end
// that would otherwise print as 1.00 in an interval that leaves out 1.
func ratioInterval(r Row) string {
	if r.RatioLo == 0 && r.RatioHi == 0 {
		return "?"
	}
	end := func(v float64) string {
		d := 2
		for ; d < 6 && (r.RatioLo > 1 || r.RatioHi < 1) && fmt.Sprintf("%.*f", d, v) == fmt.Sprintf("%.*f", d, 1.0); d++ {
		}
		return fmt.Sprintf("%.*f", d, v)
	}
	return end(r.RatioLo) + "–" + end(r.RatioHi)
}

func spread(s Side, unit string) string { return result.FormatRange(s.Min, s.Max, s.Median, unit) }

// test is what decided the row: the U test's p, whether the ranges are
// apart, or too few repetitions.
func test(r Row) string {
	switch r.Method {
	case MethodUTest:
		return fmt.Sprintf("p=%.3f", r.P)
	case MethodRanges:
		if r.Significant {
			return "apart"
		}
		return "overlap"
	}
	return fmt.Sprintf("n<%d", MinRangeReps)
}

func reps(r Row) string {
	if r.A.N == r.B.N {
		return strconv.Itoa(r.A.N)
	}
	return fmt.Sprintf("%d+%d", r.A.N, r.B.N)
}

func noisy(r Row) string {
	var s []string
	if r.A.Noisy {
		s = append(s, "A")
	}
	if r.B.Noisy {
		s = append(s, "B")
	}
	return strings.Join(s, " ")
}

func header(c *Comparison) []string {
	return []string{fmt.Sprintf("A: %s (%s, %s)", c.RunA.ID, c.RunA.Host, c.RunA.Time),
		fmt.Sprintf("B: %s (%s, %s)", c.RunB.ID, c.RunB.Host, c.RunB.Time)}
}

// Lead is what a reader needs before the rows, one line each and said
// once: that arms with too few repetitions for a confidence interval are
// decided by their ranges, and what that rule's chance of a false alarm
// is; and which side was noisy, and how often.
func Lead(c *Comparison) []string {
	var out []string
	pairs := map[[2]int]int{}
	var few, tooFew int
	for _, r := range c.Rows {
		switch r.Method {
		case MethodRanges:
			few++
			pairs[[2]int{r.A.N, r.B.N}]++
		case MethodTooFew:
			tooFew++
		}
	}
	if few > 0 {
		var top [2]int
		for p, n := range pairs {
			if n > pairs[top] || (n == pairs[top] && (p[0] < top[0] || (p[0] == top[0] && p[1] < top[1]))) {
				top = p
			}
		}
		at := fmt.Sprintf("%d vs %d", top[0], top[1])
		if len(pairs) > 1 {
			at = "mostly " + at
		}
		chance := ApartChance(top[0], top[1])
		out = append(out, fmt.Sprintf("few repetitions: %d of %d arms have fewer than the %d a side that a 95%% confidence interval needs (%s), "+
			"so they are decided by their ranges: a difference only where A's and B's min–max ranges do not overlap, "+
			"which would happen by chance 1 time in %.0f at %d vs %d if nothing changed between the runs, the machine's state included; --reps %d or more gives benchstat's confidence intervals and U test",
			few, len(c.Rows), CIReps(), at, 1/chance, top[0], top[1], CIReps()))
	}
	if tooFew > 0 {
		out = append(out, fmt.Sprintf("too few repetitions: %d arm(s) have fewer than %d on a side and are not decided (delta ?)", tooFew, MinRangeReps))
	}
	var na, nb int
	for _, r := range c.Rows {
		if r.A.Noisy {
			na++
		}
		if r.B.Noisy {
			nb++
		}
	}
	if na+nb > 0 {
		out = append(out, fmt.Sprintf("noisy: A in %d of %d arms, B in %d (load, steal or spread while the arm ran; ctxlab show RUN says why): a difference on a noisy row may be the machine's, not the code's",
			na, len(c.Rows), nb))
	}
	return out
}

// column is one figure column of the table; drop > 0 columns are left out,
// lowest first, when the terminal is too narrow for them.
type column struct {
	head  string
	cell  func(r Row, unit valueFormat) string
	geo   func(g Geomean, unit valueFormat) string
	drop  int
	right bool
}

// valueFormat writes a figure in its unit.
type valueFormat func(v float64) string

var columns = []column{
	{head: "A", cell: func(r Row, f valueFormat) string { return f(r.A.Median) }, geo: func(g Geomean, f valueFormat) string { return f(g.A) }, right: true},
	{head: "A range", cell: func(r Row, _ valueFormat) string { return spread(r.A, r.Unit) }, drop: 2},
	{head: "B", cell: func(r Row, f valueFormat) string { return f(r.B.Median) }, geo: func(g Geomean, f valueFormat) string { return f(g.B) }, right: true},
	{head: "B range", cell: func(r Row, _ valueFormat) string { return spread(r.B, r.Unit) }, drop: 2},
	{head: "B/A", cell: func(r Row, _ valueFormat) string { return ratio(r.Ratio) }, geo: func(g Geomean, _ valueFormat) string { return ratio(g.Ratio) }, right: true},
	{head: "interval", cell: func(r Row, _ valueFormat) string { return ratioInterval(r) }, drop: 3, right: true},
	{head: "delta", cell: func(r Row, _ valueFormat) string { return r.Delta }, right: true},
	{head: "test", cell: func(r Row, _ valueFormat) string { return test(r) }, drop: 1},
	{head: "n", cell: func(r Row, _ valueFormat) string { return reps(r) }, drop: 1, right: true},
	{head: "noisy", cell: func(r Row, _ valueFormat) string { return noisy(r) }},
}

// maxDrop is the highest drop level of columns.
const maxDrop = 3

// minNameWidth is the room for arm names below which the table drops
// optional columns rather than put most names on a line of their own.
const minNameWidth = 30

// full writes v in unit as everywhere else (FormatValue).
func full(unit string) valueFormat {
	return func(v float64) string { return result.FormatValue(v, unit) }
}

// short writes a time per op-like unit as a plain time ("38.4 ns" for
// ns/element) where a heading names the unit once.
func short(unit string) valueFormat {
	if strings.HasPrefix(unit, "ns/") {
		return func(v float64) string { return result.FormatNs(v) }
	}
	return full(unit)
}

// Table prints the comparison fitted to width columns (≤ 0: every column,
// whole arm names, no wrapping): the runs, the lead lines, then the arms —
// A's and B's medians and ranges, the ratio B/A with its interval, the
// delta ("~" when no difference is shown) and what decided it — the
// geomeans, and a legend of the rule for the columns shown. An arm name
// too long for the room sits on a line of its own above its figures
// (textcol.Fit); no figure is cut.
func Table(w io.Writer, c *Comparison, width int) error {
	out := func(s string) {
		for _, l := range textcol.Wrap(s, width) {
			fmt.Fprintln(w, l)
		}
	}
	for _, l := range header(c) {
		out(l)
	}
	for _, l := range Lead(c) {
		out(l)
	}
	lines := tableLines(c, width > 0)
	cols := fitColumns(lines, width)
	rows := [][]string{append([]string{"arm"}, headsOf(cols)...)}
	for _, l := range lines {
		if l.heading != "" {
			rows = append(rows, []string{l.heading})
		}
		rows = append(rows, append([]string{l.name}, l.cells(cols)...))
	}
	textcol.Fit(w, rows, width, func(col, n int) bool { return col > 0 && cols[col-1].right })
	tail(w, c, "", out)
	for _, l := range legend(cols) {
		out(l)
	}
	return nil
}

// tableLine is one line of the table: an arm's, or a geomean's.
type tableLine struct {
	heading string // printed on its own line first, when set
	name    string
	cells   func(cols []column) []string
}

// tableLines are the table's lines, one per arm, then the geomeans. With
// group (a terminal) arms sit under their experiment's heading without
// its name, and a heading names a unit other than a time per op once (the
// arm's figures are then plain times); without, every line has the whole
// arm name, for grep.
func tableLines(c *Comparison, group bool) []tableLine {
	expOf := func(r Row) string {
		if r.Experiment != "" {
			return r.Experiment
		}
		return exp.ExperimentOf(r.Arm)
	}
	units := map[string]map[string]bool{}
	for _, r := range c.Rows {
		e := expOf(r)
		if units[e] == nil {
			units[e] = map[string]bool{}
		}
		if strings.HasPrefix(r.Unit, "ns/") {
			units[e][r.Unit] = true
		}
	}
	var lines []tableLine
	last := ""
	for _, r := range c.Rows {
		e := expOf(r)
		f := full(r.Unit)
		if group && len(units[e]) == 1 {
			f = short(r.Unit)
		}
		l := tableLine{name: r.Arm}
		if rest := exp.ShortNameIn(e, r.Arm); rest != r.Arm && group {
			l.name = "  " + rest
		}
		if e != last && group {
			last, l.heading = e, e
			if len(units[e]) == 1 {
				for u := range units[e] {
					if u != "ns/op" {
						l.heading += " (" + u + ")"
					}
				}
			}
		}
		l.cells = func(cols []column) []string {
			var cs []string
			for _, col := range cols {
				cs = append(cs, col.cell(r, f))
			}
			return cs
		}
		lines = append(lines, l)
	}
	for _, g := range c.Geomeans {
		lines = append(lines, geomeanLine(g, group))
	}
	return lines
}

// geomeanLine is the table's line for one geomean.
func geomeanLine(g Geomean, group bool) tableLine {
	f := full(g.Unit)
	if group {
		f = short(g.Unit)
	}
	return tableLine{name: fmt.Sprintf("geomean (%s, %d arms)", g.Unit, g.Arms), cells: func(cols []column) []string {
		var cs []string
		for _, col := range cols {
			if col.geo != nil {
				cs = append(cs, col.geo(g, f))
			} else {
				cs = append(cs, "")
			}
		}
		return cs
	}}
}

// fitColumns is the most columns that leave the names their room in
// width columns (≤ 0: every column).
func fitColumns(lines []tableLine, width int) []column {
	longest := 0
	for _, l := range lines {
		longest = max(longest, len([]rune(l.name)))
	}
	var cols []column
	for drop := 0; drop <= maxDrop; drop++ {
		cols = nil
		for _, col := range columns {
			if col.drop == 0 || col.drop > drop {
				cols = append(cols, col)
			}
		}
		wd := make([]int, len(cols))
		for i, col := range cols {
			wd[i] = len([]rune(col.head))
		}
		for _, l := range lines {
			for i, cell := range l.cells(cols) {
				wd[i] = max(wd[i], len([]rune(cell)))
			}
		}
		figures := 0
		for _, x := range wd {
			figures += 2 + x
		}
		if width <= 0 || width-figures >= min(longest, minNameWidth) {
			break
		}
	}
	return cols
}

func headsOf(cols []column) []string {
	var hs []string
	for _, c := range cols {
		hs = append(hs, c.head)
	}
	return hs
}

// legend states the rule behind the columns shown, and only those.
func legend(cols []column) []string {
	has := map[string]bool{}
	for _, c := range cols {
		has[c.head] = true
	}
	ci := CIReps()
	first := "A, B: the medians of the repetitions"
	if has["A range"] {
		first += "; range: min–max, in the median's unit"
	}
	first += ". B/A: B's median ÷ A's"
	if has["interval"] {
		first += fmt.Sprintf("; interval: from the medians' 95%% confidence intervals where both sides have %d or more repetitions, else B's range ÷ A's (B's min ÷ A's max to B's max ÷ A's min)", ci)
	}
	if has["n"] {
		first += "; n: repetitions (A+B where they differ)"
	}
	second := fmt.Sprintf("delta: the change of the median; ~ where no difference is shown; ? where a side has fewer than %d repetitions. With %d or more a side, benchstat's Mann-Whitney U test must give p < 0.05", MinRangeReps, ci)
	if has["test"] {
		second += " (test: p=…)"
	}
	second += "; with fewer, A's and B's min–max ranges must not overlap"
	switch {
	case has["test"]:
		second += " (test: apart or overlap)"
	case !has["A range"]:
		second += " (a wider terminal or --format markdown shows them)"
	}
	if has["interval"] {
		second += ", and then the interval leaves out 1.00×"
	}
	second += ". noisy: the side whose run marked the arm noisy."
	return []string{first + ".", second}
}

func tail(w io.Writer, c *Comparison, bullet string, out func(string)) {
	if out == nil {
		out = func(s string) { fmt.Fprintln(w, s) }
	}
	if len(c.OnlyA) > 0 {
		out(fmt.Sprintf("%sonly in A: %s", bullet, strings.Join(c.OnlyA, ", ")))
	}
	if len(c.OnlyB) > 0 {
		out(fmt.Sprintf("%sonly in B: %s", bullet, strings.Join(c.OnlyB, ", ")))
	}
	if len(c.Skipped) > 0 {
		out(fmt.Sprintf("%sno figures on one side: %s", bullet, strings.Join(c.Skipped, ", ")))
	}
	for _, p := range c.Pairs {
		out(fmt.Sprintf("%sside by side in each run: %s", bullet, p))
	}
	for _, wn := range c.Warnings {
		out(fmt.Sprintf("%snote: %s", bullet, wn))
	}
}

// CSV writes one row per common arm and one per geomean; unscaled numbers.
func CSV(w io.Writer, c *Comparison) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"arm", "unit", "a_median", "a_ci_lo", "a_ci_hi", "a_n", "b_median", "b_ci_lo", "b_ci_hi", "b_n",
		"ratio", "ratio_lo", "ratio_hi", "p", "significant", "delta", "method", "a_min", "a_max", "a_noisy", "b_min", "b_max", "b_noisy"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range c.Rows {
		cw.Write([]string{r.Arm, r.Unit, f(r.A.Median), f(r.A.Lo), f(r.A.Hi), strconv.Itoa(r.A.N),
			f(r.B.Median), f(r.B.Lo), f(r.B.Hi), strconv.Itoa(r.B.N), f(r.Ratio), f(r.RatioLo), f(r.RatioHi),
			f(r.P), strconv.FormatBool(r.Significant), r.Delta, r.Method,
			f(r.A.Min), f(r.A.Max), strconv.FormatBool(r.A.Noisy), f(r.B.Min), f(r.B.Max), strconv.FormatBool(r.B.Noisy)})
	}
	blank := make([]string, 7)
	for _, g := range c.Geomeans {
		cw.Write(append([]string{"geomean", g.Unit, f(g.A), "", "", strconv.Itoa(g.Arms), f(g.B), "", "", strconv.Itoa(g.Arms),
			f(g.Ratio), "", "", "", "", ""}, blank...))
	}
	for _, a := range c.OnlyA {
		cw.Write(append([]string{a, "", "", "", "", "", "", "", "", "", "", "", "", "", "", "only in A"}, blank...))
	}
	for _, b := range c.OnlyB {
		cw.Write(append([]string{b, "", "", "", "", "", "", "", "", "", "", "", "", "", "", "only in B"}, blank...))
	}
	cw.Flush()
	return cw.Error()
}

// Markdown writes the comparison as a markdown table, every column, with
// the lead lines above it and the legend below.
func Markdown(w io.Writer, c *Comparison) error {
	fmt.Fprintf(w, "A: `%s` (%s, %s) · B: `%s` (%s, %s)\n\n", c.RunA.ID, c.RunA.Host, c.RunA.Time, c.RunB.ID, c.RunB.Host, c.RunB.Time)
	for _, l := range Lead(c) {
		fmt.Fprintf(w, "- %s\n", l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| arm | "+strings.Join(headsOf(columns), " | ")+" |")
	var align []string
	for _, col := range columns {
		if col.right {
			align = append(align, "---:")
		} else {
			align = append(align, "---")
		}
	}
	fmt.Fprintln(w, "|---|"+strings.Join(align, "|")+"|")
	for _, r := range c.Rows {
		var cs []string
		for _, col := range columns {
			cs = append(cs, strings.ReplaceAll(col.cell(r, full(r.Unit)), "|", `\|`))
		}
		fmt.Fprintf(w, "| %s | %s |\n", termsafe.MarkdownCell(r.Arm), strings.Join(cs, " | "))
	}
	for _, g := range c.Geomeans {
		var cs []string
		for _, col := range columns {
			if col.geo != nil {
				cs = append(cs, col.geo(g, full(g.Unit)))
			} else {
				cs = append(cs, "")
			}
		}
		fmt.Fprintf(w, "| **geomean** (%s, %d arms) | %s |\n", termsafe.MarkdownCell(g.Unit), g.Arms, strings.Join(cs, " | "))
	}
	fmt.Fprintln(w)
	tail(w, c, "- ", nil)
	for _, l := range legend(columns) {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	return nil
}
