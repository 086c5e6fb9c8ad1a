package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/ctxlab/ctxlab/internal/textcol"
)

// progress draws one status line (arm i of n, elapsed, an estimate of
// what is left) that each arm rewrites in place: carriage return, erase
// the line, then the new text cut to the terminal's width, so the terminal
// never wraps it (a wrapped line is left behind by the next \r). done
// erases it. cfg.Progress is only set when stderr is a terminal, so logs
// stay clean.
type progress struct {
	w     io.Writer
	width int // the terminal's columns; ≤ 0: not known, nothing is cut
	start time.Time
	total int
}

func newProgress(w io.Writer, width, total int) *progress {
	if w == nil {
		return nil
	}
	return &progress{w: w, width: width, start: time.Now(), total: total}
}

// arm shows that arm i (1-based) is starting.
func (p *progress) arm(i int, name string) {
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

// done erases the line.
func (p *progress) done() {
	if p == nil {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}
