package runner

import (
	"context"
	"errors"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

// abandonAfter is how long a closed arm gets to return what it has before
// the runner gives up on it (a worker stuck where Close cannot reach).
var abandonAfter = 5 * time.Second

var errAbandoned = errors.New("a worker did not stop and was abandoned")

// await is the one way the runner waits for work that may hang: an arm's
// set-up, its measuring loop, a self-timed measurement, a gauge's reading.
// work runs in its own goroutine, and await returns its answer when it
// comes while ctx lasts. When ctx ends first, stop (if not nil) is called
// once to unblock the work (a bench's Close wakes a starved partner, kills
// a hung child) and the work gets grace to answer. If it has not answered
// by then it is abandoned: await returns at once with abandoned set, and
// when the work does answer, if ever, late (if not nil) gets that answer
// in the work's own goroutine, to close what it still holds.
func await[T any](ctx context.Context, work func() T, stop func(), grace time.Duration, late func(T)) (answer T, abandoned bool) {
	ch := make(chan T, 1)
	go func() { ch <- work() }()
	select {
	case answer = <-ch:
		return answer, false
	case <-ctx.Done():
	}
	if stop != nil {
		stop()
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case answer = <-ch:
		return answer, false
	case <-t.C:
	}
	if late != nil {
		go func() { late(<-ch) }()
	}
	var zero T
	return zero, true
}

// abandoned is the result of an arm whose work was abandoned (await): it
// ended at the run's interrupt or at the arm's limit, and says that a
// worker was left behind. Nothing the work measured is kept: its
// goroutine may still be writing it.
func abandoned(r result.Arm, ctx, actx context.Context, limit time.Duration) result.Arm {
	endStatus(&r, ctx, actx, limit, nil)
	r.Reason += "; " + errAbandoned.Error()
	return r
}

// abandonedPair is a comparison whose work was abandoned (await): no
// ratio, and a note that a worker was left behind.
func abandonedPair(c result.Comparison) result.Comparison {
	c.Rounds, c.Wall, c.CPU, c.Answer = 0, result.Ratio{}, nil, result.AnswerUndecided
	c.Note = "not measured side by side: " + errAbandoned.Error()
	return c
}
