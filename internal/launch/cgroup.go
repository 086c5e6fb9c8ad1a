package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// delegated is the cgroup v2 directory the keeper runs in when it may
// make cgroups under it (delegated to ctxlab's user: not the root cgroup,
// and writable), or "" and why not. A command's cgroup there holds its
// whole tree whatever it forks; ending it is one write to cgroup.kill.
func delegated() (dir, why string) {
	p, err := procfs.Self()
	if err != nil {
		return "", err.Error()
	}
	cgs, err := p.Cgroups()
	if err != nil {
		return "", err.Error()
	}
	rel := ""
	for _, c := range cgs {
		if c.HierarchyID == 0 {
			rel = c.Path
		}
	}
	if rel == "" {
		return "", "no cgroup v2 hierarchy"
	}
	if rel == "/" {
		return "", "ctxlab runs in the root cgroup, which is no place for one of its own"
	}
	mounts, err := p.MountInfo()
	if err != nil {
		return "", err.Error()
	}
	mount := ""
	for _, m := range mounts {
		if m.FSType == "cgroup2" && m.Root == "/" {
			mount = m.MountPoint
			break
		}
	}
	if mount == "" {
		return "", "cgroup v2 is not mounted"
	}
	dir = filepath.Join(mount, rel)
	for _, f := range []string{dir, filepath.Join(dir, "cgroup.procs")} {
		if err := unix.Access(f, unix.W_OK); err != nil {
			return "", fmt.Sprintf("its cgroup %s is not delegated to ctxlab (%s: %v)", rel, f, err)
		}
	}
	return dir, ""
}

// cgroupOf makes the cgroup that holds command id and moves pid (stopped
// at its exec, so nothing it starts is outside) into it.
func cgroupOf(parent string, id, pid int) (string, error) {
	dir := filepath.Join(parent, fmt.Sprintf("ctxlab-%d-%d", os.Getpid(), id))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		_ = os.Remove(dir)
		return "", err
	}
	return dir, nil
}

// cgroupPIDs are the processes in dir and the cgroups below it.
func cgroupPIDs(dir string) []int {
	var out []int
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
		return nil
	})
	return out
}

// endCgroup kills everything in dir (cgroup.kill, or each process where
// the kernel has none), waits for it to empty, and removes it and the
// cgroups the tree made below it.
func endCgroup(dir string, keep map[int]bool) {
	if dir == "" {
		return
	}
	kill := filepath.Join(dir, "cgroup.kill")
	for pass := 0; pass < 2000; pass++ {
		pids := cgroupPIDs(dir)
		live := 0
		for _, p := range pids {
			if !keep[p] {
				live++
			}
		}
		if live == 0 {
			break
		}
		if len(keep) > 0 || os.WriteFile(kill, []byte("1"), 0) != nil {
			for _, p := range pids {
				if !keep[p] {
					_ = unix.Kill(p, unix.SIGKILL)
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if len(keep) > 0 {
		return
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- { // the deepest first
		for try := 0; try < 200; try++ {
			err := os.Remove(dirs[i])
			if err == nil || errors.Is(err, os.ErrNotExist) || !errors.Is(err, unix.EBUSY) {
				break
			}
			time.Sleep(5 * time.Millisecond) // its last processes are still being reaped
		}
	}
}
