package pydriver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/testload"
	"github.com/ctxlab/ctxlab/internal/testpy"
)

// The driver on a real free-threaded CPython (internal/testpy: skipped,
// saying why, where none is installed): the probe and the driver's hello
// both read the build as free-threaded with the GIL off, and a thread ring
// runs on it.
func TestRealFreeThreaded(t *testing.T) {
	ft := testpy.FreeThreaded(t)
	in, err := Resolve(ft.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !in.FreeThreaded || in.GILEnabled || in.Build() != "free-threaded" || in.Tag() != ft.Version+"t" {
		t.Fatalf("interpreter %+v: build %q, tag %q", in, in.Build(), in.Tag())
	}
	defer CloseAll()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// 100 threads handing on in turn: on a loaded machine each hop waits
	// for a CPU, and the free-threaded build's lock spins by yielding it
	// (docs/python.md), so a deadline here is the machine's, not the build's.
	w := testload.Start()
	r, h, err := runArm(ctx, in, Request{Bench: "ring.thread", Params: map[string]string{"n": "100"}}, 2, 300)
	if err != nil {
		if ctx.Err() != nil {
			w.SkipIfStarved(t, "a 100-thread ring on "+ft.Path)
		}
		t.Fatal(err)
	}
	if !h.FreeThreaded || h.GILEnabled || !strings.Contains(h.FullVersion, "free-threading") {
		t.Errorf("hello %+v", h)
	}
	if !r.OK || len(r.RepNs) != 2 || r.Ops[0] != 300 || r.CPUNs == nil || *r.CPUNs <= 0 {
		t.Errorf("response %+v", r)
	}
}

// --python all with both builds of one version on PATH lists each once:
// the GIL build's directory first gives python3 and python3.N of the GIL
// build and python3.Nt; the free-threaded directory first gives its
// python3, python3.N (a hard link of python3.Nt) and python3.Nt, one
// interpreter.
func TestFindAllBothBuilds(t *testing.T) {
	ft := testpy.FreeThreaded(t)
	gil := testpy.GILOf(t, ft)
	for _, c := range []struct {
		path string
		want string
	}{
		{gil.Dir() + ":" + ft.Dir(), gil.Version + " " + ft.Version + "t"},
		{ft.Dir(), ft.Version + "t"},
	} {
		t.Setenv("PATH", c.path)
		ins, late := FindAllWhy(context.Background())
		var tags []string
		for _, in := range ins {
			tags = append(tags, in.Tag())
		}
		if got := strings.Join(tags, " "); got != c.want || len(late) != 0 {
			t.Errorf("PATH=%s: found %q (late %v), want %q", c.path, got, late, c.want)
		}
	}
}
