package mech

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/measure"
)

// TestYieldsLetTheWorldStop: a locked thread yielding in a long batch, on a
// CPU it shares with a spinning process (so every yield switches and the
// thread resumes on a system call's return), does not hold up a
// stop-the-world: runtime.GC returns while the batch runs, and the batch
// ends soon after stop. Made raw outside a section, the yields kept their P,
// the collection waited for the whole batch, and with it every timer of
// the process (go test's own -timeout included: CI killed a test binary
// after 11 minutes). The batch runs in a child test process, so that a
// return of the bug fails here instead of freezing this one.
func TestYieldsLetTheWorldStop(t *testing.T) {
	if os.Getenv("CTXLAB_YIELDS_CHILD") != "" {
		yieldsChild(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestYieldsLetTheWorldStop$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CTXLAB_YIELDS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("a stop-the-world waited more than 60 s for a batch of yields:\n%s", out)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func yieldsChild(t *testing.T) {
	cpus, err := measure.Affinity()
	if err != nil || len(cpus) == 0 {
		t.Skipf("no CPU affinity to read: %v", err)
	}
	cpu := cpus[len(cpus)-1]
	hog := exec.Command("/bin/sh", "-c", "while :; do :; done")
	hog.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	if err := hog.Start(); err != nil {
		t.Skipf("no shell to spin: %v", err)
	}
	defer func() { hog.Process.Kill(); hog.Wait() }()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(hog.Process.Pid, &set); err != nil {
		t.Fatal(err)
	}
	var stop uint32
	var started atomic.Bool
	made := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		if err := measure.PinThread([]int{cpu}); err != nil {
			made <- -1
			return
		}
		started.Store(true)
		made <- Yields(1<<40, &stop)
	}()
	for !started.Load() {
		runtime.Gosched()
	}
	time.Sleep(20 * time.Millisecond) // the batch is under way
	t0 := time.Now()
	runtime.GC()
	t.Logf("runtime.GC took %v beside the batch (yielding on CPU %d with a spinning process)", time.Since(t0), cpu)
	atomic.StoreUint32(&stop, 1)
	if n := <-made; n < 64 || n%64 != 0 {
		t.Fatalf("the batch made %d yields: want a multiple of 64 (it stops at a check)", n)
	} else {
		t.Logf("the batch made %s yields before it stopped", strconv.Itoa(n))
	}
}
