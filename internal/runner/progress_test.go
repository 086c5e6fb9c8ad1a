package runner

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressLine(t *testing.T) {
	var nilp *progress
	nilp.arm(1, "x") // no writer: nothing, no panic
	nilp.done()
	var b bytes.Buffer
	p := newProgress(&b, 3)
	p.arm(1, "pingpong/a")
	if !strings.Contains(b.String(), "[1/3]") || !strings.Contains(b.String(), "estimating") || !strings.Contains(b.String(), "pingpong/a") {
		t.Errorf("first line: %q", b.String())
	}
	b.Reset()
	p.arm(2, "pingpong/b")
	if !strings.HasPrefix(b.String(), "\r\033[K[2/3]") || !strings.Contains(b.String(), "left") {
		t.Errorf("second line: %q", b.String())
	}
	b.Reset()
	p.done()
	if b.String() != "\r\033[K" {
		t.Errorf("done: %q", b.String())
	}
}
