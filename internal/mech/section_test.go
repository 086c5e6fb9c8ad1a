package mech

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// TestSectionsSurviveStopTheWorld: round trips in system-call sections
// (locked threads, as the thread arms run them) while another goroutine
// stops the world as fast as it can (runtime.GC, ReadMemStats), at
// GOMAXPROCS 1 and 2. Every kind must finish, and a stop-the-world must
// have happened meanwhile. The same loops raw, without the section, hang
// here (tried: a stop-the-world waits for a reader whose writer it has
// stopped); the whole process stops then, so go test's -timeout reports it.
func TestSectionsSurviveStopTheWorld(t *testing.T) {
	for _, procs := range []int{1, 2} {
		for _, kind := range []string{"pipe", "unixsock", "eventfd", "futex"} {
			t.Run(kind, func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				p, err := NewPair(kind)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				a, err := StartThread(nil)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Stop()
				b, err := StartThread(nil)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Stop()
				echoed, _ := b.Go(func() { Echo(p.B) })

				var stws atomic.Int64
				quit := make(chan struct{})
				storm := make(chan struct{})
				go func() {
					defer close(storm)
					var ms runtime.MemStats
					for {
						select {
						case <-quit:
							return
						default:
						}
						runtime.GC()
						runtime.ReadMemStats(&ms)
						debug.FreeOSMemory()
						stws.Add(3)
					}
				}()
				ran := make(chan error, 1)
				go func() {
					var err error
					if derr := a.Do(func() {
						for i := 0; i < 20 && err == nil; i++ {
							err = RoundTrips(p.A, 500, nil)
						}
					}); derr != nil {
						err = derr
					}
					ran <- err
				}()
				select {
				case err := <-ran:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(60 * time.Second):
					t.Fatal("round trips in sections did not finish under stop-the-world storms")
				}
				close(quit)
				<-storm
				if stws.Load() == 0 {
					t.Fatal("no stop-the-world ran while the round trips did")
				}
				p.Stop()
				select {
				case <-echoed:
				case <-time.After(5 * time.Second):
					t.Fatal("the echo did not end after Stop")
				}
			})
		}
	}
}
