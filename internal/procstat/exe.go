package procstat

import "sort"

// Image is what a process runs: its executable (/proc/<pid>/exe) and the
// files mapped into it (/proc/<pid>/maps), each once, sorted — enough to
// tell an interpreter and the libraries it loaded (libpython3.11.so).
type Image struct {
	Exe    string
	Mapped []string
}

// ReadImage reads pid's executable link and its mapped files, both through
// prometheus/procfs. A link that cannot be read (another user's process)
// leaves Exe empty; maps that cannot be read leave Mapped nil.
func (r Root) ReadImage(pid int) (Image, error) {
	p, err := r.proc(pid)
	if err != nil {
		return Image{}, err
	}
	var im Image
	if exe, err := p.Executable(); err == nil {
		im.Exe = exe
	}
	maps, err := p.ProcMaps()
	if err != nil {
		return im, nil
	}
	seen := map[string]bool{}
	for _, m := range maps {
		if m.Pathname == "" || seen[m.Pathname] {
			continue
		}
		seen[m.Pathname] = true
		im.Mapped = append(im.Mapped, m.Pathname)
	}
	sort.Strings(im.Mapped)
	return im, nil
}

// ReadExe reads pid's executable link alone (cheap enough to poll: a shim
// followed to the program it execs). A missing process wraps
// ErrNoProcess.
func (r Root) ReadExe(pid int) (string, error) {
	p, err := r.proc(pid)
	if err != nil {
		return "", err
	}
	exe, err := p.Executable()
	if err != nil {
		if _, serr := r.ReadProc(pid); serr != nil {
			return "", serr
		}
		return "", err
	}
	return exe, nil
}

// ReadCmdline reads pid's command line (/proc/<pid>/cmdline).
func (r Root) ReadCmdline(pid int) ([]string, error) {
	p, err := r.proc(pid)
	if err != nil {
		return nil, err
	}
	return p.CmdLine()
}
