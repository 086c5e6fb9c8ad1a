package launch

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
)

// role is the child mode of ctxlab's binary that keeps the command trees.
const role = "launch-keeper"

func init() { child.Register(role, keeperMain) }

// keeper is the process that starts every command ctxlab measures, as
// their parent and subreaper, and outlives ctxlab only to end them: when
// its socket to ctxlab reads EOF (ctxlab exited, however it died) or its
// parent-death signal comes, it kills its whole tree and removes ctxlab's
// registered temp files.
type keeper struct {
	c      *conn
	root   procstat.Root
	self   int
	tracer chan func() // the one OS thread that starts and detaches commands (ptrace)
	mu     sync.Mutex
	runs   map[int]*keptRun
	temps  map[string]bool
	ending sync.Once
	// cgroups is the delegated cgroup v2 directory each command's cgroup
	// is made in, "" with noCgroup saying why there is none.
	cgroups, noCgroup string
}

// keptRun is one command the keeper started.
type keptRun struct {
	cmd   *exec.Cmd
	pid   int
	own   bool
	cg    string // its cgroup, "" when none
	held  string
	goOn  chan struct{} // closed by go (ctxlab opened its counters) or by the end, once
	once  sync.Once
	began time.Time
	cpu0  int64
}

// release lets the stopped command go on.
func (r *keptRun) release() { r.once.Do(func() { close(r.goOn) }) }

// keeperMain is the keeper's life. args[0] is ctxlab's PID: a keeper whose
// parent is already another process ends at once.
func keeperMain(args []string, files []*os.File) int {
	if len(files) < 1 {
		return 2
	}
	// Ctrl-C, a hang-up and SIGTERM are ctxlab's to answer; the keeper ends
	// when ctxlab does. They are caught, not ignored: an ignored signal
	// would stay ignored in the commands it starts.
	signal.Notify(make(chan os.Signal, 16), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTTIN, syscall.SIGTTOU)
	parentGone := make(chan os.Signal, 1)
	signal.Notify(parentGone, syscall.SIGUSR2)
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGUSR2), 0, 0, 0)
	if len(args) > 0 && strconv.Itoa(os.Getppid()) != args[0] {
		return 1 // ctxlab died before the parent-death signal was set
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return 1
	}
	unix.CloseOnExec(int(files[0].Fd())) // the socket reaches no command
	for _, f := range files[1:] {
		_ = f.Close()
	}
	k := &keeper{c: &conn{fd: int(files[0].Fd())}, root: procstat.DefaultRoot, self: os.Getpid(),
		tracer: make(chan func()), runs: map[int]*keptRun{}, temps: map[string]bool{}}
	k.cgroups, k.noCgroup = delegated()
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the keeper
		for f := range k.tracer {
			f()
		}
	}()
	go func() {
		<-parentGone
		k.end()
		os.Exit(0)
	}()
	for {
		m, fds, err := k.c.recv()
		if err != nil || m.Op == "close" {
			k.end()
			runtime.KeepAlive(files)
			return 0
		}
		k.handle(m, fds)
	}
}

// handle answers one message from ctxlab.
func (k *keeper) handle(m msg, fds []int) {
	k.mu.Lock()
	r := k.runs[m.ID]
	k.mu.Unlock()
	switch m.Op {
	case "start":
		go func() { k.tracer <- func() { k.start(m, fds) } }()
	case "go":
		if r != nil {
			r.release()
		}
	case "signal":
		if r != nil {
			target := r.pid
			if m.Group && r.own {
				target = -r.pid
			}
			_ = unix.Kill(target, syscall.Signal(m.Sig))
		}
	case "reap":
		if r != nil {
			go k.reap(m.ID, r)
		}
	case "temp", "untemp":
		k.mu.Lock()
		if m.Op == "temp" {
			k.temps[m.Path] = true
		} else {
			delete(k.temps, m.Path)
		}
		k.mu.Unlock()
	}
	for _, fd := range fds {
		if m.Op != "start" {
			_ = unix.Close(fd)
		}
	}
}

// start starts the command stopped at its exec, tells ctxlab its PID,
// waits for go (ctxlab has opened its counters), lets it run, and tells
// ctxlab when it has exited, without reaping it. It runs on the tracer.
func (k *keeper) start(m msg, fds []int) {
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "stdio")
	}
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	if len(files) < 3 {
		_ = k.c.send(msg{Op: "started", ID: m.ID, Err: "keeper: the command's stdin, stdout and stderr did not come"})
		return
	}
	cmd := exec.Command(m.Path)
	cmd.Args, cmd.Env, cmd.Dir = m.Args, m.Env, m.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = files[0], files[1], files[2], files[3:]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: m.OwnGroup}
	r := &keptRun{cmd: cmd, own: m.OwnGroup, goOn: make(chan struct{})}
	note, err := measure.StartTraced(cmd, func(pid int) {
		r.pid = pid
		r.hold(k, m.ID)
		k.mu.Lock()
		k.runs[m.ID] = r
		k.mu.Unlock()
		if k.c.send(msg{Op: "started", ID: m.ID, PID: pid}) == nil {
			<-r.goOn
		}
	})
	if err != nil {
		k.mu.Lock()
		delete(k.runs, m.ID)
		k.mu.Unlock()
		_ = k.c.send(msg{Op: "started", ID: m.ID, Err: err.Error()})
		return
	}
	r.began, r.cpu0 = time.Now(), selfCPUNs()
	go func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, r.pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		_ = k.c.send(msg{Op: "exited", ID: m.ID, WallNs: int64(time.Since(r.began)), Note: note, KeeperCPUNs: selfCPUNs() - r.cpu0})
	}()
}

// reap reaps the exited command (its status and rusage), names what it
// left running, ends all of that, and tells ctxlab.
func (k *keeper) reap(id int, r *keptRun) {
	left := liveTree(k.root, k.self, map[int]bool{r.pid: true})
	err := r.cmd.Wait()
	var ee *exec.ExitError
	for _, pid := range cgroupPIDs(r.cg) {
		if pid != r.pid && !slices.ContainsFunc(left, func(l Left) bool { return l.PID == pid }) {
			if p, err := k.root.ReadProc(pid); err == nil && p.State != "Z" {
				left = append(left, Left{PID: pid, Comm: p.Comm})
			}
		}
	}
	out := msg{Op: "reaped", ID: id, Left: left, Held: r.held}
	if err != nil && !errors.As(err, &ee) && r.cmd.ProcessState == nil {
		out.Err = "waiting for the command: " + err.Error()
	}
	if ps := r.cmd.ProcessState; ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
			out.WaitStatus = uint32(ws)
		}
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			out.Rusage = ru
		}
	}
	endCgroup(r.cg, nil)
	killTree(k.root, k.self, k.pending(id))
	k.mu.Lock()
	delete(k.runs, id)
	k.mu.Unlock()
	_ = k.c.send(out)
}

// pending are the PIDs of the commands not yet reaped but id's.
func (k *keeper) pending(id int) map[int]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	keep := map[int]bool{}
	for i, r := range k.runs {
		if i != id && r.pid > 0 {
			keep[r.pid] = true
		}
	}
	return keep
}

// end kills the whole tree, removes the temp files, and lets go of any
// start that waits for ctxlab.
func (k *keeper) end() {
	k.ending.Do(func() {
		k.mu.Lock()
		for _, r := range k.runs {
			r.release()
		}
		temps := k.temps
		k.temps = map[string]bool{}
		var cgs []string
		for _, r := range k.runs {
			cgs = append(cgs, r.cg)
		}
		k.mu.Unlock()
		for _, cg := range cgs {
			endCgroup(cg, nil)
		}
		killTree(k.root, k.self, nil)
		for p := range temps {
			_ = os.RemoveAll(p)
		}
	})
}

// held says how the keeper holds a command's tree without a cgroup.
const held = "ctxlab's keeper (subreaper, parent-death signal; ends it by process group and children lists)"

// hold puts the stopped command into a cgroup of its own where ctxlab's
// is delegated, and says what holds its tree.
func (r *keptRun) hold(k *keeper, id int) {
	r.held = held + "; no cgroup: " + k.noCgroup
	if k.cgroups == "" {
		return
	}
	cg, err := cgroupOf(k.cgroups, id, r.pid)
	if err != nil {
		r.held = held + "; no cgroup: " + err.Error()
		return
	}
	r.cg, r.held = cg, "a cgroup v2 of its own, "+cg+" (ended by cgroup.kill), and "+held
}

// selfCPUNs is this process's CPU time so far.
func selfCPUNs() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
