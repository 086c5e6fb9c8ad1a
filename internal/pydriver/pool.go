package pydriver

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// IdleClose is how long a driver waits for its next arm before it is
// closed: arms of one run follow each other at once, so one interpreter
// serves the whole batch, and none lingers after the run.
var IdleClose = 2 * time.Second

// pool holds up to slots live drivers per interpreter executable: arms of
// one run follow each other on the first, and a comparison's two arms,
// open at once and taking turns, each hold one.
var pool struct {
	mu       sync.Mutex
	sessions map[string][]*pooled
}

// slots is how many drivers of one interpreter may be live at once.
const slots = 2 // take waits on both

// pooled is one driver slot. use is held by whoever uses s: the one arm
// open on it, or the idle close.
type pooled struct {
	use   chan struct{}
	s     *Session
	timer *time.Timer
}

func poolFor(path string) []*pooled {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.sessions == nil {
		pool.sessions = map[string][]*pooled{}
	}
	ps := pool.sessions[path]
	if ps == nil {
		for range slots {
			ps = append(ps, &pooled{use: make(chan struct{}, 1)})
		}
		pool.sessions[path] = ps
	}
	return ps
}

// take holds the first free slot of ps, in order (so that arms one after
// another keep to the first slot's driver), or waits for the first that
// frees; ctx ending first is an error.
func take(ctx context.Context, ps []*pooled, path string) (*pooled, error) {
	for _, p := range ps {
		select {
		case p.use <- struct{}{}:
			return p, nil
		default:
		}
	}
	select {
	case ps[0].use <- struct{}{}:
		return ps[0], nil
	case ps[1].use <- struct{}{}:
		return ps[1], nil
	case <-ctx.Done():
		return nil, fmt.Errorf("python driver %s still busy with earlier arms: %w", path, context.Cause(ctx))
	}
}

// acquire holds a slot of the interpreter's for one arm, starting its
// driver if none is running there.
func acquire(ctx context.Context, in *Interpreter) (*pooled, error) {
	p, err := take(ctx, poolFor(in.Path), in.Path)
	if err != nil {
		return nil, err
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.s == nil || p.s.dead {
		s, err := StartSession(ctx, in.Path, []string{"-u", "-c", Source})
		if err != nil {
			<-p.use
			return nil, err
		}
		p.s = s
	}
	return p, nil
}

// release gives p back: a driver that failed is dropped, so the next arm
// starts a fresh one; a live one is closed after IdleClose unless an arm
// takes it first.
func (p *pooled) release() {
	s := p.s
	if s.dead {
		p.s = nil
	} else {
		p.timer = time.AfterFunc(IdleClose, func() {
			select {
			case p.use <- struct{}{}:
			default:
				return // an arm has it
			}
			if p.s == s {
				s.Close()
				p.s = nil
			}
			<-p.use
		})
	}
	<-p.use
}

// CloseAll closes every idle driver now (tests; the end of a run).
func CloseAll() {
	pool.mu.Lock()
	var ps []*pooled
	for _, slots := range pool.sessions {
		ps = append(ps, slots...)
	}
	pool.mu.Unlock()
	for _, p := range ps {
		p.use <- struct{}{}
		if p.timer != nil {
			p.timer.Stop()
		}
		if p.s != nil {
			p.s.Close()
			p.s = nil
		}
		<-p.use
	}
}
