package serve

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ctxlab/ctxlab/internal/cgroup"
	"github.com/ctxlab/ctxlab/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func fakeArms() []result.Arm {
	migr, runq := 0.25, 850.0
	return []result.Arm{
		{
			Name: "pingpong/thread/futex/cross-cpu", Experiment: "pingpong", Substrate: "thread", Mechanism: "futex", Op: "round trip", Unit: "ns/op",
			Placement: "cross-cpu", Status: result.StatusOK, Ops: 1000, RepMeans: []float64{5000, 5200, 5100},
			Median: 5100, Min: 5000, Max: 5200,
			Percentiles: &result.Percentiles{Samples: 3000, P50: 4800, P90: 6000, P95: 7000, P99: 12000, P999: 40000, Max: 90000},
			Switches:    &result.Switches{Voluntary: 2, Involuntary: 0.125},
			Migrations:  &migr,
			RunqNsPerOp: &runq,
			Noise:       result.Noise{Spread: 1.04},
		},
		{
			Name: "pingpong/goroutine/chan/gomaxprocs=1", Experiment: "pingpong", Substrate: "goroutine", Mechanism: "chan", Op: "round trip", Unit: "ns/op",
			Placement: "unpinned", Status: result.StatusOK, Ops: 100000, RepMeans: []float64{300, 310, 900},
			Median: 310, Min: 300, Max: 900,
			Percentiles: &result.Percentiles{Samples: 20000, P50: 250, P90: 300, P95: 320, P99: 500, P999: 2000, Max: 10000},
			Switches:    &result.Switches{},
			Noise:       result.Noise{Spread: 3, Noisy: true, Reasons: []string{"repetitions spread 3.00x"}},
		},
		{
			Name: "ring/thread/futex/n=2", Experiment: "ring", Substrate: "thread", Mechanism: "futex", Op: "hop", Unit: "ns/op", Placement: "unpinned",
			Status: result.StatusOK, Ops: 500, RepMeans: []float64{4000, 4000, 4000}, Median: 4000, Min: 4000, Max: 4000,
			Percentiles: &result.Percentiles{Samples: 1500, P50: 3900, P90: 4100, P95: 4200, P99: 5000, P999: 8000, Max: 9000},
			Noise:       result.Noise{Spread: 1},
		},
		{
			Name: "pingpong/process/pipe/unpinned", Experiment: "pingpong", Op: "round trip", Unit: "ns/op",
			Placement: "unpinned", Status: result.StatusTimedOut, Reason: "did not finish within 10s",
		},
	}
}

// fakeSamples stands for the sampled ops of a fake arm: as many as its
// percentiles say, spread as they say (just over half at p50, then p90,
// p95, p99, p99.9 and max), so the summary's quantiles land on the arm's own.
func fakeSamples(a result.Arm) Sampled {
	q := a.Percentiles
	if q == nil {
		return Sampled{}
	}
	n := int(q.Samples)
	at := func(share float64) int { return int(share * float64(n)) }
	var s Sampled
	for i := 0; i < n; i++ {
		v := q.Max
		switch {
		case i < at(0.52): // past each quantile's rank, so it lands on its own value
			v = q.P50
		case i < at(0.92):
			v = q.P90
		case i < at(0.96):
			v = q.P95
		case i < at(0.995):
			v = q.P99
		case i < n-1:
			v = q.P999
		}
		s.Ns = append(s.Ns, int64(v))
	}
	return s
}

func sumNs(s Sampled) float64 {
	var t float64
	for _, ns := range s.Ns {
		t += float64(ns)
	}
	return t
}

// goldenRegistry is a registry with fake probe results and the host
// collector reading the fixture /proc and a cgroup v1 directory.
func goldenRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	arms := fakeArms()
	var names []string
	for _, a := range arms {
		names = append(names, a.Name)
	}
	m := NewMetrics(names, time.Minute, 0.54, "1.2.3-test", "go-test")
	end := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, a := range arms {
		m.Record(a, Run{Wall: time.Duration(i+1) * 100 * time.Millisecond, CPU: 0.01 * float64(i+1), End: end, Over: i == 3,
			NextBench: 5 * time.Millisecond, Samples: fakeSamples(a)})
	}
	m.Skip("pingpong/process/pipe/unpinned")
	h := NewCgroupCollector(cgroup.Dir{Version: 1, Path: "testdata/cgroup/v1"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, h)
	return reg
}

func render(t *testing.T, reg *prometheus.Registry) []byte {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatalf("encode: %v", err)
		}
	}
	return buf.Bytes()
}

func TestMetricsGolden(t *testing.T) {
	got := render(t, goldenRegistry(t))
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("metrics page differs from %s (rerun with -update if intended):\n%s", golden, lineDiff(string(want), string(got)))
	}
}

// TestMetricsParse reads the page back as Prometheus would, and checks
// the families, types and labels the dashboards rely on.
func TestMetricsParse(t *testing.T) {
	page := render(t, goldenRegistry(t))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	wantType := map[string]dto.MetricType{
		"ctxlab_op_seconds":                         dto.MetricType_SUMMARY,
		"ctxlab_op_mean_seconds":                    dto.MetricType_GAUGE,
		"ctxlab_op_max_seconds":                     dto.MetricType_GAUGE,
		"ctxlab_switch_cost_seconds":                dto.MetricType_GAUGE,
		"ctxlab_switches_per_op":                    dto.MetricType_GAUGE,
		"ctxlab_runqueue_wait_per_switch_seconds":   dto.MetricType_GAUGE,
		"ctxlab_probe_success":                      dto.MetricType_GAUGE,
		"ctxlab_probe_duration_seconds":             dto.MetricType_GAUGE,
		"ctxlab_probe_noisy":                        dto.MetricType_GAUGE,
		"ctxlab_probe_cpu_seconds_total":            dto.MetricType_COUNTER,
		"ctxlab_probe_runs_total":                   dto.MetricType_COUNTER,
		"ctxlab_budget_exceeded_total":              dto.MetricType_COUNTER,
		"ctxlab_probe_skipped_total":                dto.MetricType_COUNTER,
		"ctxlab_cgroup_cpu_throttled_seconds_total": dto.MetricType_COUNTER,
	}
	for name, typ := range wantType {
		f, ok := fams[name]
		if !ok {
			t.Errorf("family %s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is %v, want %v", name, f.GetType(), typ)
		}
	}
	// node_exporter's job is not repeated.
	for name := range fams {
		if strings.HasPrefix(name, "ctxlab_host_") {
			t.Errorf("%s: a host-wide signal node_exporter already exports", name)
		}
	}
	// Every probe has a success metric; only the timed-out one is 0.
	success := map[string]float64{}
	for _, m := range fams["ctxlab_probe_success"].GetMetric() {
		success[label(m, "experiment")+"/"+label(m, "arm")] = m.GetGauge().GetValue()
	}
	if len(success) != 4 || success["pingpong/process/pipe/unpinned"] != 0 || success["pingpong/thread/futex/cross-cpu"] != 1 {
		t.Errorf("ctxlab_probe_success = %v; want 4 arms, the timed-out one 0", success)
	}
	// One latency family for every probe that finished: the two round-trip
	// arms and the hop arm, five quantiles each, labelled by what the arm is.
	ops := fams["ctxlab_op_seconds"].GetMetric()
	if len(ops) != 3 {
		t.Fatalf("ctxlab_op_seconds has %d series, want 3", len(ops))
	}
	for _, m := range ops {
		s := m.GetSummary()
		if len(s.GetQuantile()) != 5 {
			t.Errorf("%s: %d quantiles, want 5", label(m, "arm"), len(s.GetQuantile()))
		}
		if label(m, "arm") == "thread/futex/cross-cpu" {
			if s.GetSampleCount() != 3000 {
				t.Errorf("count = %d, want the 3000 sampled round trips", s.GetSampleCount())
			}
			if want := sumNs(fakeSamples(fakeArms()[0])) / 1e9; abs(s.GetSampleSum()-want) > 1e-9 {
				t.Errorf("sum = %g s, want %g", s.GetSampleSum(), want)
			}
			for k, want := range map[string]string{"experiment": "pingpong", "substrate": "thread", "mechanism": "futex",
				"placement": "cross-cpu", "op": "roundtrip"} {
				if got := label(m, k); got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}
		}
		if label(m, "arm") == "thread/futex/n=2" && label(m, "op") != "hop" {
			t.Errorf("ring arm: op label %q, want hop", label(m, "op"))
		}
	}
	checkPage(t, fams)
	// Per-switch cost: the futex arm's mean over its 2.125 switches; not for
	// the goroutine arm (no OS switch per op).
	cost := map[string]float64{}
	for _, m := range fams["ctxlab_switch_cost_seconds"].GetMetric() {
		cost[label(m, "arm")] = m.GetGauge().GetValue()
	}
	if len(cost) != 1 || abs(cost["thread/futex/cross-cpu"]-5100e-9/2.125) > 1e-15 {
		t.Errorf("switch cost = %v, want only thread/futex/cross-cpu at %g s", cost, 5100e-9/2.125)
	}
	if got := fams["ctxlab_cgroup_cpu_quota_cores"].GetMetric()[0].GetGauge().GetValue(); got != 0.5 {
		t.Errorf("quota = %v cores, want 0.5", got)
	}
	// Units are in the names: every ctxlab family that is a time ends in _seconds or _seconds_total.
	for name := range fams {
		if strings.Contains(name, "time") && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_seconds_total") {
			t.Errorf("%s: a time without its unit in the name", name)
		}
	}
}

// checkPage asserts what a PromQL user relies on, on any page: HELP on
// every family, no label value over MaxLabelLen, one-word op and status
// labels, and every summary's mean (_sum/_count) between its p50 and its
// max (the matching ctxlab_op_max_seconds).
func checkPage(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	maxOf := map[string]float64{}
	for _, m := range fams["ctxlab_op_max_seconds"].GetMetric() {
		maxOf[label(m, "experiment")+"/"+label(m, "arm")] = m.GetGauge().GetValue()
	}
	for name, f := range fams {
		if f.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if len(l.GetValue()) > MaxLabelLen {
					t.Errorf("%s{%s=%q}: label value of %d characters, want ≤ %d", name, l.GetName(), l.GetValue(), len(l.GetValue()), MaxLabelLen)
				}
				if (l.GetName() == "op" || l.GetName() == "status") && strings.ContainsAny(l.GetValue(), " /()") {
					t.Errorf("%s: %s label %q is not one word", name, l.GetName(), l.GetValue())
				}
			}
			s := m.GetSummary()
			if f.GetType() != dto.MetricType_SUMMARY || s.GetSampleCount() == 0 {
				continue
			}
			mean := s.GetSampleSum() / float64(s.GetSampleCount())
			var p50 float64
			for _, q := range s.GetQuantile() {
				if q.GetQuantile() == 0.5 {
					p50 = q.GetValue()
				}
			}
			id := label(m, "experiment") + "/" + label(m, "arm")
			mx, ok := maxOf[id]
			if !ok {
				t.Errorf("%s %s: a summary without its ctxlab_op_max_seconds", name, id)
				continue
			}
			if mean < p50 || mean > mx {
				t.Errorf("%s %s: _sum/_count = %g s, not between p50 %g s and max %g s", name, id, mean, p50, mx)
			}
		}
	}
}

// scrapeMetrics renders m's page and parses it back as Prometheus would.
func scrapeMetrics(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(render(t, reg)))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func TestMetricsAccumulate(t *testing.T) {
	a := fakeArms()[0]
	m := NewMetrics([]string{a.Name}, time.Minute, 1, "v", "go")
	m.Record(a, Run{Wall: time.Second, CPU: 0.5, End: time.Now(), NextBench: time.Millisecond, Samples: fakeSamples(a)})
	m.Record(a, Run{Wall: time.Second, CPU: 0.25, End: time.Now(), Over: true, NextBench: time.Millisecond, Samples: fakeSamples(a)})
	fams := scrapeMetrics(t, m)
	if got := fams["ctxlab_op_seconds"].GetMetric()[0].GetSummary().GetSampleCount(); got != 6000 {
		t.Errorf("summary count after two runs = %d, want 6000 (2 × 3000 samples)", got)
	}
	if got := fams["ctxlab_probe_cpu_seconds_total"].GetMetric()[0].GetCounter().GetValue(); got != 0.75 {
		t.Errorf("probe cpu = %v, want 0.75", got)
	}
	if got := fams["ctxlab_budget_exceeded_total"].GetMetric()[0].GetCounter().GetValue(); got != 1 {
		t.Errorf("exceeded = %v, want 1", got)
	}
	if got := fams["ctxlab_probe_runs_total"].GetMetric()[0].GetCounter().GetValue(); got != 2 {
		t.Errorf("runs = %v, want 2", got)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// lineDiff lists the lines only in want (-) or only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// TestDeployFilesNameRealMetrics keeps the Grafana dashboard, the
// Prometheus rules and the manual honest: every ctxlab_* name they use is
// one the exporter describes (names after a ':' are recording rules' own).
func TestDeployFilesNameRealMetrics(t *testing.T) {
	known := map[string]bool{}
	ch := make(chan *prometheus.Desc, 100)
	NewMetrics(nil, time.Minute, 1, "v", "go").Describe(ch)
	NewCgroupCollector(cgroup.Dir{}).Describe(ch)
	for _, c := range harnessMetrics(&result.HarnessCheck{}) {
		c.Describe(ch)
	}
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			known[m[1]] = true
		}
	}
	if len(known) < 20 {
		t.Fatalf("only %d metric names described", len(known))
	}
	name := regexp.MustCompile(`(?:^|[^:a-z0-9_])(ctxlab_[a-z0-9_]*[a-z0-9])\b`)
	for _, file := range []string{"../../deploy/grafana-dashboard.json", "../../deploy/ctxlab.rules.yml", "../../docs/serve.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		// The table of names from the previous release names gone metrics
		// on purpose; everything else must name live ones.
		if i := strings.Index(text, "### Renamed from the previous release"); i >= 0 {
			if j := strings.Index(text[i:], "\n## "); j >= 0 {
				text = text[:i] + text[i+j:]
			}
		}
		used := name.FindAllStringSubmatch(text, -1)
		if len(used) == 0 {
			t.Fatalf("%s names no ctxlab metric", file)
		}
		for _, m := range used {
			n := m[1]
			base := strings.TrimSuffix(strings.TrimSuffix(n, "_sum"), "_count")
			if !known[n] && !known[base] {
				t.Errorf("%s uses %s, which the exporter does not export", file, n)
			}
		}
	}
}

// The history metrics appear only with --db: both results and the pruned
// count from the start, the last save's time and the database's size once
// a save succeeded (the size is the last successful save's).
func TestMetricsHistory(t *testing.T) {
	a := fakeArms()[0]
	m := NewMetrics([]string{a.Name}, time.Minute, 1, "v", "go")
	for name := range scrapeMetrics(t, m) {
		if strings.HasPrefix(name, "ctxlab_history_") {
			t.Errorf("%s without --db", name)
		}
	}
	m.history = true
	fams := scrapeMetrics(t, m)
	if got := len(fams["ctxlab_history_saves_total"].GetMetric()); got != 2 {
		t.Errorf("%d saves_total series before any save, want 2 (ok and failed, at 0)", got)
	}
	if fams["ctxlab_history_last_save_timestamp_seconds"] != nil || fams["ctxlab_history_last_save_success"] != nil || fams["ctxlab_history_db_bytes"] != nil {
		t.Error("a last save or a database size before any save")
	}
	if f := fams["ctxlab_history_pruned_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 0 {
		t.Errorf("pruned_total before any save: %v, want 0", f)
	}
	value := func(fams map[string]*dto.MetricFamily, name string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Fatalf("%s: %v, want one series", name, f)
		}
		if c := f.GetMetric()[0].GetCounter(); c != nil {
			return c.GetValue()
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	at := time.Unix(1_800_000_000, 0)
	m.RecordSave(at, Saved{Pruned: 3, DBBytes: 40960}, nil)
	fams = scrapeMetrics(t, m)
	if got := value(fams, "ctxlab_history_last_save_success"); got != 1 {
		t.Errorf("last_save_success after a save = %v, want 1", got)
	}
	if got := value(fams, "ctxlab_history_db_bytes"); got != 40960 {
		t.Errorf("db_bytes after a save = %v, want 40960", got)
	}
	// The prune ran before the save failed: those cycles are gone. The
	// failed save's size is not the history's.
	m.RecordSave(at.Add(time.Minute), Saved{Pruned: 2, DBBytes: 8192}, errors.New("disk full"))
	fams = scrapeMetrics(t, m)
	if got := value(fams, "ctxlab_history_pruned_total"); got != 5 {
		t.Errorf("pruned_total = %v, want 5 (3 + 2)", got)
	}
	if got := value(fams, "ctxlab_history_db_bytes"); got != 40960 {
		t.Errorf("db_bytes after a failed save = %v, want the last successful save's 40960", got)
	}
	saves := fams["ctxlab_history_saves_total"].GetMetric()
	if len(saves) != 2 {
		t.Fatalf("%d saves_total series, want 2", len(saves))
	}
	for _, s := range saves {
		if got := s.GetCounter().GetValue(); got != 1 {
			t.Errorf("saves_total{status=%q} = %v, want 1", label(s, "status"), got)
		}
	}
	if got := value(fams, "ctxlab_history_last_save_success"); got != 0 {
		t.Errorf("last_save_success after a failure = %v, want 0", got)
	}
	if got := value(fams, "ctxlab_history_last_save_timestamp_seconds"); got != 1.8e9 {
		t.Errorf("last save = %v, want the successful save's time 1.8e9", got)
	}
	// A save that could not size the file leaves the last size.
	m.RecordSave(at.Add(2*time.Minute), Saved{}, nil)
	if got := value(scrapeMetrics(t, m), "ctxlab_history_db_bytes"); got != 40960 {
		t.Errorf("db_bytes after a save of unknown size = %v, want the last known 40960", got)
	}
	m.RecordSave(at.Add(3*time.Minute), Saved{DBBytes: 49152}, nil)
	if got := value(scrapeMetrics(t, m), "ctxlab_history_db_bytes"); got != 49152 {
		t.Errorf("db_bytes after a later save = %v, want 49152", got)
	}
}

// TestOpSummaryIsOneSetOfOps: ctxlab_op_seconds' quantiles, _sum and
// _count describe the same observations. Two runs, one fast and one slow:
// the mean of both must lie within the quantiles of both. Before, the
// quantiles were the last run's and _sum/_count every run's, so the mean
// (550 ns) fell below 0.9 × the last run's p50 (1 µs).
func TestOpSummaryIsOneSetOfOps(t *testing.T) {
	a := fakeArms()[0]
	m := NewMetrics([]string{a.Name}, time.Minute, 1, "v", "go")
	run := func(ns int64, n int) Run {
		s := Sampled{}
		for range n {
			s.Ns = append(s.Ns, ns)
		}
		return Run{End: time.Now(), Samples: s}
	}
	fast, slow := a, a
	fast.Percentiles = &result.Percentiles{Samples: 1000, P50: 100, P90: 100, P95: 100, P99: 100, P999: 100, Max: 100}
	slow.Percentiles = &result.Percentiles{Samples: 1000, P50: 1000, P90: 1000, P95: 1000, P99: 1000, P999: 1000, Max: 1000}
	m.Record(fast, run(100, 1000))
	m.Record(slow, run(1000, 1000))
	ops := scrapeMetrics(t, m)["ctxlab_op_seconds"].GetMetric()
	if len(ops) != 1 {
		t.Fatalf("%d series, want 1", len(ops))
	}
	s := ops[0].GetSummary()
	if s.GetSampleCount() != 2000 {
		t.Errorf("count %d, want both runs' 2000 ops", s.GetSampleCount())
	}
	mean := s.GetSampleSum() / float64(s.GetSampleCount())
	var p50, top float64
	for _, q := range s.GetQuantile() {
		if q.GetQuantile() == 0.5 {
			p50 = q.GetValue()
		}
		top = max(top, q.GetValue())
	}
	if mean < 0.9*p50 || mean > 1.1*top {
		t.Errorf("mean %g s outside [0.9 × p50 %g, 1.1 × top quantile %g]", mean, p50, top)
	}
	if top < 1000e-9*0.99 || p50 > 1000e-9 {
		t.Errorf("quantiles p50 %g, top %g: want them over both runs' ops", p50, top)
	}
	if w := OpWindow(time.Minute); w != 10*time.Minute {
		t.Errorf("window at a 1m interval: %v, want 10m", w)
	}
	if w := OpWindow(time.Hour); w != 2*time.Hour {
		t.Errorf("window at a 1h interval: %v, want 2h", w)
	}
}
