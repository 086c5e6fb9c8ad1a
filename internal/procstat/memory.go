package procstat

import (
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
)

// Memory figures of a process, for weighing idle workers; each comes from
// the kernel file prometheus/procfs parses (status, smaps_rollup, meminfo).

func (r Root) proc(pid int) (procfs.Proc, error) {
	fs, err := procfs.NewFS(string(r))
	if err != nil {
		return procfs.Proc{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return procfs.Proc{}, notExist(pid, err)
	}
	return p, nil
}

// ReadRSS is pid's resident set in bytes (/proc/<pid>/status VmRSS).
func (r Root) ReadRSS(pid int) (int64, error) {
	p, err := r.proc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, notExist(pid, err)
	}
	return int64(st.VmRSS), nil
}

// ReadPss is pid's proportional set size in bytes (/proc/<pid>/smaps_rollup Pss).
func (r Root) ReadPss(pid int) (int64, error) {
	p, err := r.proc(pid)
	if err != nil {
		return 0, err
	}
	sm, err := p.ProcSMapsRollup()
	if err != nil {
		return 0, notExist(pid, err)
	}
	return int64(sm.Pss), nil
}

// ErrNoField is wrapped when a kernel file lacks a field this kernel does
// not report.
var ErrNoField = errors.New("field not reported by this kernel")

// ReadKernelStack is the memory of all kernel stacks in bytes, system-wide
// (/proc/meminfo KernelStack).
func (r Root) ReadKernelStack() (int64, error) {
	fs, err := procfs.NewFS(string(r))
	if err != nil {
		return 0, err
	}
	m, err := fs.Meminfo()
	if err != nil {
		return 0, err
	}
	if m.KernelStackBytes == nil {
		return 0, fmt.Errorf("meminfo KernelStack: %w", ErrNoField)
	}
	return int64(*m.KernelStackBytes), nil
}

// ReadReferenced is pid's referenced and resident memory in bytes
// (/proc/<pid>/smaps_rollup Referenced and Rss; prometheus/procfs sums
// smaps on a kernel without smaps_rollup). Referenced counts the pages
// whose accessed bit is set: touched since the bits were last cleared
// (/proc/<pid>/clear_refs), or since they were mapped.
func (r Root) ReadReferenced(pid int) (referenced, rss int64, err error) {
	p, err := r.proc(pid)
	if err != nil {
		return 0, 0, err
	}
	sm, err := p.ProcSMapsRollup()
	if err != nil {
		return 0, 0, notExist(pid, err)
	}
	return int64(sm.Referenced), int64(sm.Rss), nil
}
