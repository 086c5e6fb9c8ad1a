package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/ctxlab/ctxlab/internal/textcol"
)

// Progress draws one status line (step i of n, elapsed, an estimate of
// what is left) that each step (an arm, or a run of diagnose --vary)
// rewrites in place: carriage return, erase the line, then the new text
// cut to the terminal's width, so the terminal never wraps it (a wrapped
// line is left behind by the next \r). Done erases it. It is only drawn
// when stderr is a terminal, so logs stay clean.
type Progress struct {
	w     io.Writer
	width int // the terminal's columns; ≤ 0: not known, nothing is cut
	start time.Time
	total int
}

// NewProgress is the status line for total steps on w, a terminal
// width columns wide; nil (which draws nothing) when w is nil.
func NewProgress(w io.Writer, width, total int) *Progress {
	if w == nil {
		return nil
	}
	return &Progress{w: w, width: width, start: time.Now(), total: total}
}

// Step shows that step i (1-based) of the total, named name, is starting.
func (p *Progress) Step(i int, name string) {
	if p == nil {
		return
	}
	el := time.Since(p.start)
	left := "estimating"
	if i > 1 {
		per := el / time.Duration(i-1)
		left = "~" + (per * time.Duration(p.total-i+1)).Round(time.Second).String() + " left"
	}
	head := fmt.Sprintf("[%d/%d] %s elapsed, %s · ", i, p.total, el.Round(time.Second), left)
	if p.width > 0 {
		// One column short of the width: a line that fills the last
		// column makes some terminals wrap before the next \r.
		room := p.width - 1 - textcol.Width(head)
		if room < 8 {
			head, room = textcol.Clip(head, p.width-1), 0
		}
		name = textcol.ElideMiddle(name, room)
		if room == 0 {
			name = ""
		}
	}
	fmt.Fprint(p.w, "\r\033[K"+head+name)
}

// Done erases the line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}
