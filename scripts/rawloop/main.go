// Command rawloop is the plainest Go ping-pong there is: the reference
// scripts/harness-compare.sh holds ctxlab's thread and process arms to.
//
//	go run ./scripts/rawloop -mech futex -n 200000
//
// Two locked threads, the calling goroutine's and one more, both pinned
// to CPU 0, hand a message back and forth n times in raw system calls
// (internal/rawloop, which `ctxlab selfcheck` runs too). With -runtime their
// waits go through the runtime's entersyscall/exitsyscall. With -proc (pipe
// only) the other side is a child process, rawloop again, started from the
// pinned thread so all its threads are on CPU 0.
//
// The same loops as benchmarks in a test binary read 5-8% (threads) and
// 6-10% (processes) slower than this on the VM the README was measured on,
// so the script uses this one.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/ctxlab/ctxlab/internal/rawloop"
)

func main() {
	if os.Getenv(echoEnv) != "" {
		rawloop.Echo()
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// echoEnv makes rawloop the child of -proc (rawloop.Echo).
const echoEnv = "RAWLOOP_ECHO"

// run is the command: 0 when the loop ran, 2 for bad arguments, 1 when
// the machine could not run it.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rawloop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mech := fs.String("mech", "pipe", "futex, eventfd or pipe")
	n := fs.Int("n", 200000, "round trips, 1.."+strconv.Itoa(math.MaxInt32))
	viaRuntime := fs.Bool("runtime", false, "wait through the Go runtime (unix.Syscall), not raw")
	proc := fs.Bool("proc", false, "the other side is a child process (this program again), pinned whole to CPU 0; -mech pipe only")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "rawloop: unexpected argument %q (the mechanism is -mech)\n", fs.Arg(0))
		return 2
	case *n < 1 || *n > math.MaxInt32:
		fmt.Fprintf(stderr, "rawloop: -n %d: want 1..%d round trips\n", *n, math.MaxInt32)
		return 2
	case *mech != "futex" && *mech != "eventfd" && *mech != "pipe":
		fmt.Fprintf(stderr, "rawloop: -mech %q: want futex, eventfd or pipe\n", *mech)
		return 2
	case *proc && *mech != "pipe":
		fmt.Fprintf(stderr, "rawloop: -proc with -mech %q: processes hand over through a pipe only\n", *mech)
		return 2
	}
	var d time.Duration
	var err error
	if *proc {
		d, err = processPingPong(uint32(*n), *viaRuntime)
	} else {
		d, err = rawloop.Loop(*mech, uint32(*n), 0, *viaRuntime)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rawloop:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%.1f ns/op\n", float64(d.Nanoseconds())/float64(*n))
	return 0
}

// processPingPong runs rawloop.ProcessLoop on CPU 0 with this program as
// the echoing child.
func processPingPong(n uint32, viaRuntime bool) (time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), echoEnv+"=1")
	cmd.Stderr = os.Stderr
	return rawloop.ProcessLoop(n, 0, viaRuntime, cmd)
}
