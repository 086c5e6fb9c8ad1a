package measure

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpenInheritedTaskClock(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ev := Events[len(Events)-2] // task-clock
	if ev.Name != "task-clock" {
		t.Fatalf("Events order changed: %s", ev.Name)
	}
	fd, _, err := OpenInherited(ev, 0)
	if err != nil {
		t.Skipf("perf_event_open unavailable here: %s", UnsupportedReason(err))
	}
	defer unix.Close(fd)
	x := 0
	for i := 0; i < 2000000; i++ {
		x += i ^ (x >> 3)
	}
	runtime.KeepAlive(x)
	v, enabled, running, err := ReadCounter(fd)
	if err != nil {
		t.Fatal(err)
	}
	if v == 0 || enabled == 0 || running == 0 || running > enabled {
		t.Errorf("task-clock over real work: value %d, enabled %d, running %d", v, enabled, running)
	}
	if _, _, _, err := ReadCounter(-1); err == nil {
		t.Error("ReadCounter(-1) succeeded")
	}
}
