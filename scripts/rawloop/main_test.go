package main

import (
	"strings"
	"testing"
	"time"
)

// Every mechanism, raw and through the runtime, completes its round trips
// (a side that missed a message would hang here), and a bad one is refused.
func TestPingPong(t *testing.T) {
	for _, mech := range []string{"futex", "eventfd", "pipe"} {
		for _, viaRuntime := range []bool{false, true} {
			done := make(chan struct{})
			var err error
			go func() { // pingPong leaves its goroutine's thread locked
				defer close(done)
				var d time.Duration
				d, err = pingPong(mech, 2000, viaRuntime)
				if err == nil && d <= 0 {
					t.Errorf("%s runtime=%v: took %v", mech, viaRuntime, d)
				}
			}()
			<-done
			if err != nil && !strings.Contains(err.Error(), "pin to CPU 0") {
				t.Errorf("%s runtime=%v: %v", mech, viaRuntime, err)
			}
		}
	}
	if _, err := pingPong("smoke-signal", 1, false); err == nil || !strings.Contains(err.Error(), "want futex, eventfd or pipe") {
		t.Errorf("bad mechanism: %v", err)
	}
}
