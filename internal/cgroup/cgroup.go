// Package cgroup finds a process's CPU cgroup and reads its quota and
// throttling: the one place that parses cgroup v2 cpu.max, v1
// cpu.cfs_quota_us/cpu.cfs_period_us and cpu.stat, for sysinfo, watch and
// serve alike. /proc/<pid>/cgroup itself is parsed by prometheus/procfs.
//
// Each kernel file has its own file here with a pure ParseX([]byte) and a
// thin method that reads it; parse errors wrap ErrParse. It imports
// nothing internal.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs"
)

// ErrParse is wrapped by every parse error.
var ErrParse = errors.New("cgroup: cannot parse")

// ErrNotFound is wrapped when a process has no CPU cgroup directory that
// can be read (no cpu controller, or none mounted where Find looks).
var ErrNotFound = errors.New("no CPU cgroup found")

// DefaultMount is where cgroup hierarchies are mounted.
const DefaultMount = "/sys/fs/cgroup"

// Dir is a process's CPU cgroup directory: the v2 one with cpu.max, or the
// v1 cpu controller's with cpu.stat.
type Dir struct {
	Version int    // 1 or 2
	Path    string // "" when none was found
}

// Find locates pid's CPU cgroup, reading procRoot/<pid>/cgroup (procfs) and
// looking under mount (normally /sys/fs/cgroup). The rules, in order:
//
//   - v2: the unified line ("0::path") names mount/path, or mount/unified/path
//     on a hybrid host; it is the CPU cgroup when it has cpu.max (the cpu
//     controller is enabled there).
//   - v1: the line whose controllers include cpu names mount/<controllers
//     joined by ",">/path or mount/cpu/path; it is the CPU cgroup when it has
//     cpu.stat.
//   - A path that does not exist under its mount means the mount shows only
//     the process's own cgroup (a container without a cgroup namespace): the
//     mount's root stands for it.
//
// When nothing is found the error wraps ErrNotFound and Dir.Version still
// says which hierarchy the process is in (2 when it has only the unified
// line), with an empty Path. A process that does not exist gives an error
// satisfying errors.Is(err, os.ErrNotExist).
func Find(procRoot, mount string, pid int) (Dir, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return Dir{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return Dir{}, fmt.Errorf("PID %d: %w", pid, err)
	}
	cgs, err := p.Cgroups()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return Dir{}, fmt.Errorf("PID %d: %w", pid, err)
		}
		return Dir{}, fmt.Errorf("%w: /proc/%d/cgroup: %w", ErrParse, pid, err)
	}
	return find(cgs, mount)
}

func find(cgs []procfs.Cgroup, mount string) (Dir, error) {
	version := 0
	var v1 []string
	for _, c := range cgs {
		if c.HierarchyID == 0 && len(c.Controllers) == 0 {
			if version == 0 {
				version = 2
			}
			if d, ok := pick(c.Path, "cpu.max", mount, filepath.Join(mount, "unified")); ok {
				return Dir{Version: 2, Path: d}, nil
			}
			continue
		}
		version = 1
		for _, ctl := range c.Controllers {
			if ctl == "cpu" && v1 == nil {
				v1 = []string{filepath.Join(mount, strings.Join(c.Controllers, ",")), filepath.Join(mount, "cpu"), c.Path}
			}
		}
	}
	if v1 != nil {
		if d, ok := pick(v1[2], "cpu.stat", v1[0], v1[1]); ok {
			return Dir{Version: 1, Path: d}, nil
		}
	}
	if version == 0 {
		version = 2
	}
	return Dir{Version: version}, fmt.Errorf("%w under %s", ErrNotFound, mount)
}

// pick returns the first of mounts/path that has file; a mount where path
// does not exist stands for path itself (see Find).
func pick(path, file string, mounts ...string) (string, bool) {
	for _, m := range mounts {
		d := filepath.Join(m, filepath.Clean("/"+path)) // never above the mount
		if _, err := os.Stat(d); err != nil {
			d = m
		}
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return d, true
		}
	}
	return "", false
}

// readFile reads file in d, for the Read methods.
func (d Dir) readFile(file string) ([]byte, error) {
	if d.Path == "" {
		return nil, ErrNotFound
	}
	return os.ReadFile(filepath.Join(d.Path, file))
}
