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

// pool holds one live driver per interpreter executable.
var pool struct {
	mu       sync.Mutex
	sessions map[string]*pooled
}

// pooled is one interpreter's driver. use is held by whoever uses s: the
// one arm open on it, or the idle close.
type pooled struct {
	use   chan struct{}
	s     *Session
	timer *time.Timer
}

func poolFor(path string) *pooled {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.sessions == nil {
		pool.sessions = map[string]*pooled{}
	}
	p := pool.sessions[path]
	if p == nil {
		p = &pooled{use: make(chan struct{}, 1)}
		pool.sessions[path] = p
	}
	return p
}

// acquire takes p for one arm, starting the driver if none is running;
// ctx ending while another arm holds it is an error.
func (p *pooled) acquire(ctx context.Context, in *Interpreter) (*Session, error) {
	select {
	case p.use <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("python driver %s still busy with an earlier arm: %w", in.Path, context.Cause(ctx))
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
	return p.s, nil
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
	ps := make([]*pooled, 0, len(pool.sessions))
	for _, p := range pool.sessions {
		ps = append(ps, p)
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
