package serve

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Label sets. Every probe metric carries the experiment and the arm (the
// arm's name without the experiment); latency metrics also carry what the
// arm is made of, so a query can select by substrate, mechanism or placement.
var (
	probeLabels   = []string{"experiment", "arm"}
	latencyLabels = []string{"experiment", "arm", "substrate", "mechanism", "placement", "op"}
	switchLabels  = []string{"experiment", "arm", "substrate", "mechanism", "placement"}
)

// Metric names carry their unit (base units: seconds), counters end in
// _total, and HELP says what one op is.
var (
	descOpMean = prometheus.NewDesc("ctxlab_op_mean_seconds",
		"Mean time of one op in the last probe run, from batch timing of every op (median of 3 repetitions' means): the figure to compare across hosts.",
		latencyLabels, nil)
	descOpMax = prometheus.NewDesc("ctxlab_op_max_seconds",
		"Slowest sampled op of the last probe run.",
		latencyLabels, nil)
	descSwitchCost = prometheus.NewDesc("ctxlab_switch_cost_seconds",
		"Mean op time per OS context switch on this host: the last run's mean op time divided by its OS switches per op (every participating thread and child). It holds the system calls and wake-ups around each switch, so it is an upper bound on the bare switch, and a figure to rank hosts by. Only for probes without CPU hogs that switch at least once per op; placement same-cpu = both threads on one CPU, cross-cpu = one CPU each. The thread futex same-cpu series is the cost per switch the verdict, budget, watch and diagnose price with (where wall time is CPU time).",
		switchLabels, nil)
	descSwitches = prometheus.NewDesc("ctxlab_switches_per_op",
		"OS context switches per op in the last probe run, over every participating thread and child (kind: voluntary or involuntary).",
		append(probeLabels[:2:2], "kind"), nil)
	descMigrations = prometheus.NewDesc("ctxlab_migrations_per_op",
		"CPU migrations per op in the last probe run (from /proc/<pid>/task/<tid>/sched).",
		probeLabels, nil)
	descRunqWait = prometheus.NewDesc("ctxlab_runqueue_wait_per_switch_seconds",
		"Time the probe's participating threads and child processes waited runnable on a run queue, per OS context switch, over the last run's timed repetitions (schedstat): the CPU contention the probe met.",
		probeLabels, nil)
	descSpread = prometheus.NewDesc("ctxlab_probe_spread_ratio",
		"Max/min of the repetitions' mean op times in the last probe run.",
		probeLabels, nil)
	descNoisy = prometheus.NewDesc("ctxlab_probe_noisy",
		"1 when the last probe run was flagged noisy (wide spread, steal, load or throttling), else 0.",
		probeLabels, nil)
	descSuccess = prometheus.NewDesc("ctxlab_probe_success",
		"1 when the last probe run finished, 0 when it failed, timed out or could not run.",
		probeLabels, nil)
	descDuration = prometheus.NewDesc("ctxlab_probe_duration_seconds",
		"Wall time of the last probe run, set-up and teardown included.",
		probeLabels, nil)
	descLastRun = prometheus.NewDesc("ctxlab_probe_last_run_timestamp_seconds",
		"Unix time the last probe run ended.",
		probeLabels, nil)
	descBenchTime = prometheus.NewDesc("ctxlab_probe_benchtime_seconds",
		"Target time of one repetition for the probe's next run, as sized by the CPU budget.",
		probeLabels, nil)
	descRuns = prometheus.NewDesc("ctxlab_probe_runs_total",
		"Probe runs by outcome (status: ok, toofewops, failed, timedout, unsupported).",
		append(probeLabels[:2:2], "status"), nil)
	descSkipped = prometheus.NewDesc("ctxlab_probe_skipped_total",
		"Probe runs put off to keep the exporter within its CPU budget.",
		probeLabels, nil)
	descProbeCPU = prometheus.NewDesc("ctxlab_probe_cpu_seconds_total",
		"CPU time of probe runs (user+system of this process and its reaped children, set-up included).",
		probeLabels, nil)
	descExceeded = prometheus.NewDesc("ctxlab_budget_exceeded_total",
		"Probe runs that used more CPU than their share of the budget; the next run is shortened, or put off.",
		probeLabels, nil)
	descBudget = prometheus.NewDesc("ctxlab_budget_cpu_seconds",
		"CPU time the whole exporter may use per interval (--cpu-budget times the interval); probes are put off when the exporter's CPU since start would pass the budget's share.",
		nil, nil)
	descSelfCPU = prometheus.NewDesc("ctxlab_exporter_cpu_seconds_total",
		"CPU time of the whole exporter since start: user+system of this process and its reaped children (probe partners and hogs), what the budget is held to.",
		nil, nil)
	descInterval = prometheus.NewDesc("ctxlab_probe_interval_seconds",
		"Time between the starts of two probe cycles.",
		nil, nil)
	descHistorySaves = prometheus.NewDesc("ctxlab_history_saves_total",
		"Attempts to save a probe cycle in the history database (--db), by status (ok, failed: the error is logged); only with --db.",
		[]string{"status"}, nil)
	descHistoryLastOK = prometheus.NewDesc("ctxlab_history_last_save_success",
		"1 if the last attempt to save a probe cycle in the history database (--db) succeeded, 0 if it failed; only with --db, once one was made.",
		nil, nil)
	descHistoryLastSave = prometheus.NewDesc("ctxlab_history_last_save_timestamp_seconds",
		"Unix time a probe cycle was last saved in the history database (--db); only with --db, once one was.",
		nil, nil)
	descHistoryPruned = prometheus.NewDesc("ctxlab_history_pruned_total",
		"Probe cycles deleted from the history database (--db) for being older than --db-retention; only with --db.",
		nil, nil)
	descHistoryBytes = prometheus.NewDesc("ctxlab_history_db_bytes",
		"Size on disk of the history database (--db), with any write-ahead log and shared-memory file left beside it, after the last successful save: it levels off once --db-retention deletes as much as each cycle adds; only with --db, once a save succeeded.",
		nil, nil)
	descInfo = prometheus.NewDesc("ctxlab_build_info",
		"Always 1; the ctxlab and Go versions are labels.",
		[]string{"version", "goversion"}, nil)
)

// Sampled is the per-op latency samples of one probe run, in ns: every one
// goes into ctxlab_op_seconds, whose quantiles, _sum and _count therefore
// describe the same ops.
type Sampled struct {
	Ns []int64
}

// OpWindow is how far back ctxlab_op_seconds' quantiles reach: 10 minutes,
// or two intervals when they are longer, so a window always holds a run.
func OpWindow(interval time.Duration) time.Duration { return max(10*time.Minute, 2*interval) }

// opObjectives are the summary's quantiles and their allowed rank error.
var opObjectives = map[float64]float64{0.5: 0.005, 0.9: 0.001, 0.95: 0.001, 0.99: 0.0005, 0.999: 0.0001}

// newOpSummary is ctxlab_op_seconds: a summary fed by every sampled op of
// every run, so that its quantiles (over the sliding OpWindow) and its
// _sum and _count (every sampled op since start, as Prometheus counts
// them) describe one set of observations: rate(_sum[w]) / rate(_count[w])
// over w = the window is the mean of the ops the quantiles come from.
func newOpSummary(interval time.Duration) *prometheus.SummaryVec {
	w := OpWindow(interval)
	return prometheus.NewSummaryVec(prometheus.SummaryOpts{
		Name: "ctxlab_op_seconds",
		Help: "Latency of one sampled op of a probe (op label: roundtrip = a value sent to the partner and back; hop, yield … as `ctxlab list EXPERIMENT` says), every sampled op of every run observed. Quantiles: over the last " +
			result.ShortDuration(w) + " (10m, or two --interval when longer); _sum and _count: every sampled op since start, so rate(_sum[" + result.ShortDuration(w) + "]) / rate(_count[" + result.ShortDuration(w) + "]) is the mean of the ops the quantiles describe. The last run alone: ctxlab_op_mean_seconds, ctxlab_op_max_seconds.",
		Objectives: opObjectives,
		MaxAge:     w,
		AgeBuckets: 5,
	}, latencyLabels)
}

// Run is what the scheduler knows of one finished probe run besides the result.
type Run struct {
	Wall      time.Duration
	CPU       float64 // CPU seconds, self and reaped children
	End       time.Time
	Over      bool          // over its share of the budget
	NextBench time.Duration // the budget's size for the next run
	Samples   Sampled       // zero when the samples could not be read
}

// probeState is what the exporter knows of one probe between runs.
type probeState struct {
	experiment, arm string
	last            *result.Arm // nil until the first run
	run             Run
	cpu             float64
	runs            map[string]float64
	skipped         float64
	exceeded        float64
	bench           time.Duration
}

// Metrics holds the latest probe results and turns them into Prometheus
// metrics at scrape time. It is safe for concurrent use: the scheduler
// writes, scrapes read.
type Metrics struct {
	mu        sync.Mutex
	ops       *prometheus.SummaryVec // ctxlab_op_seconds, fed in Record
	probes    map[string]*probeState
	order     []string
	budget    float64
	interval  time.Duration
	version   string
	goVersion string
	// selfCPU reads the exporter's CPU seconds; nil leaves the metric out.
	selfCPU func() float64
	// history is set when cycles are saved (--db): saves counts them by
	// result and lastSave is the last that succeeded; pruned counts the
	// cycles retention deleted and dbBytes is the database's size after
	// the last successful save that knew it (0: none yet).
	history  bool
	saves    map[string]float64
	lastOK   *bool
	lastSave time.Time
	pruned   float64
	dbBytes  int64
}

// NewMetrics makes the probe collector for these probe names (full arm
// names); budgetPerCycle is the CPU seconds the exporter may use per interval.
func NewMetrics(names []string, interval time.Duration, budgetPerCycle float64, version, goVersion string) *Metrics {
	m := &Metrics{ops: newOpSummary(interval), probes: map[string]*probeState{}, budget: budgetPerCycle, interval: interval, version: version, goVersion: goVersion}
	for _, n := range names {
		e, a := splitName(n)
		m.probes[n] = &probeState{experiment: e, arm: a, runs: map[string]float64{}}
		m.order = append(m.order, n)
	}
	return m
}

// Record stores a finished probe run.
func (m *Metrics) Record(a result.Arm, r Run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.probes[a.Name]
	if p == nil {
		return
	}
	a2 := a
	p.last = &a2
	p.run = r
	p.cpu += r.CPU
	p.runs[statusLabel(a.Status)]++
	if r.Over {
		p.exceeded++
	}
	p.bench = r.NextBench
	if a.Status == result.StatusOK && a.Unit == "ns/op" && len(r.Samples.Ns) > 0 {
		obs := m.ops.WithLabelValues(latencyValues(&a)...)
		for _, ns := range r.Samples.Ns {
			obs.Observe(float64(ns) / 1e9)
		}
	}
}

// RecordSave counts one probe cycle written to the history database, or
// not (err), and what the save deleted and left on disk.
func (m *Metrics) RecordSave(at time.Time, s Saved, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saves == nil {
		m.saves = map[string]float64{}
	}
	// A save that failed after its prune still deleted those cycles.
	m.pruned += float64(s.Pruned)
	ok := err == nil
	m.lastOK = &ok
	if !ok {
		m.saves["failed"]++
		return
	}
	m.saves["ok"]++
	m.lastSave = at
	if s.DBBytes > 0 { // a size not known leaves the last one
		m.dbBytes = s.DBBytes
	}
}

// statusLabel makes a result status one word ("timed out" → "timedout").
func statusLabel(s string) string { return strings.ReplaceAll(s, " ", "") }

// Skip counts a run left out to keep within the budget.
func (m *Metrics) Skip(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.probes[name]; p != nil {
		p.skipped++
	}
}

// SetBenchTime records a probe's planned repetition time (before its first run).
func (m *Metrics) SetBenchTime(name string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.probes[name]; p != nil {
		p.bench = d
	}
}

// Snapshot is a copy of one probe's state for the index page.
type Snapshot struct {
	Name     string
	Last     *result.Arm
	LastRun  time.Time
	Duration float64
	CPU      float64
	Skipped  float64
}

// Snapshots returns every probe's state in probe order.
func (m *Metrics) Snapshots() []Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Snapshot
	for _, n := range m.order {
		p := m.probes[n]
		out = append(out, Snapshot{Name: n, Last: p.last, LastRun: p.run.End, Duration: p.run.Wall.Seconds(), CPU: p.cpu, Skipped: p.skipped})
	}
	return out
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.ops.Describe(ch)
	for _, d := range []*prometheus.Desc{descOpMean, descOpMax, descSwitchCost, descSwitches, descMigrations,
		descRunqWait, descSpread, descNoisy, descSuccess, descDuration, descLastRun, descBenchTime, descRuns,
		descSkipped, descProbeCPU, descExceeded, descBudget, descSelfCPU, descInterval, descInfo,
		descHistorySaves, descHistoryLastOK, descHistoryLastSave, descHistoryPruned, descHistoryBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := emitter{ch}
	e.gauge(descInfo, 1, m.version, m.goVersion)
	e.gauge(descInterval, m.interval.Seconds())
	e.gauge(descBudget, m.budget)
	if m.selfCPU != nil {
		e.counter(descSelfCPU, m.selfCPU())
	}
	if m.history {
		m.collectHistory(e)
	}
	for _, n := range m.order {
		m.probes[n].collect(e)
	}
	m.ops.Collect(ch)
}

// emitter sends const metrics to a scrape.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (e emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	e.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// collectHistory: the saves to the history database (--db).
func (m *Metrics) collectHistory(e emitter) {
	// Both from the start. The alert reads last_save_success: a scrape
	// that comes after the first cycle would see a first failure as a
	// counter already at 1, which increase() misses.
	e.counter(descHistorySaves, m.saves["ok"], "ok")
	e.counter(descHistorySaves, m.saves["failed"], "failed")
	if m.lastOK != nil {
		e.gauge(descHistoryLastOK, b2f(*m.lastOK))
	}
	if !m.lastSave.IsZero() {
		e.gauge(descHistoryLastSave, float64(m.lastSave.UnixNano())/1e9)
	}
	e.counter(descHistoryPruned, m.pruned)
	if m.dbBytes > 0 {
		e.gauge(descHistoryBytes, float64(m.dbBytes))
	}
}

// collect: one probe's metrics, its budget and runs, then those of its
// last run.
func (p *probeState) collect(e emitter) {
	ex, arm := p.experiment, p.arm
	e.counter(descProbeCPU, p.cpu, ex, arm)
	e.counter(descSkipped, p.skipped, ex, arm)
	e.counter(descExceeded, p.exceeded, ex, arm)
	if p.bench > 0 {
		e.gauge(descBenchTime, p.bench.Seconds(), ex, arm)
	}
	statuses := make([]string, 0, len(p.runs))
	for s := range p.runs {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		e.counter(descRuns, p.runs[s], ex, arm, s)
	}
	if p.last != nil {
		p.collectLast(e)
	}
}

// collectLast: the figures of the probe's last run.
func (p *probeState) collectLast(e emitter) {
	a, ex, arm := p.last, p.experiment, p.arm
	e.gauge(descSuccess, b2f(a.Status == result.StatusOK), ex, arm)
	e.gauge(descDuration, p.run.Wall.Seconds(), ex, arm)
	e.gauge(descLastRun, float64(p.run.End.UnixNano())/1e9, ex, arm)
	if a.Status != result.StatusOK {
		return
	}
	e.gauge(descNoisy, b2f(a.Noise.Noisy), ex, arm)
	if a.Noise.Spread > 0 {
		e.gauge(descSpread, a.Noise.Spread, ex, arm)
	}
	if a.Switches != nil {
		e.gauge(descSwitches, a.Switches.Voluntary, ex, arm, "voluntary")
		e.gauge(descSwitches, a.Switches.Involuntary, ex, arm, "involuntary")
	}
	if a.Migrations != nil {
		e.gauge(descMigrations, *a.Migrations, ex, arm)
	}
	if a.RunqNsPerOp != nil && a.Switches != nil && a.Switches.Total() > 0 {
		e.gauge(descRunqWait, *a.RunqNsPerOp/1e9/a.Switches.Total(), ex, arm)
	}
	if a.Unit != "ns/op" {
		return // not a time: no latency metrics
	}
	lv := latencyValues(a)
	e.gauge(descOpMean, a.Median/1e9, lv...)
	// Per switch by the rule every command prices a switch with
	// (price.PerSwitch): only where the op is a bare handoff, since with a
	// CPU hog in the arm the op time holds the hog's slices too. The
	// same-cpu futex series is the figure the verdict, watch and diagnose
	// print for a run.
	if ns, ok := price.PerSwitch(*a); ok {
		e.gauge(descSwitchCost, ns/1e9, lv[:5]...)
	}
	if q := a.Percentiles; q != nil {
		e.gauge(descOpMax, q.Max/1e9, lv...)
	}
}

// latencyValues are an arm's values of latencyLabels.
func latencyValues(a *result.Arm) []string {
	e, arm := splitName(a.Name)
	return []string{e, arm, a.Substrate, a.Mechanism, a.Placement, opLabel(a)}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
