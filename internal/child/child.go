// Package child runs ctxlab's hidden child mode: the partner processes of
// process arms are ctxlab itself, re-executed with CTXLAB_CHILD naming a
// role. Every child gets its own process group and a parent-death signal,
// is tracked while alive, and is killed and reaped by KillAll on any exit
// path, so no child outlives ctxlab.
package child

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// EnvRole names the role a re-executed ctxlab plays; EnvCPUs pins it.
const (
	EnvRole = "CTXLAB_CHILD"
	EnvCPUs = "CTXLAB_CHILD_CPUS"
	EnvArgs = "CTXLAB_CHILD_ARGS"
	// EnvParent, when set, is the PID the child's parent must have.
	EnvParent = "CTXLAB_CHILD_PARENT"
)

// Role is a child-mode entry point: files are the inherited fds 3, 4, …
type Role func(args []string, files []*os.File) int

var roles = map[string]Role{}

// Register adds a child role (called from init).
func Register(name string, r Role) { roles[name] = r }

// Main runs the child role if this process is a child; handled is false
// in a normal ctxlab (or test binary), which then goes on as usual.
// cmd/ctxlab's main and every TestMain that starts children call it first.
func Main() (handled bool, code int) {
	role := os.Getenv(EnvRole)
	if role == "" {
		return false, 0
	}
	r, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "ctxlab child: unknown role %q\n", role)
		return true, 2
	}
	// Orphaned before we set up? Then exit at once. A parent that named
	// itself (EnvParent) may be PID 1 (ctxlab as a container's init).
	if parent := os.Getenv(EnvParent); parent != "" && parent != strconv.Itoa(os.Getppid()) || parent == "" && os.Getppid() == 1 {
		return true, 1
	}
	var files []*os.File
	for fd := 3; ; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			break
		}
		files = append(files, os.NewFile(uintptr(fd), "fd"+strconv.Itoa(fd)))
	}
	if cpus := os.Getenv(EnvCPUs); cpus != "" {
		runtime.LockOSThread() // the role's loop stays on one thread
		var set []int
		for _, c := range strings.Split(cpus, ",") {
			n, err := strconv.Atoi(c)
			if err != nil {
				fmt.Fprintf(os.Stderr, "ctxlab child: bad cpu list %q\n", cpus)
				return true, 2
			}
			set = append(set, n)
		}
		// Pin every thread, the Go runtime's included (threads made later
		// inherit the mask): the child runs where its placement says, and
		// the arm's cpus field can say so.
		if err := measure.PinProcess(set); err != nil {
			fmt.Fprintf(os.Stderr, "ctxlab child: pin: %v\n", err)
			return true, 1
		}
	}
	var args []string
	if a := os.Getenv(EnvArgs); a != "" {
		args = strings.Split(a, "\x1f")
	}
	return true, r(args, files)
}

// Proc is a running child.
type Proc struct {
	cmd  *exec.Cmd
	once sync.Once
	err  error
}

// PID of the child.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

var (
	mu    sync.Mutex
	alive = map[*Proc]bool{}
)

// spawner is one OS thread that lives as long as ctxlab and starts every
// child: PR_SET_PDEATHSIG fires when the *thread* that forked a child dies,
// and Go may destroy other threads (a locked goroutine exiting).
var spawner struct {
	once sync.Once
	reqs chan func()
}

func onSpawner(f func()) {
	spawner.once.Do(func() {
		spawner.reqs = make(chan func())
		go func() {
			runtime.LockOSThread()
			for f := range spawner.reqs {
				f()
			}
		}()
	})
	done := make(chan struct{})
	spawner.reqs <- func() { f(); close(done) }
	<-done
}

// OnSpawner runs f on the OS thread that lives as long as ctxlab, where
// every child with a parent-death signal must be started (launch's keeper).
func OnSpawner(f func()) { onSpawner(f) }

// Options for Start.
type Options struct {
	Role           string
	Args           []string
	Files          []*os.File // become fds 3, 4, … in the child
	CPUs           []int      // pin the child (nil = inherit)
	Env            []string   // extra environment, e.g. GODEBUG for the child only
	Exe            string     // another program instead of ctxlab (e.g. /bin/true); Role ignored
	Stdout, Stderr *os.File
	Stdin          *os.File // nil = /dev/null
}

// Command is what Start runs for o: the program, its argv and its
// environment (launch runs it so under its keeper).
func Command(o Options) (path string, argv, env []string, err error) {
	exe := o.Exe
	var args []string
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return "", nil, nil, fmt.Errorf("find ctxlab executable for child: %w", err)
		}
		exe = self
	} else {
		args = o.Args
	}
	env = append(os.Environ(), o.Env...)
	if o.Exe == "" {
		env = append(env, EnvRole+"="+o.Role, EnvArgs+"="+strings.Join(o.Args, "\x1f"))
		if len(o.CPUs) > 0 {
			var s []string
			for _, c := range o.CPUs {
				s = append(s, strconv.Itoa(c))
			}
			env = append(env, EnvCPUs+"="+strings.Join(s, ","))
		}
	}
	return exe, append([]string{exe}, args...), env, nil
}

// Start starts a child in its own process group with a parent-death signal.
func Start(ctx context.Context, o Options) (*Proc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	exe, argv, env, err := Command(o)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, argv[1:]...)
	cmd.Env = env
	cmd.ExtraFiles = o.Files
	cmd.Stdout = o.Stdout
	if o.Stdin != nil {
		cmd.Stdin = o.Stdin
	}
	cmd.Stderr = o.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	onSpawner(func() { err = cmd.Start() })
	if err != nil {
		return nil, fmt.Errorf("start child %s: %w", o.Role, err)
	}
	p := &Proc{cmd: cmd}
	mu.Lock()
	alive[p] = true
	mu.Unlock()
	return p, nil
}

// Wait waits for the child to exit by itself.
func (p *Proc) Wait() error {
	p.once.Do(func() {
		p.err = p.cmd.Wait()
		mu.Lock()
		delete(alive, p)
		mu.Unlock()
	})
	return p.err
}

// Kill kills the child's whole process group and reaps it. Safe to call twice.
func (p *Proc) Kill() {
	pid := p.cmd.Process.Pid
	unix.Kill(-pid, unix.SIGKILL)
	unix.Kill(pid, unix.SIGKILL)
	err := p.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		_ = err
	}
}

// KillAll kills and reaps every child still alive; cli.Main calls it on
// every exit path, including SIGINT/SIGTERM.
func KillAll() {
	mu.Lock()
	var ps []*Proc
	for p := range alive {
		ps = append(ps, p)
	}
	mu.Unlock()
	for _, p := range ps {
		p.Kill()
	}
}

// Alive is the number of children not yet reaped (for tests).
func Alive() int {
	mu.Lock()
	defer mu.Unlock()
	return len(alive)
}
