package runner

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestProgressLine(t *testing.T) {
	var nilp *Progress
	nilp.Step(1, "x") // no writer: nothing, no panic
	nilp.Done()
	var b bytes.Buffer
	p := NewProgress(&b, 0, 3)
	p.Step(1, "pingpong/a")
	if !strings.Contains(b.String(), "[1/3]") || !strings.Contains(b.String(), "estimating") || !strings.Contains(b.String(), "pingpong/a") {
		t.Errorf("first line: %q", b.String())
	}
	b.Reset()
	p.Step(2, "pingpong/b")
	if !strings.HasPrefix(b.String(), "\r\033[K[2/3]") || !strings.Contains(b.String(), "left") {
		t.Errorf("second line: %q", b.String())
	}
	b.Reset()
	p.Done()
	if b.String() != "\r\033[K" {
		t.Errorf("done: %q", b.String())
	}
}

// On a narrow terminal each progress line is cut to one column short of
// its width, so the terminal never wraps it: a wrapped line's first rows
// stay on the screen after the next carriage return. A long arm name loses
// its middle, keeping the ends that tell arms apart.
func TestProgressLineFitsTheTerminal(t *testing.T) {
	for _, width := range []int{20, 40, 80} {
		var b bytes.Buffer
		p := NewProgress(&b, width, 120)
		name := "interference/starve/goroutine-gosched/hogs=1/gomaxprocs=1/asyncpreemptoff"
		for i := 1; i <= 3; i++ {
			b.Reset()
			p.Step(i, name)
			line, ok := strings.CutPrefix(b.String(), "\r\033[K")
			if !ok || strings.ContainsAny(line, "\r\n") {
				t.Fatalf("width %d: not one line rewritten in place: %q", width, b.String())
			}
			if n := utf8.RuneCountInString(line); n >= width {
				t.Errorf("width %d: %d columns: %q", width, n, line)
			}
			if width >= 80 && (!strings.HasPrefix(name, strings.Split(line, " · ")[1][:10]) || !strings.HasSuffix(line, "asyncpreemptoff")) {
				t.Errorf("width %d: the name lost its ends: %q", width, line)
			}
		}
	}
}
