package exp

import (
	"reflect"
	"testing"
)

// A Builds pair stands for one pair per version that ran on both builds:
// the free-threaded arm against the GIL arm of the same version; one
// build, two versions, an unsupported arm or an arm of another plan name
// give none, and other pairs pass as they are.
func TestExpandPairs(t *testing.T) {
	arm := func(tag, build string) Arm {
		return Arm{Name: "ring/pythread/simplequeue/n=100/py=" + tag, Params: map[string]string{ParamPython: tag, ParamPythonBuild: build}}
	}
	plain := Pair{Label: "threads vs goroutines", A: "pingpong/a", B: "pingpong/b"}
	builds := Pair{Label: "thread ring n=100", A: "ring/pythread/simplequeue/n=100", Builds: true}
	arms := []Arm{arm("3.11.7", BuildGIL), arm("3.13.5", BuildGIL), arm("3.13.5t", BuildFreeThreaded), arm("3.14.0t", BuildFreeThreaded),
		{Name: "ring/pythread/simplequeue/n=2/py=3.14.0", Params: map[string]string{ParamPythonBuild: BuildGIL}}}
	got := ExpandPairs([]Pair{plain, builds}, arms)
	want := []Pair{plain, {Label: "thread ring n=100 on free-threaded 3.13.5t vs GIL 3.13.5",
		A: "ring/pythread/simplequeue/n=100/py=3.13.5t", B: "ring/pythread/simplequeue/n=100/py=3.13.5"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	unsup := arm("3.13.5t", BuildFreeThreaded)
	unsup.Unsupported = "no free-threaded CPython"
	for _, arms := range [][]Arm{{arm("3.13.5", BuildGIL)}, {arm("3.11.7", BuildGIL), arm("3.13.5t", BuildFreeThreaded)}, {arm("3.13.5", BuildGIL), unsup}} {
		if got := ExpandPairs([]Pair{builds}, arms); len(got) != 0 {
			t.Errorf("%v: %+v", arms, got)
		}
	}
}
