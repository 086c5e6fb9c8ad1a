// Package testpy finds, for tests, the two builds of one CPython version
// that issue 46's measurements need: a free-threaded one (python3.Nt) and
// the GIL build of the same version. scripts/cpython-builds.sh builds the
// pair from Debian's source package (about 9 minutes on 2 cores, once);
// .ci/run runs it and names them in the variables below, so in CI the
// tests run on both, and fail where a build is missing; elsewhere they skip,
// saying why.
//
// Where they are looked for, first found wins:
//   - $CTXLAB_PYTHON_FT, $CTXLAB_PYTHON_GIL: an interpreter each (a path or
//     a command on PATH), as scripts/cpython-builds.sh prints them;
//   - /opt/cpython/VERSIONt/bin/python3.Nt and /opt/cpython/VERSION/bin/python3.N
//     (the note's prefixes: /opt/cpython/3.13.5t, /opt/cpython/3.13.5).
//
// Tests import it; no product code does. It asks the interpreter itself
// (not internal/pydriver, whose own tests use it).
package testpy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// Prefixes is where the builds are looked for without the variables.
const Prefixes = "/opt/cpython"

// Python is one build found.
type Python struct {
	Path         string // as found: the variable's value or the file under Prefixes
	Version      string // "3.13.5"
	FreeThreaded bool   // sysconfig Py_GIL_DISABLED
	GILEnabled   bool   // sys._is_gil_enabled()
}

// Dir is the directory Path is in (for PATH).
func (p Python) Dir() string { return filepath.Dir(p.Path) }

// FreeThreaded is a free-threaded CPython with the GIL off at run time, or
// the test skips with the reason.
func FreeThreaded(t testing.TB) Python {
	t.Helper()
	py, why := find("CTXLAB_PYTHON_FT", filepath.Join(Prefixes, "*t", "bin", "python3.*t"), true)
	if why != "" {
		skip(t, why)
	}
	return py
}

// skip skips the test, saying why; in CI (CTXLAB_CI set, .ci/run, which
// builds both with scripts/cpython-builds.sh) a missing build fails it.
func skip(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CTXLAB_CI") != "" {
		t.Fatalf("%s (CI builds both: scripts/cpython-builds.sh)", why)
	}
	t.Skip(why)
}

// GILOf is the GIL build of ft's version, or the test skips with the
// reason.
func GILOf(t testing.TB, ft Python) Python {
	t.Helper()
	py, why := LookGILOf(ft)
	if why != "" {
		skip(t, why)
	}
	return py
}

// LookGILOf is GILOf without skipping: why is the reason there is none.
func LookGILOf(ft Python) (py Python, why string) {
	py, why = find("CTXLAB_PYTHON_GIL", filepath.Join(Prefixes, ft.Version, "bin", "python3.*[0-9]"), false)
	if why == "" && py.Version != ft.Version {
		why = "the GIL build found (" + py.Path + ", " + py.Version + ") is not of the free-threaded build's version " + ft.Version
	}
	return py, why
}

const ask = `import json, sys, sysconfig
v = sys.version_info
print(json.dumps({"version": "%d.%d.%d" % (v.major, v.minor, v.micro),
  "ft": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
  "gil": sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True}))`

// find asks $env's interpreter, else the first matching glob, for its
// version and build; why says what is missing when it is not the kind
// wanted.
func find(env, glob string, ft bool) (py Python, why string) {
	kind := map[bool]string{true: "free-threaded", false: "GIL"}[ft]
	cands, _ := filepath.Glob(glob)
	sort.Strings(cands)
	if v := os.Getenv(env); v != "" {
		cands = []string{v}
	}
	if len(cands) == 0 {
		return py, "no " + kind + " CPython build: set $" + env + " or install one under " + Prefixes + " (docs/python.md, \"The free-threaded build, for real\"; CI does not build CPython)"
	}
	py.Path = cands[0]
	out, err := exec.Command(py.Path, "-c", ask).Output()
	var a struct {
		Version string
		FT, GIL bool
	}
	switch {
	case err != nil:
		return py, kind + " CPython " + py.Path + " does not run: " + err.Error()
	case json.Unmarshal(out, &a) != nil:
		return py, py.Path + " did not answer as a CPython 3: " + string(out)
	case a.FT != ft:
		return py, py.Path + " is not a " + kind + " build"
	case ft && a.GIL:
		return py, py.Path + " runs with the GIL on (PYTHON_GIL=1?)"
	}
	py.Version, py.FreeThreaded, py.GILEnabled = a.Version, a.FT, a.GIL
	return py, ""
}
