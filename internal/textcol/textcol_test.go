package textcol

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	rows := [][]string{{"arm", "median", "bar"}, {"goroutine/chan", "303 ns", "█"}, {"thread", "4.2 µs", "████ noisy"}}
	var b bytes.Buffer
	Write(&b, rows, "  ", Middle)
	want := "  arm             median  bar\n  goroutine/chan  303 ns  █\n  thread          4.2 µs  ████ noisy\n"
	if b.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	Write(&b, [][]string{{"a", "bb", ""}, {"ccc", "d", "e"}}, "", nil)
	if want := "a    bb\nccc  d   e\n"; b.String() != want {
		t.Fatalf("left-aligned: got %q want %q", b.String(), want)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		line  string
		width int
		want  []string
	}{
		{"short", 80, []string{"short"}},
		{"no width given stays whole", 0, []string{"no width given stays whole"}},
		{"  one two three four", 12, []string{"  one two", "      three", "      four"}},
		{"a averyveryverylongword b", 8, []string{"a", "    averyveryverylongword", "    b"}},
		{"µs µs µs µs", 8, []string{"µs µs µs", "    µs"}},                           // runes, not bytes
		{"  a      b    c d e", 15, []string{"  a      b    c", "      d e"}},        // aligned columns kept
		{"cost 17.6 µs/op here", 10, []string{"cost", "    17.6 µs/op", "    here"}}, // a figure keeps its unit
	} {
		got := Wrap(tc.line, tc.width)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tc.line, tc.width, got, tc.want)
		}
		for _, l := range got {
			// Only a piece with no place to break may stay wider.
			if tc.width > 0 && len([]rune(l)) > tc.width && !strings.Contains(l, "averyvery") && !strings.Contains(l, "17.6 µs/op") {
				t.Errorf("Wrap(%q, %d): %q is wider than %d", tc.line, tc.width, l, tc.width)
			}
		}
	}
}

// Clip and WrapLines shorten a line only where Wrap could break it, so a
// figure never loses its last digits ("(0.8…" was a cut "(0.80 involuntary)").
func TestClipKeepsWordsWhole(t *testing.T) {
	line := "thread futex: 2.00 switches per round trip on one CPU (0.80 involuntary) vs 1.94 unpinned"
	for _, width := range []int{30, 57, 60, 70} {
		got := Clip(line, width)
		if Width(got) > width || !strings.HasSuffix(got, " …") {
			t.Errorf("Clip(%d) = %q", width, got)
		}
		if !strings.HasPrefix(line, strings.TrimSuffix(got, " …")) {
			t.Errorf("Clip(%d) = %q changed the words", width, got)
		}
		if kept := strings.TrimSuffix(got, " …"); line[len(kept)] != ' ' {
			t.Errorf("Clip(%d) = %q cut a word", width, got)
		}
	}
	if got := Clip("short", 10); got != "short" {
		t.Errorf("Clip of a short line: %q", got)
	}
	if got := Clip("averyveryverylongword", 8); got != "averyve…" {
		t.Errorf("Clip of one long word: %q", got)
	}
	for _, max := range []int{1, 2} {
		got := WrapLines(line, 30, max)
		if len(got) != max {
			t.Fatalf("WrapLines(30, %d) = %q", max, got)
		}
		last := got[max-1]
		if Width(last) > 30 || !strings.HasSuffix(last, " …") {
			t.Errorf("WrapLines(30, %d): last line %q", max, last)
		}
		joined := strings.Join(strings.Fields(strings.TrimSuffix(strings.Join(got, " "), " …")), " ")
		if !strings.HasPrefix(line, joined) || line[len(joined)] != ' ' {
			t.Errorf("WrapLines(30, %d) = %q: not whole words of the line", max, got)
		}
	}
	if got := WrapLines(line, 200, 1); len(got) != 1 || got[0] != line {
		t.Errorf("WrapLines of a line that fits: %q", got)
	}
}

// ElideMiddle keeps both ends of a name and its width exactly.
func TestElideMiddle(t *testing.T) {
	n := "starve/goroutine-gosched/hogs=1/gomaxprocs=1/asyncpreemptoff"
	got := ElideMiddle(n, 30)
	if Width(got) != 30 || !strings.HasPrefix(n, strings.Split(got, "…")[0]) || !strings.HasSuffix(n, strings.Split(got, "…")[1]) {
		t.Errorf("ElideMiddle = %q", got)
	}
	if ElideMiddle("short", 30) != "short" {
		t.Error("a name that fits changed")
	}
}

// A LineWrapper wraps each line written through it, however the writes
// split the lines, and passes a last line without a newline on at Flush.
func TestLineWrapper(t *testing.T) {
	var b bytes.Buffer
	w := NewLineWrapper(&b, 20)
	for _, piece := range []string{"price: 202k switches/s × 2.3", "3 µs per switch ≈ 47% of a core\nshort\n", "last words without a newline"} {
		if _, err := w.Write([]byte(piece)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "price: 202k\n    switches/s ×\n    2.33 µs per\n    switch ≈ 47% of\n    a core\nshort\nlast words without a\n    newline"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	p := NewLineWrapper(&b, 0)
	p.Write([]byte("a line far longer than any width, passed on as it is\n"))
	if b.String() != "a line far longer than any width, passed on as it is\n" {
		t.Errorf("width 0 changed the line: %q", b.String())
	}
}

// Fit gives names the room the other columns leave; a longer name, and a
// heading, sit on lines of their own, and no line is wider than width.
func TestFit(t *testing.T) {
	rows := [][]string{{"arm", "median"}, {"pingpong"}, {"  thread/futex", "4.2 µs"}, {"  a-much-longer-arm-name", "303 ns"}}
	var b bytes.Buffer
	Fit(&b, rows, 22, Middle)
	want := "arm             median\npingpong\n  thread/futex  4.2 µs\n  a-much-longer-arm-name\n                303 ns\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if len([]rune(l)) > 22 && !strings.Contains(l, "much-longer") {
			t.Errorf("%q is wider than 22", l)
		}
	}
	b.Reset()
	Fit(&b, rows, 0, Middle) // not a terminal: every name in its row
	if !strings.Contains(b.String(), "  a-much-longer-arm-name  303 ns\n") || !strings.Contains(b.String(), "\npingpong\n") {
		t.Errorf("width 0:\n%s", b.String())
	}
}
