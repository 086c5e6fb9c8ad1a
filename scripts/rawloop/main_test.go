package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/rawloop"
)

// TestMain makes the test binary -proc's child, as main does rawloop.
func TestMain(m *testing.M) {
	if os.Getenv(echoEnv) != "" {
		rawloop.Echo()
		return
	}
	os.Exit(m.Run())
}

// Every mechanism, raw and through the runtime, completes its round trips
// (a side that missed a message would hang here).
func TestPingPong(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || !set.IsSet(0) {
		t.Skip("CPU 0 is not ours to pin to:", err)
	}
	for _, mech := range []string{"futex", "eventfd", "pipe"} {
		for _, viaRuntime := range []bool{false, true} {
			done := make(chan struct{})
			var d time.Duration
			var err error
			go func() { // pingPong leaves its goroutine's thread locked
				defer close(done)
				d, err = rawloop.Loop(mech, 2000, 0, viaRuntime)
			}()
			<-done
			if err != nil || d <= 0 {
				t.Errorf("%s runtime=%v: %v, %v", mech, viaRuntime, d, err)
			}
		}
	}
	for _, viaRuntime := range []bool{false, true} {
		done := make(chan struct{})
		var d time.Duration
		var err error
		go func() {
			defer close(done)
			d, err = processPingPong(2000, viaRuntime)
		}()
		<-done
		if err != nil || d <= 0 {
			t.Errorf("-proc runtime=%v: %v, %v", viaRuntime, d, err)
		}
	}
}

// Bad arguments exit 2 with a message naming the value and what is
// allowed, before anything runs.
func TestBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "-n 0: want 1..2147483647 round trips"},
		{[]string{"-n", "2147483648"}, "-n 2147483648: want 1..2147483647"},
		{[]string{"-mech", "smoke"}, `-mech "smoke": want futex, eventfd or pipe`},
		{[]string{"futex"}, `unexpected argument "futex"`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-proc", "-mech", "eventfd"}, `-proc with -mech "eventfd": processes hand over through a pipe only`},
	} {
		var out, errs bytes.Buffer
		if code := run(c.args, &out, &errs); code != 2 || !strings.Contains(errs.String(), c.want) || out.Len() > 0 {
			t.Errorf("run(%q) = %d, stderr %q, stdout %q; want 2 and %q", c.args, code, errs.String(), out.String(), c.want)
		}
	}
}
