package pyprobe

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/launch"
)

// The probe's counter in C (csrc/counter.c): it counts every wrapped call out
// of the probe's windows, where counting in Python cost a hop-bound
// program 2-3% (docs/pyprobe.md). ctxlab builds it for the interpreter it
// starts, where a C compiler and the interpreter's headers are, keeps it
// in its cache, and puts it beside the probe as counterName(suffix).
//
//go:embed csrc/counter.c
var counterSource []byte

// counterQuery asks the interpreter what building for it needs: its
// extension modules' suffix, its headers' directory, and whether it is a
// free-threaded build.
const counterQuery = `import json, sys, sysconfig
print(json.dumps({"suffix": sysconfig.get_config_var("EXT_SUFFIX") or "", "include": sysconfig.get_paths().get("include") or "",
    "ft": bool(sysconfig.get_config_var("Py_GIL_DISABLED")), "version": sys.version}))`

// Counter is how the probe of one run counts calls.
type Counter struct {
	// File is the counter built for the interpreter, in the probe's
	// directory; "" when there is none, and Why says why.
	File string
	Why  string
	// Cached: found in ctxlab's cache, not built for this run (Took).
	Cached bool
	Took   time.Duration
}

// counterName is the counter's file name for an interpreter whose
// extension suffix is suffix (".cpython-311-x86_64-linux-gnu.so"), which
// the probe finds by its own (_imp.extension_suffixes()[0]): another
// interpreter of the program's tree leaves it alone. No import finds it.
func counterName(suffix string) string { return "counter-" + strings.TrimPrefix(suffix, ".") }

// interpInfo is counterQuery's answer.
type interpInfo struct {
	Suffix, Include, Version string
	FT                       bool
}

// BuildCounter puts the probe's counter for the interpreter interp into
// dir: from ctxlab's cache, or built there with the C compiler ($CC, else
// cc, gcc or clang). Without a compiler or the interpreter's headers, for
// a free-threaded build, or when the build fails, there is none and Why
// says so: the probe then counts in Python.
func BuildCounter(ctx context.Context, interp, dir string) Counter {
	t0 := time.Now()
	c := buildCounter(ctx, interp, dir)
	c.Took = time.Since(t0)
	return c
}

func buildCounter(ctx context.Context, interp, dir string) Counter {
	info, err := queryInterp(ctx, interp)
	if err != nil {
		return Counter{Why: fmt.Sprintf("%s did not say how to build for it (%v)", interp, err)}
	}
	switch {
	case info.FT:
		return Counter{Why: "a free-threaded build (the counter's table would need locks of its own)"}
	case info.Suffix == "" || info.Include == "":
		return Counter{Why: interp + " names no extension suffix or headers directory (sysconfig)"}
	}
	if _, err := os.Stat(filepath.Join(info.Include, "Python.h")); err != nil {
		return Counter{Why: fmt.Sprintf("no Python.h in %s: the interpreter's headers are not installed (Debian: python3-dev)", info.Include)}
	}
	cc, ccArgs, why := compiler()
	if cc == "" {
		return Counter{Why: why}
	}
	file := filepath.Join(dir, counterName(info.Suffix))
	cached := cachePath(info, cc, ccArgs)
	if cached != "" && copyFile(cached, file) == nil {
		return Counter{File: file, Cached: true}
	}
	src := filepath.Join(dir, "counter.c")
	if err := os.WriteFile(src, counterSource, 0o600); err != nil {
		return Counter{Why: "cannot write its source: " + err.Error()}
	}
	defer os.Remove(src)
	args := append(append([]string{cc}, ccArgs...), "-O2", "-shared", "-fPIC", "-I"+info.Include, "-o", file, src)
	if _, errOut, err := launch.Output(ctx, launch.Spec{Path: cc, Args: args, Timeout: 30 * time.Second}); err != nil {
		os.Remove(file)
		return Counter{Why: fmt.Sprintf("%s could not build it: %v%s", filepath.Base(cc), err, firstLine(errOut))}
	}
	if cached != "" {
		storeCopy(file, cached)
	}
	return Counter{File: file}
}

// queryInterp runs counterQuery in interp, isolated from the
// environment's Python settings and without site.
func queryInterp(ctx context.Context, interp string) (interpInfo, error) {
	out, errOut, err := launch.Output(ctx, launch.Spec{Path: interp, Args: []string{interp, "-I", "-S", "-c", counterQuery}, Timeout: 30 * time.Second})
	if err != nil {
		return interpInfo{}, fmt.Errorf("%v%s", err, firstLine(errOut))
	}
	var info interpInfo
	if err := json.Unmarshal(bytes.TrimSpace(out), &info); err != nil {
		return interpInfo{}, fmt.Errorf("its answer is not the query's: %q", firstLine(out))
	}
	return info, nil
}

// compiler finds the C compiler: $CC (its first word; the rest are
// arguments), else cc, gcc or clang on PATH.
func compiler() (path string, args []string, why string) {
	if f := strings.Fields(os.Getenv("CC")); len(f) > 0 {
		p, err := exec.LookPath(f[0])
		if err != nil {
			return "", nil, fmt.Sprintf("no C compiler: $CC names %s, which is not found", f[0])
		}
		return p, f[1:], ""
	}
	for _, name := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil, ""
		}
	}
	return "", nil, "no C compiler (cc, gcc or clang on PATH, or $CC)"
}

// cachePath is where ctxlab's cache keeps the counter built from this
// source for this interpreter's ABI and headers by this compiler; "" when
// there is no cache directory.
func cachePath(info interpInfo, cc string, ccArgs []string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := sha256.New()
	h.Write(counterSource)
	for _, s := range append([]string{info.Suffix, info.Include, info.Version, cc}, ccArgs...) {
		h.Write([]byte{0})
		io.WriteString(h, s)
	}
	return filepath.Join(base, "ctxlab", "pyprobe", hex.EncodeToString(h.Sum(nil))[:16], counterName(info.Suffix))
}

// storeCopy copies the built counter into the cache: a temp file beside
// the target (which ctxlab's keeper removes if ctxlab dies first), then
// renamed, so that no run finds half a file. A cache that cannot be
// written is left out.
func storeCopy(file, cached string) {
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(cached), ".tmp-")
	if err != nil {
		return
	}
	forget := launch.Temp(tmp.Name())
	defer forget()
	tmp.Close()
	if copyFile(file, tmp.Name()) != nil || os.Rename(tmp.Name(), cached) != nil {
		os.Remove(tmp.Name())
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o700)
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if line == "" {
		return ""
	}
	return ": " + line
}
