package mech

import (
	"github.com/ctxlab/ctxlab/internal/measure"
	"os"
	"runtime"
	"testing"
	"time"
)

func TestEveryThreadKindRoundTrips(t *testing.T) {
	for _, kind := range ThreadKinds() {
		t.Run(kind, func(t *testing.T) {
			p, err := NewPair(kind)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			done := make(chan error, 1)
			go func() { done <- Echo(p.B) }()
			// A kind with its own loop (looper) must time the ops the
			// sampler picks, as the generic loop does.
			s := measure.NewSampler(200, 1000, 4)
			if err := RoundTrips(p.A, 200, s); err != nil {
				t.Fatal(err)
			}
			if s.Len() != 50 {
				t.Fatalf("%d samples of 200 ops sampled every 4th, want 50", s.Len())
			}
			// The echo returns what it was sent.
			if err := p.A.Send(42); err != nil {
				t.Fatal(err)
			}
			if v, err := p.A.Recv(); err != nil || (v != 42 && carriesValues(kind)) {
				t.Fatalf("echo returned %d, %v", v, err)
			}
			p.Stop()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("echo: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Stop did not end the echoing side")
			}
		})
	}
}

func TestStopUnblocksAStuckReceiver(t *testing.T) {
	for _, kind := range ThreadKinds() {
		t.Run(kind, func(t *testing.T) {
			p, err := NewPair(kind)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got := make(chan error, 1)
			go func() {
				for {
					v, err := p.A.Recv() // nobody will answer
					if err != nil || v == Stop {
						got <- err
						return
					}
				}
			}()
			time.Sleep(20 * time.Millisecond)
			p.Stop()
			select {
			case <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("a receiver with no partner stayed blocked after Stop")
			}
		})
	}
}

func TestThreadIsItsOwnOSThreadAndGoesAway(t *testing.T) {
	th, err := StartThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	var tid int
	th.Do(func() { tid = gettid() })
	if tid != th.TID || tid == 0 {
		t.Fatalf("work ran on tid %d, thread is %d", tid, th.TID)
	}
	th.Stop()
	if tid == os.Getpid() {
		// Go parks the main thread instead of destroying it when a locked
		// goroutine exits on it; the runner restores its CPU mask after each arm.
		t.Skip("the locked goroutine ran on the main thread")
	}
	// The locked goroutine exited without unlocking: its OS thread is destroyed.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && threadExists(tid) {
		time.Sleep(10 * time.Millisecond)
	}
	if threadExists(tid) {
		t.Fatalf("thread %d still exists after Stop", tid)
	}
}

func TestRoundTripsDoesNotAllocate(t *testing.T) {
	p, _ := NewPair("futex")
	defer p.Close()
	go Echo(p.B)
	defer p.Stop()
	// AllocsPerRun counts the whole process: a background goroutine of an
	// earlier test can allocate meanwhile. An allocation in the loop shows
	// in every attempt, so take the smallest of a few.
	allocs := 1e9
	for try := 0; try < 5 && allocs != 0; try++ {
		allocs = min(allocs, testing.AllocsPerRun(3, func() { RoundTrips(p.A, 100, nil) }))
	}
	if allocs != 0 {
		t.Fatalf("RoundTrips allocates %v times", allocs)
	}
	_ = runtime.NumGoroutine()
}

// A Do racing with Stop (the runner's timeout) is refused, never a panic.
func TestDoAfterStopIsRefused(t *testing.T) {
	th, err := StartThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	th.Stop()
	th.Stop() // twice is fine
	ran := false
	if err := th.Do(func() { ran = true }); err != ErrThreadStopped || ran {
		t.Fatalf("Do after Stop: err %v, ran %v", err, ran)
	}
	if fin, err := th.Go(func() { ran = true }); err != ErrThreadStopped || ran {
		t.Fatalf("Go after Stop: err %v, ran %v", err, ran)
	} else {
		<-fin
	}
}

// Stop while both sides are mid-handoff (a timeout or Ctrl-C): both return.
func TestStopDuringRoundTrips(t *testing.T) {
	for _, kind := range ThreadKinds() {
		t.Run(kind, func(t *testing.T) {
			for trial := 0; trial < 20; trial++ {
				p, err := NewPair(kind)
				if err != nil {
					t.Fatal(err)
				}
				echoed := make(chan error, 1)
				go func() { echoed <- Echo(p.B) }()
				ran := make(chan error, 1)
				go func() { ran <- RoundTrips(p.A, 1<<40, nil) }()
				time.Sleep(time.Duration(trial%5) * time.Millisecond)
				p.Stop()
				for _, c := range []chan error{echoed, ran} {
					select {
					case <-c:
					case <-time.After(5 * time.Second):
						t.Fatalf("trial %d: a side stayed blocked after Stop", trial)
					}
				}
				p.Close()
			}
		})
	}
}
