package procstat

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"syscall"

	"github.com/prometheus/procfs"
)

// ErrNoProcess is wrapped when a process does not exist (or has exited), so
// callers can tell "no such PID" from "cannot read it".
var ErrNoProcess = errors.New("no such process")

// Proc is what watch needs of /proc/<pid>/stat: identity (comm, parent) and
// the start time that tells a reused PID from the original process.
type Proc struct {
	PID, PPID  int
	Comm       string
	State      string
	StartTicks uint64 // starttime, clock ticks after boot
	NumThreads int
	UTicks     uint // utime, clock ticks
	STicks     uint // stime, clock ticks
	RSSBytes   int64
}

// ReadProc reads /proc/<pid>/stat through prometheus/procfs. A missing
// process wraps ErrNoProcess; a malformed file wraps ErrParse.
func (r Root) ReadProc(pid int) (Proc, error) {
	fs, err := procfs.NewFS(string(r))
	if err != nil {
		return Proc{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return Proc{}, notExist(pid, err)
	}
	st, err := safeStat(p)
	if err != nil {
		return Proc{}, notExist(pid, err)
	}
	return Proc{PID: pid, PPID: st.PPID, Comm: st.Comm, State: st.State, StartTicks: st.Starttime,
		NumThreads: st.NumThreads, UTicks: st.UTime, STicks: st.STime, RSSBytes: int64(st.ResidentMemory())}, nil
}

// safeStat calls procfs's Stat and turns its panic on a truncated stat line
// (procfs v0.23.0 slices past the end when nothing follows the comm) into a
// parse error; a kernel never writes such a line, but a fixture or a fuzzer does.
func safeStat(p procfs.Proc) (st procfs.ProcStat, err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("%w: stat: %v", ErrParse, e)
		}
	}()
	st, err = p.Stat()
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrPermission) && !isESRCH(err) {
		err = fmt.Errorf("%w: stat: %w", ErrParse, err)
	}
	return st, err
}

// isESRCH: reading the files of a task that is exiting fails with ESRCH.
func isESRCH(err error) bool { return errors.Is(err, syscall.ESRCH) }

func notExist(pid int, err error) error {
	if errors.Is(err, os.ErrNotExist) || isESRCH(err) {
		return fmt.Errorf("PID %d: %w", pid, ErrNoProcess)
	}
	return fmt.Errorf("PID %d: %w", pid, err)
}

// Procs lists every process in the proc tree; entries that vanish while
// being read are left out.
func (r Root) Procs() ([]Proc, error) {
	ents, err := os.ReadDir(string(r))
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		p, err := r.ReadProc(pid)
		if err != nil {
			continue // exited, unreadable or malformed: not a candidate
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out, nil
}

// FindByName returns the processes whose command name (comm) matches re,
// leaving out the PIDs in exclude (ctxlab itself).
func (r Root) FindByName(re *regexp.Regexp, exclude ...int) ([]Proc, error) {
	all, err := r.Procs()
	if err != nil {
		return nil, err
	}
	var out []Proc
outer:
	for _, p := range all {
		for _, x := range exclude {
			if p.PID == x {
				continue outer
			}
		}
		if re.MatchString(p.Comm) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Descendants returns pid's live descendant processes (children,
// grandchildren …), found from the PPID of every process, sorted by PID.
func Descendants(all []Proc, pid int) []int {
	kids := map[int][]int{}
	for _, p := range all {
		kids[p.PPID] = append(kids[p.PPID], p.PID)
	}
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, c := range kids[q] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	sort.Ints(out)
	return out
}

// ReadTaskState is thread tid's state letter ("R", "S", "D" …) from
// /proc/<pid>/task/<tid>/stat, parsed by procfs.
func (r Root) ReadTaskState(pid, tid int) (string, error) {
	fs, err := procfs.NewFS(string(r))
	if err != nil {
		return "", err
	}
	p, err := fs.Thread(pid, tid)
	if err != nil {
		return "", notExist(pid, err)
	}
	st, err := safeStat(p)
	if err != nil {
		return "", notExist(pid, err)
	}
	return st.State, nil
}

// Leftovers are the processes the command started that still run after it
// exited: ctxlab's children (orphans reparented to the subreaper) started
// no earlier than the command, and their descendants; cmd is the command,
// a zombie by now. ctxlab must be the child subreaper for orphans to
// come to it (diagnose; diagnose --vary, which stops them).
func Leftovers(root Root, self int, cmd Proc) []Proc {
	all, err := root.Procs()
	if err != nil || cmd.PID == 0 {
		return nil
	}
	by := map[int]Proc{}
	for _, p := range all {
		by[p.PID] = p
	}
	var out []Proc
	for _, p := range all {
		if p.PPID != self || p.PID == cmd.PID || p.StartTicks < cmd.StartTicks || p.State == "Z" {
			continue
		}
		out = append(out, p)
		for _, d := range Descendants(all, p.PID) {
			if q, ok := by[d]; ok && q.State != "Z" {
				out = append(out, q)
			}
		}
	}
	return out
}
