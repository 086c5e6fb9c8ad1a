package mech

import (
	"sync"
	"testing"
)

// TestThreadStopRacesDo: a bench's Close stops its threads while Run may be
// about to call Do; neither may panic (send on a closed channel) or hang.
// Run with -race.
func TestThreadStopRacesDo(t *testing.T) {
	for i := 0; i < 200; i++ {
		th, err := StartThread(nil)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				th.Do(func() {})
			}
			fin, _ := th.Go(func() {})
			<-fin
		}()
		go func() { defer wg.Done(); th.Stop() }()
		wg.Wait()
		th.Stop() // twice is fine
		ran := false
		th.Do(func() { ran = true })
		if ran {
			t.Fatal("Do ran f on a stopped thread")
		}
	}
}
