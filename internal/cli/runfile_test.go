package cli

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// A run file whose read stalls (a hung file system; here a pipe nobody
// writes) gives way when SIGINT or SIGTERM cancels the command's context:
// readRun returns errInterrupted (exit 130) instead of waiting for data.
func TestReadRunGivesWayToSignals(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close() // ends the abandoned read
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := readRun(ctx, pr)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, errInterrupted) {
			t.Fatalf("readRun after cancel = %v, want errInterrupted", err)
		}
	case <-time.After(20 * time.Second): // a hang detector, not a timing assert
		t.Fatal("readRun kept waiting for data after its context was cancelled")
	}
}
