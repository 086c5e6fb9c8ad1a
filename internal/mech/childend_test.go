package mech

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestHandoffEndsLoopInSections: every end whose loops ctxlab's thread and
// process arms run (a thread pair's two sides, a process pair's parent and
// child) runs Echo and RoundTrips in system-call sections, so no op's wait
// goes through the runtime on its own; only Go channels and cond loop in
// the Go scheduler.
func TestHandoffEndsLoopInSections(t *testing.T) {
	if !sections {
		t.Skip("a race build has no system-call sections (section_race.go)")
	}
	for _, kind := range ThreadKinds() {
		row, _ := RowOf(kind)
		inScheduler := row.Wait == WaitGo
		p, err := NewPair(kind)
		if err != nil {
			t.Fatal(err)
		}
		for side, e := range map[string]Endpoint{"A": p.A, "B": p.B} {
			if _, ok := e.(tripper); ok == inScheduler {
				t.Errorf("thread kind %s, side %s (%T): runs in sections %v, want %v", kind, side, e, ok, !inScheduler)
			}
		}
		p.Stop()
		p.Close()
	}
	for _, kind := range ProcessKinds() {
		parent, stop, files, closeAll, err := ParentEnd(kind)
		if err != nil {
			t.Fatal(err)
		}
		child, err := ChildEnd(kind, files)
		if err != nil {
			t.Fatal(err)
		}
		for side, e := range map[string]Endpoint{"parent": parent, "child": child} {
			if _, ok := e.(tripper); !ok {
				t.Errorf("process kind %s, %s end (%T): not in sections", kind, side, e)
			}
		}
		for _, f := range files {
			f.Close()
		}
		if fe, ok := child.(*futexEnd); ok { // shmChild's mapping of the shared page
			unix.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(fe.w)), os.Getpagesize()))
		}
		stop()
		closeAll()
	}
}
