package exp

// Worker is the kind of worker a substrate runs an arm's ops on, the
// first thing a reader compares arms by: the report gives each kind one
// colour in every chart. Experiments share substrates (thread, goroutine,
// pythread …), so the kinds are declared here, once, for every substrate
// an arm may name (Substrates); a test keeps every planned arm's
// substrate declared.
type Worker int

// The kinds of worker.
const (
	WorkerOther     Worker = iota // the caller itself, a user's command: no handoff
	WorkerGoroutine               // goroutines on Go's scheduler
	WorkerThread                  // OS threads of this process
	WorkerProcess                 // child processes, Go's or a forked CPython's
	WorkerCPython                 // CPython threads and asyncio tasks
)

// Substrates are the substrates arms name (exp.Arm.Substrate), each with
// the kind of worker it runs on.
var Substrates = map[string]Worker{
	"caller":    WorkerOther,
	"goroutine": WorkerGoroutine,
	"thread":    WorkerThread,
	"process":   WorkerProcess,
	"pyprocess": WorkerProcess,
	"pythread":  WorkerCPython,
	"pytask":    WorkerCPython,
}

// SubstrateWorker is the kind of worker of substrate; WorkerOther for one
// not declared (a stored run's "command", an empty one).
func SubstrateWorker(substrate string) Worker { return Substrates[substrate] }

// conventionalSizeParams are the parameters taken for sizes in bytes in a
// run of no registered experiment, which declares none (diagnose --vary,
// whose parameters are the user's own variables): w, ws, size, bytes.
var conventionalSizeParams = []string{"w", "ws", "size", "bytes"}

// SizeParam says whether the parameter key of experiment's arms is a
// size in bytes (a working set): one the experiment declares in
// its Sizer hook, or, for a run of no registered experiment, one of the
// conventional names w, ws, size and bytes.
func SizeParam(experiment, key string) bool {
	if s, ok := Lookup(experiment); ok {
		z, sized := Hook[Sizer](s)
		return sized && contains(z.SizeParams(), key)
	}
	return contains(conventionalSizeParams, key)
}
