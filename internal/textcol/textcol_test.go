package textcol

import (
	"bytes"
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
