package serve

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Metric names carry their unit; the arm is a label, so one query compares
// an arm across a fleet. Round-trip arms report as ctxlab_roundtrip_*,
// other ops (hops, yields, …) as ctxlab_op_* with an "op" label.
var (
	descRoundTrip = prometheus.NewDesc("ctxlab_roundtrip_seconds",
		"Round-trip latency of the last probe run: quantiles over sampled round trips; _sum and _count accumulate every timed round trip since start.",
		[]string{"arm", "placement"}, nil)
	descRoundTripMean = prometheus.NewDesc("ctxlab_roundtrip_mean_seconds",
		"Mean round trip of the last probe run (median of the repetitions' batch-timed means).",
		[]string{"arm", "placement"}, nil)
	descRoundTripMax = prometheus.NewDesc("ctxlab_roundtrip_max_seconds",
		"Slowest sampled round trip of the last probe run.",
		[]string{"arm", "placement"}, nil)
	descOp = prometheus.NewDesc("ctxlab_op_seconds",
		"Per-op latency of the last probe run for arms whose op is not a round trip.",
		[]string{"arm", "op", "placement"}, nil)
	descOpMean = prometheus.NewDesc("ctxlab_op_mean_seconds",
		"Mean per-op time of the last probe run for arms whose op is not a round trip.",
		[]string{"arm", "op", "placement"}, nil)
	descSwitches = prometheus.NewDesc("ctxlab_switches_per_op",
		"OS context switches per op in the last probe run, over every participating thread and child.",
		[]string{"arm", "kind"}, nil)
	descMigrations = prometheus.NewDesc("ctxlab_migrations_per_op",
		"CPU migrations per op in the last probe run (from /proc/<pid>/task/<tid>/sched).",
		[]string{"arm"}, nil)
	descSpread = prometheus.NewDesc("ctxlab_probe_spread_ratio",
		"Max/min of the repetitions' means in the last probe run.",
		[]string{"arm"}, nil)
	descNoisy = prometheus.NewDesc("ctxlab_noisy",
		"1 when the last probe run was flagged noisy (wide spread, steal, load or throttling).",
		[]string{"arm"}, nil)
	descSuccess = prometheus.NewDesc("ctxlab_probe_success",
		"1 when the last probe run finished, 0 when it failed, timed out or could not run.",
		[]string{"arm"}, nil)
	descDuration = prometheus.NewDesc("ctxlab_probe_duration_seconds",
		"Wall time of the last probe run, set-up and teardown included.",
		[]string{"arm"}, nil)
	descLastRun = prometheus.NewDesc("ctxlab_probe_last_run_timestamp_seconds",
		"Unix time the last probe run ended.",
		[]string{"arm"}, nil)
	descBenchTime = prometheus.NewDesc("ctxlab_probe_benchtime_seconds",
		"Target time of one repetition for the probe's next run, as sized by the CPU budget.",
		[]string{"arm"}, nil)
	descRuns = prometheus.NewDesc("ctxlab_probe_runs_total",
		"Probe runs by outcome (ok, failed, timed out, unsupported).",
		[]string{"arm", "status"}, nil)
	descSkipped = prometheus.NewDesc("ctxlab_probe_skipped_total",
		"Probe runs skipped to keep within the CPU budget.",
		[]string{"arm"}, nil)
	descProbeCPU = prometheus.NewDesc("ctxlab_probe_cpu_seconds_total",
		"CPU time spent by probe runs (user+system, this process and its reaped children).",
		[]string{"arm"}, nil)
	descExceeded = prometheus.NewDesc("ctxlab_budget_exceeded_total",
		"Probe runs that used more CPU than their share of the budget.",
		[]string{"arm"}, nil)
	descBudget = prometheus.NewDesc("ctxlab_budget_cpu_seconds",
		"CPU time all probes together may use per interval (the budget times the interval, less the exporter's reserve).",
		nil, nil)
	descInterval = prometheus.NewDesc("ctxlab_probe_interval_seconds",
		"Time between the starts of two probe cycles.",
		nil, nil)
	descInfo = prometheus.NewDesc("ctxlab_build_info",
		"Always 1; the ctxlab and Go versions are labels.",
		[]string{"version", "goversion"}, nil)
)

// probeState is what the exporter knows of one probe between runs.
type probeState struct {
	name     string
	last     *result.Arm // nil until the first run
	duration float64
	lastRun  time.Time
	cpu      float64
	runs     map[string]float64
	skipped  float64
	exceeded float64
	bench    time.Duration
	// count and sum accumulate every timed op (for the summary's _count/_sum).
	count uint64
	sum   float64
}

// Metrics holds the latest probe results and turns them into Prometheus
// metrics at scrape time. It is safe for concurrent use: the scheduler
// writes, scrapes read.
type Metrics struct {
	mu        sync.Mutex
	probes    map[string]*probeState
	order     []string
	budget    float64
	interval  time.Duration
	version   string
	goVersion string
}

// NewMetrics makes the probe collector for these probe names.
func NewMetrics(names []string, interval time.Duration, budgetPerCycle float64, version, goVersion string) *Metrics {
	m := &Metrics{probes: map[string]*probeState{}, budget: budgetPerCycle, interval: interval, version: version, goVersion: goVersion}
	for _, n := range names {
		m.probes[n] = &probeState{name: n, runs: map[string]float64{}}
		m.order = append(m.order, n)
	}
	return m
}

// Record stores a finished probe run.
func (m *Metrics) Record(a result.Arm, wall time.Duration, cpu float64, end time.Time, over bool, nextBench time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.probes[a.Name]
	if p == nil {
		return
	}
	a2 := a
	p.last = &a2
	p.duration = wall.Seconds()
	p.lastRun = end
	p.cpu += cpu
	p.runs[a.Status]++
	if over {
		p.exceeded++
	}
	p.bench = nextBench
	if a.Unit == "ns/op" && a.Ops > 0 {
		for _, mean := range a.RepMeans {
			p.count += uint64(a.Ops)
			p.sum += mean * float64(a.Ops) / 1e9
		}
	}
}

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
		out = append(out, Snapshot{Name: n, Last: p.last, LastRun: p.lastRun, Duration: p.duration, CPU: p.cpu, Skipped: p.skipped})
	}
	return out
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRoundTrip, descRoundTripMean, descRoundTripMax, descOp, descOpMean,
		descSwitches, descMigrations, descSpread, descNoisy, descSuccess, descDuration, descLastRun, descBenchTime,
		descRuns, descSkipped, descProbeCPU, descExceeded, descBudget, descInterval, descInfo} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descInfo, 1, m.version, m.goVersion)
	gauge(descInterval, m.interval.Seconds())
	gauge(descBudget, m.budget)
	for _, n := range m.order {
		p := m.probes[n]
		counter(descProbeCPU, p.cpu, n)
		counter(descSkipped, p.skipped, n)
		counter(descExceeded, p.exceeded, n)
		if p.bench > 0 {
			gauge(descBenchTime, p.bench.Seconds(), n)
		}
		statuses := make([]string, 0, len(p.runs))
		for s := range p.runs {
			statuses = append(statuses, s)
		}
		sort.Strings(statuses)
		for _, s := range statuses {
			counter(descRuns, p.runs[s], n, s)
		}
		a := p.last
		if a == nil {
			continue
		}
		gauge(descSuccess, b2f(a.Status == result.StatusOK), n)
		gauge(descDuration, p.duration, n)
		gauge(descLastRun, float64(p.lastRun.UnixNano())/1e9, n)
		if a.Status != result.StatusOK {
			continue
		}
		gauge(descNoisy, b2f(a.Noise.Noisy), n)
		if a.Noise.Spread > 0 {
			gauge(descSpread, a.Noise.Spread, n)
		}
		if a.Switches != nil {
			gauge(descSwitches, a.Switches.Voluntary, n, "voluntary")
			gauge(descSwitches, a.Switches.Involuntary, n, "involuntary")
		}
		if a.Migrations != nil {
			gauge(descMigrations, *a.Migrations, n)
		}
		if a.Unit != "ns/op" {
			continue // not a time: no latency metrics
		}
		pl := a.Placement
		if a.Op == "round trip" {
			gauge(descRoundTripMean, a.Median/1e9, n, pl)
			if q := a.Percentiles; q != nil {
				ch <- prometheus.MustNewConstSummary(descRoundTrip, p.count, p.sum, quantiles(q), n, pl)
				gauge(descRoundTripMax, q.Max/1e9, n, pl)
			}
		} else {
			gauge(descOpMean, a.Median/1e9, n, a.Op, pl)
			if q := a.Percentiles; q != nil {
				ch <- prometheus.MustNewConstSummary(descOp, p.count, p.sum, quantiles(q), n, a.Op, pl)
			}
		}
	}
}

func quantiles(q *result.Percentiles) map[float64]float64 {
	return map[float64]float64{0.5: q.P50 / 1e9, 0.9: q.P90 / 1e9, 0.95: q.P95 / 1e9, 0.99: q.P99 / 1e9, 0.999: q.P999 / 1e9}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
