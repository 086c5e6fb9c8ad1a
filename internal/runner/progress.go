package runner

import (
	"fmt"
	"io"
	"time"
)

// progress draws one self-overwriting status line (arm i of n, elapsed,
// an estimate of what is left) on a terminal; cfg.Progress is only set
// when stderr is one, so logs stay clean.
type progress struct {
	w     io.Writer
	start time.Time
	total int
}

func newProgress(w io.Writer, total int) *progress {
	if w == nil {
		return nil
	}
	return &progress{w: w, start: time.Now(), total: total}
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
	fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s elapsed, %s · %s", i, p.total, el.Round(time.Second), left, name)
}

// done clears the line.
func (p *progress) done() {
	if p == nil {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
}
