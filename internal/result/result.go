// Package result is ctxlab's result model: one versioned JSON document per run.
// It is a leaf package (no internal imports) so every other part can share it,
// and so stored or exported runs can be read back by any later ctxlab.
package result

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode"
	"unicode/utf8"
)

// SchemaVersion is bumped whenever a field changes meaning or is removed.
// Adding optional fields does not bump it. 2: an arm's status may be
// "too few ops" (StatusTooFewOps), which schema 1 recorded as "ok".
const SchemaVersion = 2

// Run is one invocation of ctxlab: the environment it saw and every arm it measured.
type Run struct {
	Schema      int       `json:"schema"`
	ID          string    `json:"id"`
	Time        time.Time `json:"time"`
	Version     string    `json:"ctxlab_version"`
	GoVersion   string    `json:"go_version"`
	CommandLine []string  `json:"command_line"`
	Suite       string    `json:"suite"` // "quick", "default", "full", "custom", or SuiteDiagnose
	Env         Env       `json:"env"`
	ClockCostNs float64   `json:"clock_cost_ns"` // cost of one timestamp read, calibrated at start
	Arms        []Arm     `json:"arms"`
	// SyscallNs is one raw getppid, and SyscallPathNs what Go's
	// runtime-aware path (entersyscall/exitsyscall) adds to it: what a Go
	// program pays on each blocking call (measure.SyscallPath says which
	// arms pay it).
	// Calibrated at start; absent in runs from before they were.
	SyscallNs     float64 `json:"syscall_ns,omitempty"`
	SyscallPathNs float64 `json:"syscall_path_ns,omitempty"`
	// Experiments holds each experiment's checks and findings over its arms.
	Experiments []Experiment `json:"experiments,omitempty"`
	Warnings    []string     `json:"warnings,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"` // stopped by a signal; Arms holds what finished
	// Records are a diagnose run's JSON records, as --format json writes
	// them (the profile, counters, rusage, the CPython probe's py-*
	// records, the price), each with its "kind"; absent from other runs.
	Records []json.RawMessage `json:"records,omitempty"`
}

// SuiteDiagnose is the suite of a run diagnose --vary stored: one arm
// per value of the user's command (experiment "diagnose").
const SuiteDiagnose = "diagnose"

// SuiteSelfcheck is the suite of a stored selfcheck: one arm per row.
const SuiteSelfcheck = "selfcheck"

// Kind is which stored runs a reference's "last" counts.
type Kind int

const (
	// AnyRun: every stored run (show).
	AnyRun Kind = iota
	// ExperimentRun: runs of the experiments, not diagnose's or
	// selfcheck's (compare, budget, report, export).
	ExperimentRun
	// DiagnoseRun: diagnose --vary's runs (compare last:T=2 last:T=32).
	DiagnoseRun
)

// String names the kind in words: "run", "run of the experiments", …
func (k Kind) String() string {
	switch k {
	case ExperimentRun:
		return "run of the experiments"
	case DiagnoseRun:
		return "diagnose --vary run"
	}
	return "run"
}

// Env is the machine as ctxlab saw it at the start of the run.
type Env struct {
	Hostname       string        `json:"hostname"`
	CPUModel       string        `json:"cpu_model"`
	LogicalCPUs    int           `json:"logical_cpus"`
	OnlineCPUs     []int         `json:"online_cpus"`
	Cores          int           `json:"physical_cores"`
	ThreadsPerCore int           `json:"threads_per_core"`
	Caches         []Cache       `json:"caches,omitempty"`
	Kernel         string        `json:"kernel"`
	GoVersion      string        `json:"go_version"`
	GOMAXPROCS     int           `json:"gomaxprocs"`
	CgoEnabled     string        `json:"cgo_enabled,omitempty"` // the build's CGO_ENABLED: "1" (glibc's rseq on every thread: thread and process handoffs read higher) or "0"
	Hypervisor     bool          `json:"hypervisor"`
	PerfParanoid   int           `json:"perf_event_paranoid"`
	Counters       []CounterInfo `json:"counters,omitempty"`
	CgroupVersion  int           `json:"cgroup_version,omitempty"`
	CPUQuota       string        `json:"cpu_quota"` // "max" (none), e.g. "200000 100000", or "unknown (<reason>)"
	SchedSliceNs   int64         `json:"sched_slice_ns,omitempty"`
	Scheduler      string        `json:"scheduler,omitempty"` // "EEVDF" or "CFS" where it can be told
	ThreadsMax     int64         `json:"threads_max,omitempty"`
	NprocLimit     int64         `json:"rlimit_nproc,omitempty"`
	MemAvailableB  int64         `json:"mem_available_bytes,omitempty"`
	Governor       string        `json:"cpufreq_governor,omitempty"`
	Load1          float64       `json:"load1"`
	StealPct       float64       `json:"steal_pct"` // since boot
	Notes          []string      `json:"notes,omitempty"`
	// Harness is the last selfcheck stored for this host when the run
	// began (absent when there is none, and in runs from before it).
	Harness *HarnessCheck `json:"harness_check,omitempty"`
}

// Cache is one CPU cache level as sysfs describes it.
type Cache struct {
	Level int    `json:"level"`
	Type  string `json:"type"`
	SizeB int64  `json:"size_bytes"`
	// SharedCPUs is how many CPUs share this cache (shared_cpu_list), 0
	// when not reported.
	SharedCPUs int `json:"shared_cpus,omitempty"`
}

// CounterInfo says whether one perf counter can be opened here, and why not.
type CounterInfo struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"` // "hardware" or "software"
	Supported   bool   `json:"supported"`
	Unsupported string `json:"unsupported,omitempty"` // the reason when not supported
}

// Arm is one measured configuration and its figures.
type Arm struct {
	Name       string            `json:"name"` // stable, e.g. "pingpong/thread/futex/cpus=same"
	Experiment string            `json:"experiment"`
	Substrate  string            `json:"substrate"`
	Mechanism  string            `json:"mechanism"`
	Params     map[string]string `json:"params,omitempty"`
	Op         string            `json:"op"`   // what one op is, e.g. "round trip"
	Unit       string            `json:"unit"` // "ns/op" unless the arm says otherwise
	GOMAXPROCS int               `json:"gomaxprocs"`
	Placement  string            `json:"placement"` // "unpinned", "same-cpu", "cross-cpu", …
	CPUs       []int             `json:"cpus,omitempty"`

	// DurationNs is the arm's wall time from set-up to teardown, warm-up
	// and sizing included: what measuring it cost.
	DurationNs int64 `json:"duration_ns,omitempty"`

	Status string `json:"status"` // "ok", "too few ops", "timed out", "failed", "unsupported", "skipped", "interrupted"
	Reason string `json:"reason,omitempty"`

	Ops      int64     `json:"ops_per_rep,omitempty"`
	RepMeans []float64 `json:"rep_means,omitempty"` // per-op mean of each repetition, in Unit
	// RepMetrics are other figures of each repetition, by metric name
	// (the unit in the name, "cpu-ns/op"), each list in RepMeans' order
	// and as long: what the bench format writes beside the time per op,
	// so benchstat compares them too. Only diagnose --vary sets them.
	RepMetrics  map[string][]float64 `json:"rep_metrics,omitempty"`
	Median      float64              `json:"median"`
	Min         float64              `json:"min"`
	Max         float64              `json:"max"`
	Percentiles *Percentiles         `json:"percentiles,omitempty"`
	Histogram   []Bucket             `json:"histogram,omitempty"`

	Switches   *Switches `json:"switches_per_op,omitempty"`
	Migrations *float64  `json:"migrations_per_op,omitempty"`
	Counters   []Counter `json:"counters,omitempty"`
	// CPUNsPerOp is the on-CPU time per op of every participating thread
	// and process together, over the timed repetitions (schedstat, or
	// getrusage for reaped children): what an op costs the machine, which
	// is more than its wall time when workers run in parallel and less
	// when they wait.
	CPUNsPerOp *float64 `json:"cpu_ns_per_op,omitempty"`
	// RunqNsPerOp is the participants' time per op spent runnable but
	// waiting for a CPU (schedstat run-queue wait).
	RunqNsPerOp *float64           `json:"runq_ns_per_op,omitempty"`
	Metrics     map[string]float64 `json:"metrics,omitempty"` // extra figures, names carry units

	Noise  Noise    `json:"noise"`
	Checks []Check  `json:"checks,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// SetMetric sets one of the arm's metrics, making the map on first use.
func (a *Arm) SetMetric(name string, v float64) {
	if a.Metrics == nil {
		a.Metrics = map[string]float64{}
	}
	a.Metrics[name] = v
}

// Percentiles of the sampled per-op latencies, in ns.
type Percentiles struct {
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	P999    float64 `json:"p99.9"`
	Max     float64 `json:"max"`
	// NearClock is set when p50 is below 10× the clock's own cost, so the
	// per-op percentiles are dominated by the timestamps themselves.
	NearClock bool `json:"near_clock,omitempty"`
}

// Bucket is one histogram bucket: samples with LowNs <= v < HighNs.
type Bucket struct {
	LowNs  float64 `json:"low_ns"`
	HighNs float64 `json:"high_ns"`
	Count  int64   `json:"count"`
}

// Switches are OS context switches per op, over every participating thread
// and child process.
type Switches struct {
	Voluntary   float64 `json:"voluntary"`
	Involuntary float64 `json:"involuntary"`
	// Children is the part of the above that happened in child processes.
	ChildVoluntary   float64 `json:"child_voluntary,omitempty"`
	ChildInvoluntary float64 `json:"child_involuntary,omitempty"`
}

// Total is voluntary plus involuntary switches per op.
func (s Switches) Total() float64 { return s.Voluntary + s.Involuntary }

// Counter is one perf counter's value per op, or why it is missing.
type Counter struct {
	Name string `json:"name"`
	// PerOp is set only when the counter was read: a supported counter
	// that counted nothing shows 0, an unsupported one has no value at all.
	PerOp       *float64 `json:"per_op,omitempty"`
	Unsupported string   `json:"unsupported,omitempty"`
}

// Noise records what could make the arm's figures unreliable.
type Noise struct {
	Noisy       bool     `json:"noisy"`
	Reasons     []string `json:"reasons,omitempty"`
	Spread      float64  `json:"spread"` // max/min of the repetition means
	Load1Before float64  `json:"load1_before"`
	Load1After  float64  `json:"load1_after"`
	StealPct    float64  `json:"steal_pct"` // during the arm
	Throttled   int64    `json:"throttled_periods,omitempty"`
	ThrottledUs int64    `json:"throttled_us,omitempty"`
}

// Experiment is the per-experiment part of a run: what an op is, the
// checks over its arms, and one-line readings of the figures.
type Experiment struct {
	Name     string   `json:"name"`
	Summary  string   `json:"summary,omitempty"`
	Op       string   `json:"op,omitempty"`
	Checks   []Check  `json:"checks,omitempty"`
	Findings []string `json:"findings,omitempty"`
	// Comparisons are the comparisons the verdict states, measured side
	// by side (runner: pairs).
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Check is a named invariant the experiment's model predicts, and whether it
// held on this machine. A failing check is information, not an error.
type Check struct {
	Name    string `json:"name"`
	Holds   bool   `json:"holds"`
	Skipped bool   `json:"skipped,omitempty"` // could not be evaluated (an arm missing)
	Detail  string `json:"detail"`
	// Arms the check was evaluated on.
	Arms []string `json:"arms,omitempty"`
}

// Status values of an arm.
const (
	StatusOK = "ok"
	// StatusTooFewOps: the arm ran to the end, but its repetitions held
	// fewer ops than the runner's minimum, so one slow op moves their
	// means. Its figures stay in the document as evidence and are never
	// shown as an answer (SPEC §2 rule 10); Reason says how many ops and
	// why no more fitted.
	StatusTooFewOps   = "too few ops"
	StatusTimedOut    = "timed out"
	StatusFailed      = "failed"
	StatusUnsupported = "unsupported"
	StatusSkipped     = "skipped"
	StatusInterrupted = "interrupted"
)

// HasFigure says whether the arm has a figure to show as an answer: a
// median from repetitions that finished, whether it ran to the end or
// kept the repetitions that did before it stopped, and never one from
// too few ops (StatusTooFewOps). Every reader that shows, compares or
// plots an arm's median asks this, so the rule lives here.
func (a Arm) HasFigure() bool {
	if a.Median <= 0 || a.Status == StatusTooFewOps {
		return false
	}
	return a.Status == StatusOK || len(a.RepMeans) > 0
}

// Write encodes the run as indented JSON.
func (r *Run) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MaxFileBytes bounds a run document: the largest real runs are a few MB.
const MaxFileBytes = 256 << 20

// maxIDLen bounds a run id (ctxlab's own are 22 characters).
const maxIDLen = 128

// Read decodes one run document and refuses anything that is not one: a
// schema outside 1..SchemaVersion, a missing or odd id, data after the
// document, or more than MaxFileBytes. It reads the names as they are:
// store.ReadRun, the reader of stored runs, maps those older ctxlab wrote.
func Read(rd io.Reader) (*Run, error) {
	var r Run
	lr := &io.LimitedReader{R: rd, N: MaxFileBytes + 1}
	dec := json.NewDecoder(lr)
	if err := dec.Decode(&r); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("decode run: larger than %d MiB; not a ctxlab run", MaxFileBytes>>20)
		}
		return nil, fmt.Errorf("decode run: %w", err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return nil, fmt.Errorf("decode run: more data after the run document; want exactly one JSON object")
	}
	if r.Schema == 0 {
		return nil, fmt.Errorf("decode run: not a ctxlab run (no schema field)")
	}
	if r.Schema < 1 || r.Schema > SchemaVersion {
		if r.Schema > SchemaVersion {
			return nil, fmt.Errorf("decode run: schema %d is newer than this ctxlab understands (%d)", r.Schema, SchemaVersion)
		}
		return nil, fmt.Errorf("decode run: schema %d; want 1..%d", r.Schema, SchemaVersion)
	}
	if r.ID == "" {
		return nil, fmt.Errorf("decode run: the run has no id")
	}
	if len(r.ID) > maxIDLen || !printableID(r.ID) {
		return nil, fmt.Errorf("decode run: id %q: want 1..%d printable characters", r.ID, maxIDLen)
	}
	return &r, nil
}

// printableID: letters, digits and punctuation, no spaces or control
// characters, so an id can be typed, and printed without escaping.
func printableID(id string) bool {
	for _, c := range id {
		if !unicode.IsGraphic(c) || unicode.IsSpace(c) {
			return false
		}
	}
	return utf8.ValidString(id)
}

// Find returns the arm with the given name, or nil.
func (r *Run) Find(name string) *Arm {
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i]
		}
	}
	return nil
}
