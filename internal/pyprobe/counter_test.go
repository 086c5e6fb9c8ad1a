package pyprobe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/testpy"
)

// needBuild is python3 and a C compiler, or the test skips (fails in CI,
// which installs both: .ci/run).
func needBuild(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		if p, _, _ := compiler(); p == "" {
			err = exec.ErrNotFound
		}
	}
	if err != nil {
		if os.Getenv("CTXLAB_CI") != "" {
			t.Fatalf("python3 and a C compiler are needed (.ci/run installs them): %v", err)
		}
		t.Skip("no python3 or no C compiler")
	}
	return realInterp(t, py)
}

// realInterp is the interpreter behind a shim (pyenv's python3 is a shell
// script): the one BuildCounter is given is the one diagnose finds.
func realInterp(t *testing.T, py string) string {
	out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	return strings.TrimSpace(string(out))
}

// The counter is built for the interpreter, named by its extension suffix,
// found in the cache the next time, and does what counter.c says
// (testdata/counter_check.py, loaded as the probe loads it).
func TestCounterInC(t *testing.T) {
	py := needBuild(t)
	t.Setenv("CC", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	c := BuildCounter(context.Background(), py, dir)
	if c.File == "" || c.Cached {
		t.Fatalf("not built: %+v", c)
	}
	suffix, err := exec.Command(py, "-c", "import _imp; print(_imp.extension_suffixes()[0])").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, counterName(strings.TrimSpace(string(suffix)))); c.File != want {
		t.Errorf("built %s, the probe looks for %s", c.File, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "counter.c")); err == nil {
		t.Errorf("the source was left in the probe's directory")
	}
	again := BuildCounter(context.Background(), py, t.TempDir())
	if again.File == "" || !again.Cached {
		t.Errorf("the second build did not come from the cache: %+v", again)
	}
	out, err := exec.Command(py, filepath.Join("testdata", "counter_check.py"), c.File).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("counter_check.py: %v\n%s", err, out)
	}
}

// Without a compiler, headers or a build that works, and for a
// free-threaded interpreter, there is no counter, and Why says why.
func TestCounterWithout(t *testing.T) {
	py := needBuild(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	noHeaders := filepath.Join(t.TempDir(), "python3")
	script := "#!/bin/sh\necho '{\"suffix\": \".cpython-399-x86_64-linux-gnu.so\", \"include\": \"/nonexistent/include\", \"ft\": false, \"version\": \"3.99\"}'\n"
	if err := os.WriteFile(noHeaders, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, interp, cc, want string
	}{
		{"no compiler", py, "/nonexistent/cc", "no C compiler: $CC names /nonexistent/cc"},
		{"a failing compiler", py, "false", "false could not build it: exit status 1"},
		{"no headers", noHeaders, "", "no Python.h in /nonexistent/include"},
		{"no interpreter", "/nonexistent/python3", "", "/nonexistent/python3 did not say how to build for it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CC", c.cc)
			dir := t.TempDir()
			got := BuildCounter(context.Background(), c.interp, dir)
			if got.File != "" || !strings.Contains(got.Why, c.want) {
				t.Errorf("got %+v, want no counter and %q", got, c.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left in the probe's directory: %v", ents)
			}
		})
	}
}

// A free-threaded build gets no counter (its table would need locks): the
// probe counts in Python there.
func TestCounterFreeThreaded(t *testing.T) {
	ft := testpy.FreeThreaded(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if got := BuildCounter(context.Background(), ft.Path, t.TempDir()); got.File != "" || !strings.Contains(got.Why, "a free-threaded build") {
		t.Errorf("got %+v, want no counter for a free-threaded build", got)
	}
}

// The cost record says where calls were counted and why, whichever side
// knows: the probe (it loaded the counter, or why it could not), ctxlab
// (why it built none), or neither (a counter built for another
// interpreter than the one that ran).
func TestCostSaysWhereCounted(t *testing.T) {
	for _, c := range []struct {
		name         string
		in, probeWhy string
		built        Counter
		wantIn, want string
	}{
		{"in C", "c", "", Counter{File: "/d/counter-x.so", Cached: true}, "c", "from ctxlab's cache"},
		{"probe says why", "python", "a free-threaded build", Counter{Why: "x"}, "python", "a free-threaded build"},
		{"ctxlab says why", "python", "", Counter{Why: "no C compiler"}, "python", "no C compiler"},
		{"another interpreter", "python", "", Counter{File: "/d/counter-cpython-311.so"}, "python", "not the one ctxlab built its counter for (counter-cpython-311.so)"},
	} {
		cost := &Cost{CountedIn: c.in, CountedHow: c.probeWhy}
		cost.counter(c.built)
		if cost.CountedIn != c.wantIn || !strings.Contains(cost.CountedHow, c.want) || !strings.Contains(cost.text(), cost.CountedHow) {
			t.Errorf("%s: %q %q, want %q %q; text %q", c.name, cost.CountedIn, cost.CountedHow, c.wantIn, c.want, cost.text())
		}
	}
}
