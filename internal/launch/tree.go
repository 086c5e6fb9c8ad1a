package launch

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

// Left is a process the command left running when it exited, or that
// was still in its tree when ctxlab ended it.
type Left struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// liveTree is the keeper's live descendants, zombies and skip left out:
// the processes a command left behind, orphans included (the keeper is
// their subreaper, so they stay its descendants whatever their group or
// session).
func liveTree(root procstat.Root, self int, skip map[int]bool) []Left {
	pids, err := root.DescendantsOf(self)
	if err != nil {
		return nil
	}
	var out []Left
	for _, pid := range pids {
		if skip[pid] {
			continue
		}
		p, err := root.ReadProc(pid)
		if err != nil || p.State == "Z" || p.State == "X" {
			continue
		}
		out = append(out, Left{PID: pid, Comm: p.Comm})
	}
	return out
}

// killTree kills every descendant of the keeper but keep (commands not yet
// reaped, a zombie each), by process group where one of the tree leads
// the group and by PID, and reaps them, pass after pass, until none is
// left: a process that forks as it dies gives its child to the keeper,
// which the next pass finds. It gives up after about 10 s of passes.
func killTree(root procstat.Root, self int, keep map[int]bool) {
	ownGroup := unix.Getpgrp()
	for pass := 0; pass < 2000; pass++ {
		pids, err := root.DescendantsOf(self)
		if err != nil {
			return
		}
		ours := map[int]bool{}
		for _, pid := range pids {
			ours[pid] = true
		}
		busy := false
		for _, pid := range pids {
			if keep[pid] {
				continue
			}
			busy = true
			if pgid, err := unix.Getpgid(pid); err == nil && pgid != ownGroup && ours[pgid] {
				_ = unix.Kill(-pgid, unix.SIGKILL) // a group the tree made: setpgid, setsid
			}
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		reapChildren(root, self, keep)
		if !busy {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reapChildren reaps the keeper's exited children, keep left alone.
func reapChildren(root procstat.Root, self int, keep map[int]bool) {
	all, err := root.Procs()
	if err != nil {
		return
	}
	for _, p := range all {
		if p.PPID != self || keep[p.PID] {
			continue
		}
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(p.PID, &ws, unix.WNOHANG|unix.WALL, nil)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
}
