// Package textcol lines rows of text up in columns for terminal tables.
// Every table ctxlab prints (results, comparisons, history, budget) goes
// through Write, so they all align the same way.
package textcol

import (
	"fmt"
	"io"
	"strings"
)

// Write prints rows after indent, with columns two spaces apart, each as
// wide as its widest cell in runes; trailing spaces are trimmed. Cells of
// a column for which right(col, ncols) is true are right-aligned (right may
// be nil: all left-aligned).
func Write(w io.Writer, rows [][]string, indent string, right func(col, ncols int) bool) {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			if l := len([]rune(c)); l > width[i] {
				width[i] = l
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if right != nil && right(i, len(r)) {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			b.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// Middle right-aligns every column but the first (names) and the last
// (bars, notes): the numbers in between.
func Middle(col, ncols int) bool { return col > 0 && col < ncols-1 }

// Wrap breaks a line longer than width runes at spaces, so a terminal
// does not cut it mid-word; continuation lines keep the line's own indent
// plus four spaces. Runs of spaces inside the line (aligned columns) are
// kept, a number stays with the unit after it ("17.6 µs"), and a word
// longer than the room stays whole. width ≤ 0 leaves the line as it is.
func Wrap(line string, width int) []string {
	r := []rune(line)
	if width <= 0 || len(r) <= width {
		return []string{line}
	}
	n := 0
	for n < len(r) && r[n] == ' ' {
		n++
	}
	cont := []rune(strings.Repeat(" ", n+4))
	var out []string
	for len(r) > width {
		cut := -1
		for i := width; i > n; i-- { // the last good space within the room
			if breakable(r, i) {
				cut = i
				break
			}
		}
		for i := width + 1; cut < 0 && i < len(r); i++ { // else the first after it
			if breakable(r, i) {
				cut = i
			}
		}
		if cut < 0 {
			break
		}
		out = append(out, strings.TrimRight(string(r[:cut]), " "))
		rest := []rune(strings.TrimLeft(string(r[cut:]), " "))
		r = append(append([]rune{}, cont...), rest...)
		n = len(cont)
	}
	return append(out, string(r))
}

// breakable: a line may break at r[i] when it is a space that does not
// follow a digit (a figure keeps its unit).
func breakable(r []rune, i int) bool {
	return r[i] == ' ' && i > 0 && (r[i-1] < '0' || r[i-1] > '9')
}

// Width is how many columns s takes on a terminal: one per rune (ctxlab
// prints no wide characters).
func Width(s string) int { return len([]rune(s)) }

// Clip shortens line to at most width columns at a place Wrap could
// break it, ending in " …", so no word or figure is cut; a line whose
// first word is already wider keeps that word, cut at width with "…".
// width ≤ 0 leaves the line as it is.
func Clip(line string, width int) string {
	r := []rune(line)
	if width <= 0 || len(r) <= width {
		return line
	}
	for i := width - 2; i > 0; i-- {
		if breakable(r, i) {
			if head := strings.TrimRight(string(r[:i]), " "); strings.TrimSpace(head) != "" {
				return head + " …"
			}
		}
	}
	return string(r[:width-1]) + "…"
}

// ElideMiddle shortens s to width columns by putting "…" in place of its
// middle, keeping both ends (an arm name's first and last parts say the
// most); a width below 3 is taken as 3.
func ElideMiddle(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	if width < 3 {
		width = 3
	}
	head := (width - 1) / 2
	tail := width - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// WrapAll wraps every line (Wrap) and returns the lines as a terminal
// width columns wide shows them.
func WrapAll(lines []string, width int) []string {
	var out []string
	for _, l := range lines {
		out = append(out, Wrap(l, width)...)
	}
	return out
}

// WrapLines is Wrap kept to at most max lines: the last one kept ends in
// " …" at a place Wrap could break it, so no word or figure is cut.
func WrapLines(line string, width, max int) []string {
	out := Wrap(line, width)
	if width <= 0 || max <= 0 || len(out) <= max {
		return out
	}
	out = out[:max]
	last := []rune(out[max-1])
	cut := -1
	for i := len(last) - 1; i > 0; i-- {
		if breakable(last, i) && len(last[:i])+2 <= width && strings.TrimSpace(string(last[:i])) != "" {
			cut = i
			break
		}
	}
	if cut < 0 {
		out[max-1] = Clip(string(last), width)
	} else {
		out[max-1] = strings.TrimRight(string(last[:cut]), " ") + " …"
	}
	return out
}

// LineWrapper passes what is written through it on with every line
// wrapped (Wrap) at its width, so prose that another package prints (a
// price, a reading) reaches a terminal with no word cut. A width ≤ 0
// passes everything on as it is.
type LineWrapper struct {
	w     io.Writer
	width int
	buf   []byte
}

// NewLineWrapper wraps what is written to w at width columns.
func NewLineWrapper(w io.Writer, width int) *LineWrapper {
	return &LineWrapper{w: w, width: width}
}

// Write wraps and passes on every complete line in p, keeping a partial
// last line until the next Write or Flush.
func (l *LineWrapper) Write(p []byte) (int, error) {
	if l.width <= 0 {
		return l.w.Write(p)
	}
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.buf[:i])
		l.buf = l.buf[i+1:]
		for _, part := range Wrap(line, l.width) {
			if _, err := io.WriteString(l.w, part+"\n"); err != nil {
				return len(p), err
			}
		}
	}
}

// Flush passes on a last line that had no newline, wrapped.
func (l *LineWrapper) Flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	parts := Wrap(string(l.buf), l.width)
	l.buf = nil
	_, err := io.WriteString(l.w, strings.Join(parts, "\n"))
	return err
}

// Fit is Write for a terminal width columns wide: the first column (the
// names) gets the room the others leave, and a name longer than that sits
// on a line of its own above the rest of its row, so no line is wider
// than width unless the other columns alone are. A row of one cell is a
// heading: printed on its own line, it does not widen the first column.
// width ≤ 0 lines the rows up as Write does, headings included.
func Fit(w io.Writer, rows [][]string, width int, right func(col, ncols int) bool) {
	others := map[int]int{}
	for _, r := range rows {
		if len(r) < 2 {
			continue
		}
		for i, c := range r[1:] {
			others[i] = max(others[i], len([]rune(c)))
		}
	}
	room := -1 // no limit
	if width > 0 {
		room = width
		for _, wd := range others {
			room -= wd + 2
		}
		room = max(room, 0)
	}
	var table [][]string
	above := map[int][]string{} // lines printed before table row i
	var pending []string
	for _, r := range rows {
		if len(r) < 2 {
			pending = append(pending, strings.Join(r, ""))
			continue
		}
		if room >= 0 && len([]rune(r[0])) > room {
			pending = append(pending, r[0])
			r = append([]string{""}, r[1:]...)
		}
		above[len(table)] = pending
		pending = nil
		table = append(table, r)
	}
	var b strings.Builder
	Write(&b, table, "", right)
	for i, l := range strings.SplitAfter(b.String(), "\n") {
		for _, p := range above[i] {
			fmt.Fprintln(w, p)
		}
		io.WriteString(w, l)
	}
	for _, p := range pending {
		fmt.Fprintln(w, p)
	}
}
