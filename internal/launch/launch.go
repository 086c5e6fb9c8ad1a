// Package launch runs a command under measurement: plain diagnose (a grid
// of one point), diagnose --vary and selfcheck's references all start
// their commands here, and nothing else in ctxlab supervises a process.
//
// Every command is started by ctxlab's keeper: ctxlab's own binary in a
// child mode, the command's parent and child subreaper, with a
// parent-death signal and a socket to ctxlab. The keeper starts the
// command stopped at its exec (ptrace) so its counters can be opened
// before it runs, tells ctxlab when it has exited without reaping it (its
// last /proc readings are still there), then reaps it, names what it left
// running and ends all of it. When ctxlab exits, however it dies (SIGKILL
// included), the keeper's socket reads EOF: it kills every process of the
// trees it holds, by process group and by the kernel's children lists
// (orphans, setsid double forks and group changes stay its descendants),
// removes ctxlab's registered temp files, and exits.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/child"
)

// DefaultGrace is how long a command has between the signal that asks it
// to end and the next step (SIGINT after a Ctrl-C that reached it, then
// SIGKILL).
const DefaultGrace = 2 * time.Second

// Spec is one command to run and how it is watched.
type Spec struct {
	// Path is the program (exec.LookPath's answer); Args its argv, Args[0]
	// as the user wrote it; Env its environment (nil: ctxlab's); Dir its
	// directory.
	Path string
	Args []string
	Env  []string
	Dir  string
	// Stdin (nil: /dev/null), Stdout and Stderr (nil: discarded); a
	// writer that is no file gets what the command writes through a pipe.
	Stdin          *os.File
	Stdout, Stderr io.Writer
	// ExtraFiles become the command's descriptors 3, 4, … (at most 13).
	ExtraFiles []*os.File
	// OwnGroup gives the command a process group of its own; without it
	// the command shares ctxlab's, so a terminal's Ctrl-C reaches it too.
	OwnGroup bool
	// Timeout (0: none) and Grace (0: DefaultGrace): see Run.
	Timeout, Grace time.Duration
	// Started is called with the command's PID while it is stopped at its
	// exec: counters opened here, inherited, count its whole run.
	Started func(pid int)
	// Tick is called every Interval while the command runs; Exited once it
	// has exited, before it is reaped (a zombie's /proc counts are read).
	Interval time.Duration
	Tick     func()
	Exited   func()
}

// Stop says why ctxlab stopped a command.
type Stop int

const (
	NotStopped  Stop = iota
	Interrupted      // Ctrl-C, SIGTERM of ctxlab: its context ended
	TimedOut         // it ran past Timeout
)

func (s Stop) String() string {
	switch s {
	case Interrupted:
		return "interrupted"
	case TimedOut:
		return "timed out"
	}
	return "not stopped"
}

// Result is one run of a command.
type Result struct {
	PID int
	// ExitStatus is its exit status, 128 + the signal when one killed it
	// (Signal, else 0).
	ExitStatus int
	Signal     syscall.Signal
	// WallNs is from its exec to its exit.
	WallNs int64
	// Rusage is wait4's, the command and its waited-for children (HasRusage).
	Rusage    syscall.Rusage
	HasRusage bool
	Stopped   Stop
	// Left are the processes it left running when it exited: all were
	// killed before Run returned.
	Left []Left
	// Note says how its start was traced, when not as usual.
	Note string
	// Held says what held its process tree.
	Held string
	// SelfCPUNs is the CPU time ctxlab itself (and its keeper) used from
	// the command's release to its exit: sampling, waiting, the keeper.
	SelfCPUNs int64
}

// runMu makes runs one at a time: what a command leaves behind is told
// apart from another's by running alone.
var runMu sync.Mutex

// Run starts the command through the keeper and waits for it to exit. When
// ctx ends, a command in its own group gets SIGINT at once, one sharing
// ctxlab's group (which a terminal's Ctrl-C reached) after Grace; past
// Timeout it gets SIGTERM; Grace after either, SIGKILL. Whatever it left
// running is killed and reaped before Run returns.
func Run(ctx context.Context, s Spec) (*Result, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := theKeeper()
	if err != nil {
		return nil, fmt.Errorf("starting ctxlab's keeper: %w", err)
	}
	std, err := openStdio(s)
	if err != nil {
		return nil, err
	}
	defer std.close()
	id, ch := k.register()
	defer k.unregister(id)
	if s.Env == nil {
		s.Env = os.Environ() // ctxlab's, not the keeper's
	}
	err = k.c.send(msg{Op: "start", ID: id, Path: s.Path, Args: s.Args, Env: s.Env, Dir: s.Dir, OwnGroup: s.OwnGroup}, std.fds...)
	std.sent()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", s.Args[0], err)
	}
	m, err := k.await(ch)
	if err != nil {
		return nil, err
	}
	if m.Err != "" {
		return nil, fmt.Errorf("starting %s: %s", s.Args[0], m.Err)
	}
	r := &Result{PID: m.PID, Held: held}
	if s.Started != nil {
		s.Started(m.PID)
	}
	if err := k.c.send(msg{Op: "go", ID: id}); err != nil {
		return nil, err
	}
	self0 := selfCPUNs()
	exited, err := supervise(ctx, k, id, ch, s, r)
	if err != nil {
		return nil, err
	}
	r.WallNs, r.Note = exited.WallNs, exited.Note
	r.SelfCPUNs = selfCPUNs() - self0 + exited.KeeperCPUNs
	if s.Exited != nil {
		s.Exited()
	}
	if err := k.c.send(msg{Op: "reap", ID: id}); err != nil {
		return nil, err
	}
	reaped, err := k.await(ch)
	if err != nil {
		return nil, err
	}
	r.reaped(reaped)
	std.wait(grace(s))
	if reaped.Err != "" {
		return r, errors.New(reaped.Err)
	}
	return r, nil
}

func grace(s Spec) time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return DefaultGrace
}

// supervise waits for the command's exit, calling Tick every Interval,
// and stops it by the one rule (Run) when ctx ends or Timeout passes.
func supervise(ctx context.Context, k *keeperProc, id int, ch <-chan msg, s Spec, r *Result) (msg, error) {
	var tick <-chan time.Time
	if s.Tick != nil && s.Interval > 0 {
		t := time.NewTicker(s.Interval)
		defer t.Stop()
		tick = t.C
	}
	var limit <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		limit = t.C
	}
	signal := func(sig syscall.Signal) { _ = k.c.send(msg{Op: "signal", ID: id, Sig: int(sig), Group: s.OwnGroup}) }
	stop, g := ctx.Done(), grace(s)
	var next <-chan time.Time
	asked := false // the command has had its SIGINT or SIGTERM
	for {
		select {
		case m := <-ch:
			if m.Op == "exited" {
				return m, nil
			}
		case <-k.gone:
			select {
			case m := <-ch:
				if m.Op == "exited" {
					return m, nil
				}
			default:
			}
			return msg{}, errKeeperGone
		case <-tick:
			s.Tick()
		case <-stop:
			r.Stopped, stop = Interrupted, nil
			if s.OwnGroup {
				signal(syscall.SIGINT)
				asked = true
			}
			next = time.After(g)
		case <-limit:
			if r.Stopped == NotStopped {
				r.Stopped = TimedOut
			}
			signal(syscall.SIGTERM)
			asked, limit, next = true, nil, time.After(g)
		case <-next:
			if !asked {
				signal(syscall.SIGINT)
				asked, next = true, time.After(g)
				continue
			}
			signal(syscall.SIGKILL)
			next = nil
		}
	}
}

// reaped reads the keeper's account of the reaped command.
func (r *Result) reaped(m msg) {
	ws := syscall.WaitStatus(m.WaitStatus)
	switch {
	case ws.Signaled():
		r.Signal = ws.Signal()
		r.ExitStatus = 128 + int(r.Signal)
	case ws.Exited():
		r.ExitStatus = ws.ExitStatus()
	}
	if m.Rusage != nil {
		r.Rusage, r.HasRusage = *m.Rusage, true
	}
	r.Left = m.Left
	if m.Held != "" {
		r.Held = m.Held
	}
}

var errKeeperGone = errors.New("ctxlab's keeper ended before the command did")

// keeperProc is ctxlab's side of its keeper.
type keeperProc struct {
	c       *conn
	cmd     *exec.Cmd
	mu      sync.Mutex
	waiters map[int]chan msg
	next    int
	gone    chan struct{}
	waited  sync.Once
}

// wait reaps the keeper once it has exited (or is about to).
func (k *keeperProc) wait() { k.waited.Do(func() { _ = k.cmd.Wait() }) }

var (
	keeperMu sync.Mutex
	current  *keeperProc
)

// theKeeper is ctxlab's keeper, started on first use (or again, when the
// last one ended).
func theKeeper() (*keeperProc, error) {
	keeperMu.Lock()
	defer keeperMu.Unlock()
	if current != nil {
		select {
		case <-current.gone:
		default:
			return current, nil
		}
	}
	k, err := startKeeper()
	if err != nil {
		return nil, err
	}
	current = k
	return k, nil
}

// startKeeper starts ctxlab's binary as the keeper, in ctxlab's process
// group (a command that shares it keeps the terminal), from the thread
// that lives as long as ctxlab (its parent-death signal follows the
// thread that forked it).
func startKeeper() (*keeperProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	fds, err := socketPair()
	if err != nil {
		return nil, err
	}
	theirs := os.NewFile(uintptr(fds[1]), "keeper")
	defer theirs.Close()
	cmd := exec.Command(exe)
	pid := strconv.Itoa(os.Getpid())
	cmd.Env = append(os.Environ(), child.EnvRole+"="+role, child.EnvArgs+"="+pid, child.EnvParent+"="+pid, child.EnvCPUs+"=")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	child.OnSpawner(func() { err = cmd.Start() })
	if err != nil {
		_ = unix.Close(fds[0])
		return nil, err
	}
	k := &keeperProc{c: &conn{fd: fds[0]}, cmd: cmd, waiters: map[int]chan msg{}, gone: make(chan struct{})}
	go k.read()
	return k, nil
}

// read hands each message to the run it is for, until the keeper is gone.
func (k *keeperProc) read() {
	defer func() {
		close(k.gone)
		k.wait() // its socket is closed: it has ended, or ends now
	}()
	for {
		m, fds, err := k.c.recv()
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		if err != nil {
			return
		}
		k.mu.Lock()
		ch := k.waiters[m.ID]
		k.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (k *keeperProc) register() (int, chan msg) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.next++
	ch := make(chan msg, 4)
	k.waiters[k.next] = ch
	return k.next, ch
}

func (k *keeperProc) unregister(id int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.waiters, id)
}

// await is the run's next message.
func (k *keeperProc) await(ch <-chan msg) (msg, error) {
	select {
	case m := <-ch:
		return m, nil
	case <-k.gone:
		select {
		case m := <-ch:
			return m, nil
		default:
			return msg{}, errKeeperGone
		}
	}
}

// Temp registers a temp file or directory of ctxlab's with the keeper,
// which removes it if ctxlab dies before it does; forget is called once
// ctxlab has removed or renamed it. Without a keeper it does nothing.
func Temp(path string) (forget func()) {
	k, err := theKeeper()
	if err != nil || k.c.send(msg{Op: "temp", Path: path}) != nil {
		return func() {}
	}
	return func() { _ = k.c.send(msg{Op: "untemp", Path: path}) }
}

// Close ends the keeper, if one was started, and waits for it: everything
// it held is ended by then. cli.Main calls it on every way out.
func Close() {
	runMu.Lock() // a run in flight (another Main in the same process) ends first
	defer runMu.Unlock()
	keeperMu.Lock()
	k := current
	current = nil
	keeperMu.Unlock()
	if k == nil {
		return
	}
	_ = k.c.send(msg{Op: "close"})
	<-k.gone
	k.wait()
	_ = unix.Close(k.c.fd)
}
