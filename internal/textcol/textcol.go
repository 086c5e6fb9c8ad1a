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
