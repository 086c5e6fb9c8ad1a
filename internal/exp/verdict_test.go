package exp

import (
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// TestPickFindsPythonAllArms: under --python all a CPython arm's name ends
// in "/py=VERSION"; the verdict's rows name the plain arm and must still
// find it (the first interpreter's), while an exact name wins.
func TestPickFindsPythonAllArms(t *testing.T) {
	arm := func(name string, ns float64) result.Arm {
		return result.Arm{Name: name, Median: ns, Status: result.StatusOK}
	}
	run := &result.Run{Arms: []result.Arm{
		arm("pingpong/pythread/simplequeue/same-cpu/py=3.11", 7000),
		arm("pingpong/pythread/simplequeue/same-cpu/py=3.13t", 9000),
		arm("pingpong/thread/futex/same-cpu", 5000),
		{Name: "pingpong/pytask/asyncio-queue/same-cpu/py=3.11", Status: result.StatusFailed},
	}}
	v := NewVerdictRun(run)
	if a, ok := v.Pick("pingpong/pythread/simplequeue/same-cpu"); !ok || a.Median != 7000 {
		t.Errorf("Pick(plain name) = %v, %v; want the py=3.11 arm", a.Name, ok)
	}
	if a, ok := v.Pick("pingpong/thread/futex/same-cpu"); !ok || a.Median != 5000 {
		t.Errorf("Pick(exact) = %v, %v", a.Name, ok)
	}
	if _, ok := v.Pick("pingpong/pytask/asyncio-queue/same-cpu"); ok {
		t.Error("Pick found an arm that was not measured")
	}
	if _, ok := v.Pick("pingpong/pythread/simplequeue"); ok {
		t.Error("Pick matched a prefix of an arm's name")
	}
}
