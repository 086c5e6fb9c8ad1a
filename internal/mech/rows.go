package mech

import (
	"fmt"
	"os"
	"sort"
)

// A mechanism is one row: its name and the traits experiments and tests
// select it by, registered in init() by the file that implements it,
// beside its constructors. Experiments derive their arm lists, checks and
// findings from the rows (pingpong carries every row on every substrate
// it names), so adding a mechanism is its file and its row
// (docs/layout.md, "How to add a mechanism").

// Wait is where a side waiting for its partner waits: the kernel or user
// space (the Go scheduler, or spinning on the hardware).
type Wait int

// The places a waiting side waits.
const (
	// WaitGo parks the goroutine in the Go scheduler (user space); a
	// locked thread under it sleeps in the runtime's own futex.
	WaitGo Wait = iota
	// WaitKernel sleeps in a system call until the partner's wakes it.
	WaitKernel
	// WaitSpin spins in user space on a shared cache line: no system
	// call and no switch while the partner runs on another CPU.
	WaitSpin
)

// Kernel says whether the handoff goes through the kernel.
func (w Wait) Kernel() bool { return w == WaitKernel }

func (w Wait) String() string {
	return [...]string{"Go scheduler", "kernel", "spin"}[w]
}

// Trip is what a round trip between two OS threads (or a thread and a
// process), unpinned, should cost in OS switches: the mechanism's claim
// that pingpong checks.
type Trip int

// The switch costs of a round trip.
const (
	// TripUnchecked: the Go runtime decides how its threads hand over
	// (a channel or cond between locked threads); nothing is claimed.
	TripUnchecked Trip = iota
	// TripBlocks: each side sleeps once a round trip, ≈ 2 switches.
	TripBlocks
	// TripMayFindPosted: each side checks a shared word before it
	// sleeps and may find the reply already there, 1–2 switches.
	TripMayFindPosted
	// TripSpins: neither side sleeps, no switch.
	TripSpins
)

// The substrates a row may name in On: who the two workers are.
const (
	SubGoroutine = "goroutine" // two goroutines on Go's scheduler (NewPair)
	SubThread    = "thread"    // two locked OS threads of one process (NewPair, StartThread)
	SubProcess   = "process"   // a locked thread and a ctxlab child process (ParentEnd, ChildEnd)
)

// Substrate is one of the substrates above and its traits.
type Substrate struct {
	Name string
	// Kernel: each worker is an OS thread the kernel schedules; false for
	// goroutines, which the Go scheduler moves between its threads.
	Kernel bool
	// CrossesProcess: the two workers are in two processes.
	CrossesProcess bool
	// Locked: each worker of this side is a goroutine locked to its own OS thread.
	Locked bool
}

// Substrates are the substrates mechanisms connect, in the order arms list them.
func Substrates() []Substrate {
	return []Substrate{
		{Name: SubGoroutine},
		{Name: SubThread, Kernel: true, Locked: true},
		{Name: SubProcess, Kernel: true, CrossesProcess: true, Locked: true},
	}
}

// SubstrateOf is substrate's row; ok false for one mech does not make
// (CPython's, a user's command).
func SubstrateOf(name string) (Substrate, bool) {
	for _, s := range Substrates() {
		if s.Name == name {
			return s, true
		}
	}
	return Substrate{}, false
}

// Row is a mechanism and its traits.
type Row struct {
	Name string
	// Order places the row among the others in every list (arms, docs).
	Order int
	// Wait is where a waiting side waits (kernel or user space).
	Wait Wait
	// On are the substrates every experiment that pairs workers over
	// each mechanism (pingpong) carries this one on.
	On []string
	// Locked: each side must be its own locked OS thread, on its own CPU
	// (a spinning side never gives the CPU to its partner): refused
	// where both would share one CPU.
	Locked bool
	// Trip is what a round trip should cost in OS switches.
	Trip Trip
	// Value: Recv returns the value sent; false for a wake-up count or
	// sequence number (futex, eventfd), which is all a handoff needs.
	Value bool
	// Summary is one line for docs and listings.
	Summary string
}

// Carries says whether the row names substrate in On.
func (r Row) Carries(substrate string) bool {
	for _, s := range r.On {
		if s == substrate {
			return true
		}
	}
	return false
}

var rows = map[string]Row{}

// register declares row with its constructors: pair connects two workers
// of one process (nil if the row is on no such substrate), process two
// processes (nil if not on SubProcess). A row on a substrate without its
// constructor, or registered twice, is a programming error.
func register(row Row, pair func() (*Pair, error), process *processKind) {
	if _, dup := rows[row.Name]; dup {
		panic(fmt.Sprintf("mech: %q registered twice", row.Name))
	}
	inProcess := row.Carries(SubGoroutine) || row.Carries(SubThread)
	if inProcess != (pair != nil) || row.Carries(SubProcess) != (process != nil) {
		panic(fmt.Sprintf("mech: %q: its substrates %v and its constructors disagree", row.Name, row.On))
	}
	rows[row.Name] = row
	if pair != nil {
		threadKinds[row.Name] = pair
	}
	if process != nil {
		processKinds[row.Name] = *process
	}
}

// Rows are the registered mechanisms in their Order.
func Rows() []Row {
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}

// On are the rows carried on substrate, in their Order.
func On(substrate string) []Row {
	var out []Row
	for _, r := range Rows() {
		if r.Carries(substrate) {
			out = append(out, r)
		}
	}
	return out
}

// RowOf is the row of mechanism name; ok false for one not registered
// (CPython's mechanisms, a user's command).
func RowOf(name string) (Row, bool) {
	r, ok := rows[name]
	return r, ok
}

// processKindOf is a helper for a row's registration.
func processKindOf(parent func() (Endpoint, func(), []*os.File, func() error, error), child func([]*os.File) (Endpoint, error)) *processKind {
	return &processKind{parent: parent, child: child}
}
