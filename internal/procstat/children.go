package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DescendantsOf is pid's live descendant processes, as Descendants finds
// them over every process, read instead from the kernel's lists of each
// thread's children (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN):
// a few files for a small tree rather than every process's stat, which a
// watch of a command and its children reads every interval. Where the
// kernel keeps no such lists it scans every process.
func (r Root) DescendantsOf(pid int) ([]int, error) {
	out, ok := r.childrenTree(pid)
	if !ok {
		all, err := r.Procs()
		if err != nil {
			return nil, err
		}
		return Descendants(all, pid), nil
	}
	sort.Ints(out)
	return out, nil
}

// childrenTree walks the children lists from pid; ok is false when the
// kernel has none.
func (r Root) childrenTree(pid int) (out []int, ok bool) {
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		kids, ok := r.children(p)
		if !ok {
			return nil, false
		}
		for _, c := range kids {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out, true
}

// children are the processes whose parent is one of pid's threads; ok is
// false when a live thread has no children file (the kernel keeps none).
// A process or thread that is gone has none.
func (r Root) children(pid int) ([]int, bool) {
	tids, err := r.TIDs(pid)
	if err != nil {
		return nil, true
	}
	var out []int
	for _, tid := range tids {
		dir := filepath.Join(string(r), strconv.Itoa(pid), "task", strconv.Itoa(tid))
		b, err := os.ReadFile(filepath.Join(dir, "children"))
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(dir); serr == nil {
				return nil, false // the thread is there, its list is not
			}
			continue
		}
		if err != nil {
			continue // exited while read
		}
		kids, err := parseChildren(b)
		if err != nil {
			continue
		}
		out = append(out, kids...)
	}
	return out, true
}

// parseChildren reads a children file: PIDs separated by spaces.
func parseChildren(b []byte) ([]int, error) {
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: children %q", ErrParse, f)
		}
		out = append(out, n)
	}
	return out, nil
}
