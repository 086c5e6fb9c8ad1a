// Package evade hides measuring calls where a check that matches calls by
// their spelling would miss them. TestMeasuringCheckSeesThroughAliases
// expects every evade* declaration to be caught, and no fine* one.
package evade

import (
	"os"
	"runtime/metrics"
	"syscall"
	stdtime "time"

	"github.com/ctxlab/ctxlab/internal/measure"
	ps "github.com/ctxlab/ctxlab/internal/procstat"
	"golang.org/x/sys/unix"
)

// an alias of the package-level root
func evadeRootAlias() {
	root := ps.DefaultRoot
	root.ReadTask(1, 1)
}

// a Root built by conversion, not named DefaultRoot
func evadeRootConversion() {
	ps.Root("/proc").ReadSched(1, 1)
}

// a method value
func evadeMethodValue() {
	read := ps.DefaultRoot.ReadTasks
	read(1)
}

// a method expression
func evadeMethodExpr() {
	ps.Root.ReadProc(ps.DefaultRoot, 1)
}

// a renamed import
func evadeRenamedImport() stdtime.Duration {
	return stdtime.Since(stdtime.Time{})
}

// a function held in a variable
func evadeFuncVar() int64 {
	now := measure.Now
	return now()
}

// a package-level variable holding a clock
var evadeClock = stdtime.Now

// a struct that embeds the root: a promoted method
type embeds struct{ ps.Root }

func evadePromoted(e embeds) {
	e.ReadTask(1, 1)
}

func evadeRusage() {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	var sru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &sru)
}

func evadeMetrics() {
	metrics.Read(nil)
}

func evadeParseSched() {
	ps.ParseSched(nil)
}

func evadeClockGettime() {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
}

func evadeSchedstatPath() string { return "/proc/self/schedstat" }

// a deadline, not a reading
func fineDeadline() bool {
	d := stdtime.Now().Add(stdtime.Second)
	return stdtime.Now().After(d)
}

// procstat methods that read no counts
func fineTaskState() {
	root := ps.DefaultRoot
	root.ReadTaskState(1, 1)
	root.TIDs(1)
	root.ReadSyscall(1, 1)
}

// a pinning helper of measure that reads nothing
func fineAffinity() {
	measure.Affinity()
}

// a child's rusage through os.ProcessState, held as a method value
func evadeProcessStateUsage(st *os.ProcessState) any {
	usage := st.SysUsage
	return usage()
}

// rusage by the back door: wait4's last argument
func evadeWait4() {
	var ru unix.Rusage
	var ws unix.WaitStatus
	unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
}

// a task's /proc stat file by literal
func evadeStatLiteral() string {
	return "/proc/self/task/1/stat"
}
