package selfcheck

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/rawloop"
)

// The references that need nothing installed are child modes of ctxlab's
// own binary, each in a process of its own, as a plain program would be:
// a loop in the measuring process would share its heap, threads and
// runtime state.
const (
	roleRaw  = "selfcheck-raw"  // rawloop's thread loops: BENCHTIME REPS CPU MECH
	roleChan = "selfcheck-chan" // the testing.B channel loop: BENCHTIME REPS CPU
	roleExec = "selfcheck-exec" // pinned by child.Main, then exec: PATH ARGS…
	// rawloop's process loop: BENCHTIME REPS CPU; its echoing partner is
	// roleEcho, ctxlab again, so both processes are Go processes of the
	// same binary as the arm's (the same threads, the same cgo or not).
	roleRawProc = "selfcheck-rawproc"
	roleEcho    = "selfcheck-echo" // rawloop.Echo on fds 3 and 4
)

func init() {
	child.Register(roleRaw, rawChild)
	child.Register(roleChan, chanChild)
	child.Register(roleExec, execChild)
	child.Register(roleRawProc, rawProcChild)
	child.Register(roleEcho, func([]string, []*os.File) int { rawloop.Echo(); return 0 })
}

// common reads BENCHTIME REPS CPU.
func common(args []string) (bench time.Duration, reps, cpu int, err error) {
	if len(args) < 3 {
		return 0, 0, 0, fmt.Errorf("want BENCHTIME REPS CPU, got %q", args)
	}
	if bench, err = time.ParseDuration(args[0]); err == nil {
		if reps, err = strconv.Atoi(args[1]); err == nil {
			cpu, err = strconv.Atoi(args[2])
		}
	}
	return bench, reps, cpu, err
}

// rawChild prints the median over REPS of rawloop's round trip on CPU,
// each repetition sized to about BENCHTIME from a pilot of 2 000.
func rawChild(args []string, _ []*os.File) int {
	bench, reps, cpu, err := common(args)
	if err != nil || len(args) != 4 || !slices.Contains(rawloop.Mechs, args[3]) {
		fmt.Fprintf(os.Stderr, "selfcheck: raw loop: bad arguments %q (%v)\n", args, err)
		return 2
	}
	mech := args[3]
	return printMedian(reps, bench, func(n uint32) (time.Duration, error) {
		return onThrowawayThread(func() (time.Duration, error) { return rawloop.Loop(mech, n, cpu, false) })
	})
}

// onThrowawayThread runs loop on a goroutine of its own: rawloop's loops
// leave their goroutine's thread locked (and pinned), so it ends with it.
func onThrowawayThread(loop func() (time.Duration, error)) (time.Duration, error) {
	type res struct {
		d   time.Duration
		err error
	}
	c := make(chan res)
	go func() {
		d, err := loop()
		c <- res{d, err}
	}()
	r := <-c
	return r.d, r.err
}

// rawProcChild prints the median over REPS of rawloop's process pipe round
// trip on CPU, its partner a fresh roleEcho child for every repetition.
func rawProcChild(args []string, _ []*os.File) int {
	bench, reps, cpu, err := common(args)
	if err != nil || len(args) != 3 {
		fmt.Fprintf(os.Stderr, "selfcheck: raw process loop: bad arguments %q (%v)\n", args, err)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "selfcheck:", err)
		return 1
	}
	return printMedian(reps, bench, func(n uint32) (time.Duration, error) {
		return onThrowawayThread(func() (time.Duration, error) {
			echo := exec.Command(exe)
			echo.Env = append(childEnv(), child.EnvRole+"="+roleEcho)
			echo.Stderr = os.Stderr
			// The forking thread is the loop's, locked until the loop ends.
			echo.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			return rawloop.ProcessLoop(n, cpu, false, echo)
		})
	})
}

// childEnv is this process's environment without the child-mode variables.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, child.EnvRole+"=") || strings.HasPrefix(kv, child.EnvCPUs+"=") || strings.HasPrefix(kv, child.EnvArgs+"=")
	})
}

// printMedian sizes n from a pilot, runs reps repetitions and prints the
// median ns per op.
func printMedian(reps int, bench time.Duration, loop func(n uint32) (time.Duration, error)) int {
	pilot, err := loop(2000)
	if err != nil {
		fmt.Fprintln(os.Stderr, "selfcheck:", err)
		return 1
	}
	n := uint32(min(max(int64(bench)*2000/max(int64(pilot), 1), 1000), 50_000_000))
	var per []float64
	for range reps {
		d, err := loop(n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "selfcheck:", err)
			return 1
		}
		per = append(per, float64(d.Nanoseconds())/float64(n))
	}
	slices.Sort(per)
	fmt.Printf("%.2f\n", median(per))
	return 0
}

// chanChild prints the median over REPS of a real testing.B run of the
// plain channel loop (rawloop.PlainChanRoundTrip, what internal/mech's
// BenchmarkPlainChanRoundTrip runs) at GOMAXPROCS=1, pinned whole to the CPU by child.Main: what
// `taskset -c CPU go test -bench PlainChan -cpu 1` reads.
func chanChild(args []string, _ []*os.File) int {
	bench, reps, _, err := common(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "selfcheck: channel loop: bad arguments %q (%v)\n", args, err)
		return 2
	}
	runtime.GOMAXPROCS(1)
	testing.Init()
	if err := flag.Set("test.benchtime", bench.String()); err != nil {
		fmt.Fprintln(os.Stderr, "selfcheck:", err)
		return 1
	}
	var per []float64
	for range reps {
		r := testing.Benchmark(rawloop.PlainChanRoundTrip)
		if r.N == 0 {
			fmt.Fprintln(os.Stderr, "selfcheck: the channel benchmark did not run")
			return 1
		}
		per = append(per, float64(r.T.Nanoseconds())/float64(r.N))
	}
	slices.Sort(per)
	fmt.Printf("%.2f\n", median(per))
	return 0
}

// execChild replaces itself with ARGS (child.Main has pinned it), so an
// outside program (perf) starts with the affinity already set.
func execChild(args []string, _ []*os.File) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "selfcheck: exec: no program")
		return 2
	}
	path, err := exec.LookPath(args[0])
	if err == nil {
		err = unix.Exec(path, args, childEnv())
	}
	fmt.Fprintln(os.Stderr, "selfcheck: exec", args[0]+":", err)
	return 1
}
