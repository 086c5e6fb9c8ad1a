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
