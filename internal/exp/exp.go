// Package exp defines what an experiment is — a Spec with its arms and
// checks — and the registry experiments add themselves to in init(). It
// holds no experiments itself; listings and "run all" derive from the table.
package exp

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"sort"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// ErrUnsupported is wrapped by errors that say an arm cannot run here.
var ErrUnsupported = errors.New("unsupported")

// ErrSkipped is wrapped by errors that say an arm was not run because
// something optional is missing here (no python3 on PATH): a note, not a failure.
var ErrSkipped = errors.New("skipped")

// Suite sizes: quick (≤ 30 s on 2 cores), default, full.
const (
	SuiteQuick   = "quick"
	SuiteDefault = "default"
	SuiteFull    = "full"
)

// Params are the run-wide settings an experiment builds its arms from.
type Params struct {
	Suite string
	// CPUs is the CPU set arms may use: --cpus, or every online CPU.
	CPUs []int
	// CPUsGiven is true when the user chose the set with --cpus.
	CPUsGiven bool
	// GOMAXPROCS values requested with --gomaxprocs; nil = experiment's default.
	GOMAXPROCS []int
	Host       *sysinfo.Host
	// Workers, Hogs: lists from --workers and --hogs; nil = defaults.
	Workers []int
	Hogs    []int
	// Python is the CPython the CPython arms drive (--python): a command or
	// path, or "all"; empty means python3.
	Python string
	// Options are the run's --set values, checked and parsed by their
	// declared Options (ParseSettings) before any arm is built.
	Options Settings
}

// Spec describes one experiment: what every experiment has. Each
// experiment file registers one, as a *Spec or as a type of its own that
// embeds Spec and implements the optional hooks (hooks.go) that one
// consumer each reads: its verdict, the arms price, serve and selfcheck
// read, the figures it derives.
type Spec struct {
	Name    string // "pingpong"; arms are named "pingpong/…"
	Summary string // one line for `ctxlab list`
	Op      string // what one op is, e.g. "round trip"
	// OpLabels name what one op of the arms is in one word, for serve's
	// "op" label, the first that names an arm winning (OpLabelOf).
	OpLabels []OpLabel
	// Doc is a longer description for `ctxlab list EXPERIMENT`.
	Doc string
	// Arms returns the configurations to measure for these params. An
	// error here is a usage error (bad worker count …): nothing has started.
	Arms func(p Params) ([]Arm, error)
	// Checks evaluates the experiment's invariants over its measured arms
	// (after Deriver's figures are added).
	Checks func(arms []result.Arm) []result.Check
	// Findings returns one-line readings of the results ("same CPU is 8× faster").
	Findings func(arms []result.Arm) []string
	// Metrics declares every figure the arms add to result.Arm.Metrics
	// (besides the runner's counter-derived ones, CounterMetrics).
	Metrics []Metric
	// Order places the experiment in listings, suites and reports
	// (ascending; equal orders by name).
	Order int
	// References are the published figures (SPEC §8) the report shows
	// beside the experiment's arms.
	References []Reference

	// impl is the value the spec was registered as (Bind), whose methods
	// Hook finds.
	impl Experiment
}

// Pair is one comparison the verdict states: arm A against arm B, whose
// ratio is A's figure over B's.
type Pair struct {
	Label string // "threads vs goroutines"
	A, B  string // the arms' names (ArmKey.String)
	// Builds makes the pair one per CPython version a run measured on
	// both builds (--python all): A is a CPython arm's plan name
	// (ArmKey.Plan), B is empty, and each comparison is that arm on the
	// free-threaded build against it on the GIL build (ExpandPairs).
	Builds bool
}

// HarnessRef is one arm beside the independent reference selfcheck
// measures it against, on the same CPU, in interleaved rounds.
type HarnessRef struct {
	Arm       string
	Reference HarnessReference
}

// HarnessReference is the kind of instrument a HarnessRef is held to.
type HarnessReference string

// The references selfcheck knows how to run.
const (
	RefChanLoop    HarnessReference = "testing.B loop at -cpu 1"        // built in
	RefRawFutex    HarnessReference = "raw futex loop (rawloop)"        // built in
	RefRawEventfd  HarnessReference = "raw eventfd loop (rawloop)"      // built in
	RefPerfThreads HarnessReference = "perf bench sched pipe -T"        // perf
	RefPerfProcess HarnessReference = "perf bench sched pipe"           // perf
	RefRawProcess  HarnessReference = "raw pipe loop, two Go processes" // built in
	RefPyChain     HarnessReference = "perf_counter loop of the chain"  // the run's python
	RefPyLookup    HarnessReference = "perf_counter loop of the lookup" // the run's python
	// The user's query (selfcheck --set db=… query=… args=…): the
	// application's own loop, and the same loop on an immutable URI. Rows
	// of these references exist only when the user gave a query.
	RefPyUserApp       HarnessReference = "perf_counter loop of sqlite3.connect(path)"
	RefPyUserImmutable HarnessReference = "perf_counter loop of an immutable connection"
)

// UserOnly is whether selfcheck holds the arm to this reference only when
// the user gave their own query.
func (r HarnessReference) UserOnly() bool { return r == RefPyUserApp || r == RefPyUserImmutable }

// Arm is one configuration the runner measures.
type Arm struct {
	Name       string
	Substrate  string
	Mechanism  string
	Op         string
	Unit       string // defaults to "ns/op"
	Params     map[string]string
	GOMAXPROCS int    // 0 = leave as is
	Placement  string // "unpinned", "same-cpu", "cross-cpu", …
	// CPUs confines the whole process for the arm (nil = the run's CPU set).
	CPUs []int
	// Quick marks arms in the quick suite.
	Quick bool
	// Unsupported, if set, says why the arm cannot run here; it is listed, not run.
	Unsupported string
	// Open sets the arm up outside any timing: it starts every worker,
	// child process and lazy state, so the first timed op pays for none of
	// it. What it returns is a Loop (the runner times it) or a SelfTimed
	// bench (the CPython driver), or a Gauge.
	Open func(ctx context.Context) (Bench, error)
	// Resolve, when set, finds what the arm needs from outside ctxlab (the
	// CPython arms' interpreter, which must be started to be asked) once a
	// run is validated and before any arm opens, so that listing and
	// selecting arms start nothing. Arms that need the same thing share one
	// answer. An error says the run cannot go as asked (an explicit
	// --python that is no CPython); Open resolves by itself where no one did.
	Resolve func(ctx context.Context) error
	// OneAtATime says the arm's set-up must not be live beside another
	// arm's (a CPython arm's busy threads spin while it is open): a
	// comparison of two such arms sets each up for its own turn (runner:
	// pairs).
	OneAtATime bool
	// Reps and BenchTime override the suite's defaults when non-zero.
	Reps int
	// Counters asks the runner to open perf counters for this arm even
	// without --counters (experiments whose report explains with them).
	Counters bool
	// Timeout, when non-zero and shorter than the run's --timeout, is this
	// arm's time limit (an arm expected to starve need not hold the suite up).
	Timeout time.Duration
}

// DirectRequest is what the runner asks of a self-timed arm once it has
// sized it: the timed repetitions, each of OpsPerRep ops, with every
// SampleEvery-th unit (SelfTiming.UnitOps ops) timed on its own.
type DirectRequest struct {
	Reps      int
	OpsPerRep int
	// SampleEvery is the sampling interval in units (0: time none alone).
	SampleEvery int
	// PerOpNs is the op's cost from the sizing batch, for the bench's own
	// notes on what its timestamps add.
	PerOpNs float64
}

// SelfTiming is how a self-timed bench times, which the runner's sizing
// and sampling rule needs to know: its runtime's clock, the ops one sample
// times, and its limits.
type SelfTiming struct {
	ClockNs float64 // cost of one clock reading in the bench's runtime
	UnitOps int     // ops one sample times (a ring's lap); 0 or 1: one op
	Sampled bool    // per-unit latencies mean something for this bench
	MinOps  int     // the fewest ops a timed repetition runs (0: no floor)
	// MaxSamples caps the latencies the bench can send back (0: the
	// runner's own cap).
	MaxSamples int
}

// DirectResult is what a self-timed arm measured over its timed
// repetitions; the runner turns it into the result model.
type DirectResult struct {
	RepMeans  []float64 // per-op mean of each repetition (batch timing), in ns
	OpsPerRep int64
	TotalOps  int64   // ops over all repetitions, the divisor of the counts below
	Samples   []int64 // sampled per-op latencies in ns
	// SampleEvery is the sampling interval (1 = every op; 0 = no samples).
	SampleEvery int
	// Switch counts over the timed repetitions, all participating threads
	// and children; Child* is the children's part.
	Voluntary, Involuntary           int64
	ChildVoluntary, ChildInvoluntary int64
	// Migrations over the repetitions, or -1 when not counted.
	Migrations int64
	// CPUNs is the CPU time of every participating thread over the
	// repetitions, nil when not counted.
	CPUNs   *int64
	Params  map[string]string  // added to the arm's params
	Metrics map[string]float64 // added to the arm's metrics
	Notes   []string
}

// Bench is an opened arm: it names who does the work and tears it down.
// Close must unblock a Run that is stuck (a starved partner) when called
// from another goroutine. An opened arm is either a Loop or a SelfTimed.
type Bench interface {
	// Participants are the OS threads and processes whose work the ops
	// are: the runner counts their switches, CPU time and migrations, and
	// --counters opens perf counters on exactly their threads.
	Participants() Participants
	Close() error
}

// Loop is a bench the runner times, as testing.B times a benchmark: Run
// does b.N ops under the runner's clock and reads no clock itself.
type Loop interface {
	Bench
	Run(b *measure.B) error
}

// TimedPhase is implemented by a Loop whose work changes once the timed
// repetitions begin (the starve shape starts its never-preempted hog only
// after a few timed samples, so warm-up and sizing see an unstarved
// timer). The runner calls StartTimed once, after warm-up and sizing and
// before the first timed repetition, with that repetition's op count; the
// bench never has to guess from its *measure.B whether it is being timed.
type TimedPhase interface {
	StartTimed(opsPerRep int)
}

// SelfTimed is a bench that times itself in another runtime (the CPython
// driver). The runner sizes it by the rule it sizes a Loop with: Start sets
// it up there and says how it times, Batch runs untimed batches for the
// warm-up and sizing, and Measure runs the timed repetitions the runner
// asks for and turns them into the result. Each must return when ctx is
// done.
type SelfTimed interface {
	Bench
	Start(ctx context.Context) (SelfTiming, error)
	// Batch runs n ops (a few more where the bench works in units) and
	// returns the ops done and the ns they took by the bench's clock.
	Batch(ctx context.Context, n int) (ops int, ns int64, err error)
	Measure(ctx context.Context, req DirectRequest) (*DirectResult, error)
}

// Gauge is a bench whose figure is a quantity, not a time (memory per
// idle worker): the runner asks it for one reading per repetition and
// summarises the readings like any figure: median, range, spread, noise.
type Gauge interface {
	Bench
	Read(ctx context.Context) (Reading, error)
}

// Reading is one repetition of a Gauge.
type Reading struct {
	Value float64 // in the arm's Unit
	Ops   int64   // what Value is per: the workers weighed
	// Metrics are figures taken with Value; the runner keeps each one's
	// median over the repetitions.
	Metrics map[string]float64
}

// Participants are who takes part in an arm's ops. The zero value is an
// explicit empty list: nothing is counted.
type Participants struct {
	// Process is every thread of ctxlab's own process, including threads
	// that exit during the arm: goroutine work runs on whatever OS thread
	// the Go scheduler picks, and the runtime's threads are part of it.
	Process bool
	// TIDs are threads of ctxlab's own process (Linux thread ids).
	TIDs []int
	// PIDs are child processes; every thread of each takes part.
	PIDs []int
	// Children is set when the ops start and reap short-lived child
	// processes (spawn): their switches and CPU time come from
	// getrusage(RUSAGE_CHILDREN), which counts every reaped child.
	Children bool
}

// Threads declares the given OS threads of this process.
func Threads(tids ...int) Participants { return Participants{TIDs: tids} }

// WholeProcess declares every thread of this process (goroutine arms).
func WholeProcess() Participants { return Participants{Process: true} }

// Analyzer is implemented by benches that derive figures or notes from
// what the runner recorded (quantum detection, memory per worker …): an
// analysis over the record, never a measurement of its own.
type Analyzer interface {
	Analyze(rec *Record, a *result.Arm)
}

// Record is what the runner's probes recorded over an arm's timed
// repetitions, handed to an Analyzer after the bench is closed.
type Record struct {
	Ops    int64 // timed ops over all repetitions
	WallNs int64 // timed wall time over all repetitions
	// Samples are the sampled per-op latencies in ns, ascending; every
	// SampleEvery-th op was sampled.
	Samples     []int64
	SampleEvery int
	// CPUNs and RunqNs are the participants' time on a CPU and waiting on a
	// run queue (schedstat); -1 where not measured.
	CPUNs, RunqNs int64
	// ThreadCPUNs is each declared thread's own share of CPUNs (by tid).
	ThreadCPUNs map[int]int64
	// SchedLatencies is the Go runtime's /sched/latencies:seconds histogram
	// over the timed repetitions (time goroutines waited to run); nil when
	// not read.
	SchedLatencies *metrics.Float64Histogram
}

var registry = map[string]*Spec{}

// Register adds an experiment (a *Spec, or a type that embeds Spec and
// implements hooks); it panics on a duplicate name (a programming error).
func Register(e Experiment) {
	s := Bind(e)
	if _, dup := registry[s.Name]; dup {
		panic("exp: duplicate experiment " + s.Name)
	}
	registry[s.Name] = s
}

// All returns the registered experiments in the order they declare
// (Spec.Order), equal orders by name: the order of listings and suites.
func All() []*Spec {
	out := make([]*Spec, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Lookup returns the experiment named name.
func Lookup(name string) (*Spec, bool) {
	s, ok := registry[name]
	return s, ok
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Selection is the experiments and arms a run will measure.
type Selection struct {
	Spec *Spec
	Arms []Arm
}

// Select resolves command-line patterns (experiment names, arm names or
// arm globs such as "pingpong/thread/*"; see Pattern) into arms, in the
// order experiments are first named. With no patterns it takes every
// experiment. In the quick suite only arms marked Quick are kept, unless a
// pattern names arms explicitly; a selector over one experiment
// ("python/pingpong") keeps its quick arms, as the experiment's name does,
// and is an error when it has none. An unknown name or a pattern matching
// nothing is an error naming the choices. A selector ("python") selects
// like an experiment's name, across every experiment.
func Select(patterns []string, p Params) ([]Selection, error) {
	ps, err := parsePicks(patterns)
	if err != nil {
		return nil, err
	}
	hits, inSuiteHits := map[string]int{}, map[string]int{}
	var out []Selection
	for _, name := range ps.order {
		s := registry[name]
		arms, err := s.Arms(p)
		if err != nil {
			return nil, err
		}
		if keep := ps.picks[name].keep(arms, p.Suite, hits, inSuiteHits); len(keep) > 0 {
			out = append(out, Selection{Spec: s, Arms: keep})
		}
	}
	for _, pat := range ps.pats {
		if err := unmatched(pat, hits[pat.String()], inSuiteHits[pat.String()]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pick is what the patterns ask of one experiment: all its arms (in the
// suite), those some patterns match, and those selectors match (like
// all, over the arms they match).
type pick struct {
	all  bool
	pats []Pattern
	sels []Pattern
}

// picks are the experiments the patterns name, in the order first named,
// and every pattern parsed.
type picks struct {
	picks map[string]*pick
	order []string
	pats  []Pattern
}

func (ps *picks) add(name string) *pick {
	if ps.picks[name] == nil {
		ps.picks[name] = &pick{}
		ps.order = append(ps.order, name)
	}
	return ps.picks[name]
}

// parsePicks reads the patterns into picks; no patterns is every
// experiment. An unknown experiment is an error naming the choices.
func parsePicks(patterns []string) (*picks, error) {
	ps := &picks{picks: map[string]*pick{}}
	if len(patterns) == 0 {
		for _, s := range All() {
			ps.add(s.Name).all = true
		}
	}
	for _, text := range patterns {
		pat, err := ParsePattern(text)
		if err != nil {
			return nil, err
		}
		name := pat.Experiment()
		switch _, known := registry[name]; {
		case pat.Selector() != "" && known: // "python/pingpong": like "pingpong", within the selector
			ps.add(name).sels = append(ps.add(name).sels, pat)
		case pat.Selector() != "" && name == "":
			for _, s := range All() {
				ps.add(s.Name).sels = append(ps.add(s.Name).sels, pat)
			}
		case known && text == name:
			ps.add(name).all = true
			continue
		case known:
			ps.add(name).pats = append(ps.add(name).pats, pat)
		case name != "":
			return nil, fmt.Errorf("unknown experiment or arm %q; experiments are %s%s (see `ctxlab list`)", text, strings.Join(names(), ", "), selectorsText())
		default: // a glob in the first part may select arms of any experiment
			for _, s := range All() {
				ps.add(s.Name).pats = append(ps.add(s.Name).pats, pat)
			}
		}
		ps.pats = append(ps.pats, pat)
	}
	return ps, nil
}

// keep is the arms of one experiment the pick selects in suite, counting
// each pattern's matches in hits (and, for selectors, those in the suite
// in inSuiteHits). In the quick suite only arms marked Quick are kept,
// unless a pattern names them.
func (pk *pick) keep(arms []Arm, suite string, hits, inSuiteHits map[string]int) []Arm {
	var keep []Arm
	for _, a := range arms {
		matched := false
		for _, pat := range pk.pats {
			if pat.Match(a.Name) {
				hits[pat.String()]++
				matched = true
			}
		}
		inSuite := suite != SuiteQuick || a.Quick
		for _, pat := range pk.sels {
			if pat.Match(a.Name) {
				hits[pat.String()]++
				if inSuite {
					inSuiteHits[pat.String()]++
				}
				matched = matched || inSuite
			}
		}
		if matched || pk.all && inSuite {
			keep = append(keep, a)
		}
	}
	return keep
}

// unmatched is the error for a pattern that matched n arms, inSuite of
// them in the suite: none at all, or, for a selector over one experiment,
// none in the quick suite; nil when it matched.
func unmatched(pat Pattern, n, inSuite int) error {
	if n > 0 {
		if pat.Selector() != "" && pat.Experiment() != "" && inSuite == 0 {
			return fmt.Errorf("%s selects %d arm(s), none of them in the quick suite; run it without --quick, or name arms (`ctxlab list %s` shows them)", pat, n, pat)
		}
		return nil
	}
	if name := pat.Experiment(); name != "" {
		return fmt.Errorf("no arm of %s matches %s; `ctxlab list %s` shows its arms", name, pat, name)
	}
	return fmt.Errorf("no arm matches %s; `ctxlab list` shows every arm", pat)
}

// Resolve runs the Resolve of every selected arm that has one, in order,
// and returns the first error: a run calls it once its request is valid,
// before the first arm opens.
func Resolve(ctx context.Context, sel []Selection) error {
	for _, s := range sel {
		for _, a := range s.Arms {
			if a.Resolve == nil {
				continue
			}
			if err := a.Resolve(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// selectorsText names the selectors for an error message.
func selectorsText() string {
	if len(selectors) == 0 {
		return ""
	}
	return "; selectors across experiments: " + strings.Join(Selectors(), ", ")
}

func names() []string {
	var out []string
	for _, s := range All() {
		out = append(out, s.Name)
	}
	return out
}
