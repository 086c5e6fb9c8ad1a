package cli

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/testpy"
)

// diagnose of an asyncio service with a busy thread on a real free-threaded
// CPython (internal/testpy; skipped, saying why, where none is
// installed): the loop's lag is measured, the build is read as
// free-threaded with the GIL off, and no GIL-contention reading is made.
func TestPyProbeFreeThreaded(t *testing.T) {
	ft := testpy.FreeThreaded(t)
	stdout, recs, code := pyDiagnose(t, ft.Path, filepath.Join(pyTestdata, "gil.py"), "--busy", "--seconds", "0.8")
	if code != 0 || !strings.Contains(stdout, `"requests"`) {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if len(recs["py-loop"]) != 1 {
		t.Fatalf("want one loop record, got %v", recs["py-loop"])
	}
	if in := recs["py-interpreter"]; len(in) != 1 || in[0]["free_threaded"] != true || in[0]["gil_enabled"] != false {
		t.Errorf("interpreter records %v", in)
	}
	text, ok := hasReading(recs, "free-threaded")
	if !ok || !strings.Contains(text, "GIL off at run time") {
		t.Errorf("free-threaded reading %v %q; readings %v", ok, text, readingKinds(recs))
	}
	if _, ok := hasReading(recs, "gil-contention"); ok {
		t.Errorf("a GIL-contention reading on a build without the GIL: %v", readingKinds(recs))
	}
	if cost := recs["py-probe-cost"]; len(cost) != 1 || cost[0]["counted_in"] != "python" || !strings.Contains(fmt.Sprint(cost[0]["counted_how"]), "free-threaded") {
		t.Errorf("a free-threaded build counts in Python, and the cost record says why: %v", cost)
	}
}

// The GIL build of the same version (3.13, its headers in its prefix):
// every call counted exactly, in C and in Python.
func TestPyProbeCountsOnGILBuild(t *testing.T) {
	gil := testpy.GILOf(t, testpy.FreeThreaded(t))
	eachCounter(t, func(t *testing.T, counted func(map[string][]map[string]any)) { probeWindows(t, gil.Path, counted) })
}

// watch names the build of a running free-threaded CPython started as
// python3: the prefix's python3 leads to python3.N, a hard link of
// python3.Nt, so the executable's name does not say; the GIL build of the
// same version, started the same way, is named a GIL build.
func TestWatchNamesFreeThreadedBuild(t *testing.T) {
	ft := testpy.FreeThreaded(t)
	builds := []struct {
		py   testpy.Python
		want string
	}{{ft, "free-threaded build"}}
	if gil, why := testpy.LookGILOf(ft); why == "" {
		builds = append(builds, struct {
			py   testpy.Python
			want string
		}{gil, "GIL build"})
	} else {
		t.Log(why)
	}
	for _, b := range builds {
		cmd := exec.Command(filepath.Join(b.py.Dir(), "python3"), "-c", "import time; time.sleep(30)")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			unix.Kill(cmd.Process.Pid, unix.SIGKILL)
			cmd.Wait()
		})
		waitStarted(t, cmd.Process.Pid, false)
		var out, errb syncBuf
		if code := Main([]string{"watch", fmt.Sprint(cmd.Process.Pid), "--interval", "300ms", "--count", "1", "--format", "json", "--price=false"}, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		found := ""
		for _, l := range strings.Split(out.String(), "\n") {
			var r struct{ Kind, Reading, Text string }
			if json.Unmarshal([]byte(l), &r) == nil && r.Kind == "reading" && r.Reading == "cpython" {
				found = r.Text
			}
		}
		if !strings.Contains(found, "CPython 3.") || !strings.Contains(found, ", "+b.want+" (from /proc") {
			t.Errorf("%s: the cpython reading %q does not say %q", b.py.Path, found, b.want)
		}
	}
}
