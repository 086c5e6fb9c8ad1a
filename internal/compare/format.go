package compare

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// Formats are the output formats Write accepts for a comparison.
var Formats = []string{"table", "json", "csv", "markdown"}

// Write renders c in format.
func Write(w io.Writer, c *Comparison, format string) error {
	if format != "json" {
		c = termsafe.Strings(c) // arm names and hosts may come from imported files
	}
	switch format {
	case "table", "":
		return Table(w, c)
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

func ci(s Side, unit string) string {
	if s.Lo == 0 && s.Hi == 0 {
		return "±∞"
	}
	if s.Median == 0 {
		return "?"
	}
	d := s.Hi/s.Median - 1
	if l := 1 - s.Lo/s.Median; l > d {
		d = l
	}
	return fmt.Sprintf("±%.0f%%", 100*d)
}

func ratio(v float64) string {
	if v == 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f×", v)
}

func ratioCI(r Row) string {
	if r.RatioLo == 0 && r.RatioHi == 0 {
		return "?"
	}
	return fmt.Sprintf("%.2f–%.2f", r.RatioLo, r.RatioHi)
}

func pn(r Row) string {
	if r.A.N == r.B.N {
		return fmt.Sprintf("p=%.3f n=%d", r.P, r.A.N)
	}
	return fmt.Sprintf("p=%.3f n=%d+%d", r.P, r.A.N, r.B.N)
}

func header(c *Comparison) string {
	return fmt.Sprintf("A: %s (%s, %s)\nB: %s (%s, %s)", c.RunA.ID, c.RunA.Host, c.RunA.Time, c.RunB.ID, c.RunB.Host, c.RunB.Time)
}

// Table prints aligned columns: A's median ± CI, B's, the ratio B/A with
// its interval, the delta ("~" when not significant) and the test.
func Table(w io.Writer, c *Comparison) error {
	fmt.Fprintln(w, header(c))
	rows := [][]string{{"arm", "A", "", "B", "", "B/A", "95% CI", "delta", "test"}}
	for _, r := range c.Rows {
		rows = append(rows, []string{r.Arm, result.FormatValue(r.A.Median, r.Unit), ci(r.A, r.Unit),
			result.FormatValue(r.B.Median, r.Unit), ci(r.B, r.Unit), ratio(r.Ratio), ratioCI(r), r.Delta, pn(r)})
	}
	for _, g := range c.Geomeans {
		rows = append(rows, []string{"geomean (" + g.Unit + ", " + strconv.Itoa(g.Arms) + " arms)",
			result.FormatValue(g.A, g.Unit), "", result.FormatValue(g.B, g.Unit), "", ratio(g.Ratio), "", "", ""})
	}
	textcol.Write(w, rows, "", textcol.Middle)
	tail(w, c, "")
	return nil
}

func tail(w io.Writer, c *Comparison, bullet string) {
	if len(c.OnlyA) > 0 {
		fmt.Fprintf(w, "%sonly in A: %s\n", bullet, strings.Join(c.OnlyA, ", "))
	}
	if len(c.OnlyB) > 0 {
		fmt.Fprintf(w, "%sonly in B: %s\n", bullet, strings.Join(c.OnlyB, ", "))
	}
	if len(c.Skipped) > 0 {
		fmt.Fprintf(w, "%sno figures on one side: %s\n", bullet, strings.Join(c.Skipped, ", "))
	}
	for _, wn := range c.Warnings {
		fmt.Fprintf(w, "%snote: %s\n", bullet, wn)
	}
}

// CSV writes one row per common arm and one per geomean; unscaled numbers.
func CSV(w io.Writer, c *Comparison) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"arm", "unit", "a_median", "a_ci_lo", "a_ci_hi", "a_n", "b_median", "b_ci_lo", "b_ci_hi", "b_n",
		"ratio", "ratio_lo", "ratio_hi", "p", "significant", "delta"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, r := range c.Rows {
		cw.Write([]string{r.Arm, r.Unit, f(r.A.Median), f(r.A.Lo), f(r.A.Hi), strconv.Itoa(r.A.N),
			f(r.B.Median), f(r.B.Lo), f(r.B.Hi), strconv.Itoa(r.B.N), f(r.Ratio), f(r.RatioLo), f(r.RatioHi),
			f(r.P), strconv.FormatBool(r.Significant), r.Delta})
	}
	for _, g := range c.Geomeans {
		cw.Write([]string{"geomean", g.Unit, f(g.A), "", "", strconv.Itoa(g.Arms), f(g.B), "", "", strconv.Itoa(g.Arms),
			f(g.Ratio), "", "", "", "", ""})
	}
	for _, a := range c.OnlyA {
		cw.Write([]string{a, "", "", "", "", "", "", "", "", "", "", "", "", "", "", "only in A"})
	}
	for _, b := range c.OnlyB {
		cw.Write([]string{b, "", "", "", "", "", "", "", "", "", "", "", "", "", "", "only in B"})
	}
	cw.Flush()
	return cw.Error()
}

// Markdown writes the comparison as a markdown table.
func Markdown(w io.Writer, c *Comparison) error {
	fmt.Fprintf(w, "A: `%s` (%s, %s) · B: `%s` (%s, %s)\n\n", c.RunA.ID, c.RunA.Host, c.RunA.Time, c.RunB.ID, c.RunB.Host, c.RunB.Time)
	fmt.Fprintln(w, "| arm | A | B | B/A | 95% CI | delta | test |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|")
	for _, r := range c.Rows {
		fmt.Fprintf(w, "| %s | %s %s | %s %s | %s | %s | %s | %s |\n", termsafe.MarkdownCell(r.Arm),
			result.FormatValue(r.A.Median, r.Unit), ci(r.A, r.Unit), result.FormatValue(r.B.Median, r.Unit), ci(r.B, r.Unit),
			ratio(r.Ratio), ratioCI(r), r.Delta, pn(r))
	}
	for _, g := range c.Geomeans {
		fmt.Fprintf(w, "| **geomean** (%s, %d arms) | %s | %s | %s | | | |\n", termsafe.MarkdownCell(g.Unit), g.Arms,
			result.FormatValue(g.A, g.Unit), result.FormatValue(g.B, g.Unit), ratio(g.Ratio))
	}
	fmt.Fprintln(w)
	tail(w, c, "- ")
	return nil
}
