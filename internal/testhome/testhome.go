// Package testhome keeps a package's tests out of the user's home: its
// Main points HOME and the XDG directories at fresh temporary ones, runs
// the tests, and fails the test binary when any test wrote under HOME or
// XDG_DATA_HOME (where ctxlab's history lives). Test mains use it; no
// product code imports it.
package testhome

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goDirs are the Go toolchain's own directories: a test that runs `go`
// keeps using the real ones (found before HOME moves), so it neither
// rebuilds everything nor writes a module cache into the empty home.
var goDirs = []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}

// Runner is what testing.M and testscript.Main have in common.
type Runner interface{ Run() int }

// Main runs m with HOME=H and XDG_DATA_HOME=H/.local/share for a new
// empty directory H (XDG_CONFIG_HOME, XDG_CACHE_HOME and XDG_STATE_HOME go
// to a scratch directory that is not checked), and returns m's exit code,
// or 1 when anything appeared under H, listing what.
func Main(m *testing.M) int { return run(m) }

// Guard is m with Main's isolation and check around its Run, for a test
// main that hands m on (testscript.Main).
func Guard(m Runner) Runner { return guarded{m} }

type guarded struct{ m Runner }

func (g guarded) Run() int { return run(g.m) }

func run(m Runner) int {
	keepGoDirs()
	home, err := os.MkdirTemp("", "ctxlab-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhome:", err)
		return 1
	}
	defer os.RemoveAll(home)
	scratch, err := os.MkdirTemp("", "ctxlab-test-xdg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhome:", err)
		return 1
	}
	defer os.RemoveAll(scratch)
	for k, v := range map[string]string{
		"HOME":            home,
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME": filepath.Join(scratch, "config"),
		"XDG_CACHE_HOME":  filepath.Join(scratch, "cache"),
		"XDG_STATE_HOME":  filepath.Join(scratch, "state"),
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	if written := Written(home); len(written) > 0 {
		fmt.Fprintf(os.Stderr, "testhome: the tests wrote into HOME (%s), which must stay empty:\n  %s\n",
			home, strings.Join(written, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Written lists every path under dir, relative to it (nil when dir is
// empty or gone).
func Written(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if p == dir {
			return nil
		}
		if rel, err := filepath.Rel(dir, p); err == nil {
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// keepGoDirs sets each of goDirs that is unset to the value the go
// command would compute from the current HOME and XDG directories.
func keepGoDirs() {
	cache, errCache := os.UserCacheDir()
	config, errConfig := os.UserConfigDir()
	home, errHome := os.UserHomeDir()
	gopath := os.Getenv("GOPATH")
	if gopath == "" && errHome == nil {
		gopath = filepath.Join(home, "go")
	}
	defaults := map[string]string{}
	if errCache == nil {
		defaults["GOCACHE"] = filepath.Join(cache, "go-build")
	}
	if errConfig == nil {
		defaults["GOENV"] = filepath.Join(config, "go", "env")
	}
	if gopath != "" {
		defaults["GOPATH"] = gopath
		defaults["GOMODCACHE"] = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	for _, k := range goDirs {
		if os.Getenv(k) == "" && defaults[k] != "" {
			os.Setenv(k, defaults[k])
		}
	}
}
