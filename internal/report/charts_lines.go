package report

import (
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// MaxLines is the most lines one line chart draws: each has a colour and a
// dash pattern of its own (lineStyle). More are split into parts.
const MaxLines = 8

// lineColors are eight colours most readers tell apart on white
// (Tableau's, with near-black for the eighth).
var lineColors = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // orange
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // green
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, // red
	color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
	color.RGBA{0x8c, 0x56, 0x4b, 0xff}, // brown
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, // pink
	color.RGBA{0x33, 0x33, 0x33, 0xff}, // near-black
}

// lineStyle is the colour and dash pattern of line i of a chart: distinct
// for every i below MaxLines, so no two lines of one chart look alike,
// in colour or in grey.
func lineStyle(i int) (color.Color, []vg.Length) {
	return lineColors[i%len(lineColors)], plotutil.Dashes(i)
}

// splitLines partitions the lines of a chart, named by the segments of
// their arms' names within the experiment, into parts of at most
// MaxLines, in order. Names that share leading segments stay together
// where they fit (all thread arms in one part, else thread/chan with
// thread/cond …), and small groups share a part.
func splitLines(names [][]exp.Segment) [][]int {
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	return splitAt(names, idx, 0)
}

func splitAt(names [][]exp.Segment, idx []int, depth int) [][]int {
	if len(idx) <= MaxLines {
		return [][]int{idx}
	}
	var keys []string
	groups := map[string][]int{}
	deepest := 0
	for _, i := range idx {
		segs := names[i]
		deepest = max(deepest, len(segs))
		k := exp.JoinSegments(segs[:min(depth+1, len(segs))])
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	var out [][]int
	if depth >= deepest { // alike to the end: cut in order
		for len(idx) > 0 {
			n := min(MaxLines, len(idx))
			out, idx = append(out, idx[:n]), idx[n:]
		}
		return out
	}
	if len(keys) == 1 {
		return splitAt(names, idx, depth+1)
	}
	var cur []int
	flush := func() {
		if len(cur) > 0 {
			out, cur = append(out, cur), nil
		}
	}
	for _, k := range keys {
		g := groups[k]
		if len(g) > MaxLines {
			flush()
			out = append(out, splitAt(names, g, depth+1)...)
			continue
		}
		if len(cur)+len(g) > MaxLines {
			flush()
		}
		cur = append(cur, g...)
	}
	flush()
	return out
}

// partLabel says which arms a part holds: their common leading segments
// ("thread arms", "thread/futex arms"), else their first segments.
func partLabel(names [][]exp.Segment) string {
	common := names[0]
	var firsts []string
	for _, segs := range names {
		k := 0
		for k < len(common) && k < len(segs) && common[k] == segs[k] {
			k++
		}
		common = common[:k]
		if first := segs[0].String(); !slices.Contains(firsts, first) {
			firsts = append(firsts, first)
		}
	}
	switch {
	case len(names) == 1:
		return exp.JoinSegments(names[0])
	case len(common) > 0:
		return exp.JoinSegments(common) + " arms"
	}
	return strings.Join(firsts, ", ") + " arms"
}

// partTitle adds to a split chart's title which part it is and what it holds.
func partTitle(title string, part, parts int, names [][]exp.Segment) string {
	if parts <= 1 {
		return title
	}
	return fmt.Sprintf("%s\n%s (%d of %d)", title, partLabel(names), part, parts)
}
