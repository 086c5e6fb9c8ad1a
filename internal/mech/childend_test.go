package mech

import "testing"

// TestChildEndsWaitRaw: every process kind's child end blocks without the
// Go runtime (raw read(2) or FUTEX_WAIT), so the child's own runtime
// threads do not wake beside it; the parent's end stays runtime-aware.
func TestChildEndsWaitRaw(t *testing.T) {
	for _, kind := range ProcessKinds() {
		t.Run(kind, func(t *testing.T) {
			parent, stop, files, closeAll, err := ParentEnd(kind)
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll()
			defer stop()
			ep, err := ChildEnd(kind, files)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				f.Close()
			}
			switch e := ep.(type) {
			case *fdEnd:
				if !e.rawRecv || parent.(*fdEnd).rawRecv {
					t.Errorf("child rawRecv %v, parent rawRecv %v: want true, false", e.rawRecv, parent.(*fdEnd).rawRecv)
				}
			case *futexEnd:
				if !e.rawWait || parent.(*futexEnd).rawWait {
					t.Errorf("child rawWait %v, parent rawWait %v: want true, false", e.rawWait, parent.(*futexEnd).rawWait)
				}
			default:
				t.Errorf("child end of %s is %T: add it here", kind, ep)
			}
		})
	}
}
