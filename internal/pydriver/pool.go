package pydriver

import (
	"context"
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

type pooled struct {
	mu    sync.Mutex // one request at a time
	s     *Session
	timer *time.Timer
}

// Do runs one request on the interpreter's driver, starting the driver if
// none is running. A driver that failed is dropped, so the next arm starts
// a fresh one. Hello is the driver's hello (for the arm's params).
func (in *Interpreter) Do(ctx context.Context, req Request) (*Response, Hello, error) {
	pool.mu.Lock()
	if pool.sessions == nil {
		pool.sessions = map[string]*pooled{}
	}
	p := pool.sessions[in.Path]
	if p == nil {
		p = &pooled{}
		pool.sessions[in.Path] = p
	}
	pool.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.s == nil || p.s.dead {
		s, err := StartSession(ctx, in.Path, []string{"-u", "-c", Source})
		if err != nil {
			return nil, Hello{}, err
		}
		p.s = s
	}
	s := p.s
	r, err := s.Do(ctx, req)
	if s.dead {
		p.s = nil
	} else {
		p.timer = time.AfterFunc(IdleClose, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.s == s {
				s.Close()
				p.s = nil
			}
		})
	}
	return r, s.Hello, err
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
		p.mu.Lock()
		if p.timer != nil {
			p.timer.Stop()
		}
		if p.s != nil {
			p.s.Close()
			p.s = nil
		}
		p.mu.Unlock()
	}
}
