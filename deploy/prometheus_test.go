package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestPrometheusScrapesCtxlab runs the real thing: `ctxlab serve` on a
// loopback port, and Debian's prometheus scraping it every second with
// deploy/ctxlab.rules.yml loaded. Once Prometheus holds two scrapes taken
// after the first probe cycle, every expression of the Grafana dashboard
// must return at least one series, every rule must load and evaluate
// without error, and the same-CPU p99 alert's expression must evaluate
// over real series. Both processes are stopped by PID at the end.
func TestPrometheusScrapesCtxlab(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ctxlab serve and prometheus")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (apt-get install prometheus; .ci/run does): " + err.Error())
	}
	rules, _ := filepath.Abs("ctxlab.rules.yml")
	if promtool, err := exec.LookPath("promtool"); err == nil {
		out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool check rules: %v\n%s", err, out)
		}
	}
	dir := t.TempDir()
	ctxlabAddr, promAddr := freeAddr(t), freeAddr(t)

	// ctxlab serve, as a process of its own (this test binary acting as ctxlab).
	serve := exec.Command(os.Args[0], "-test.run=^$")
	serve.Env = append(os.Environ(), envCtxlabArgs+"="+strings.Join([]string{"serve", "--listen", ctxlabAddr,
		"--db", filepath.Join(dir, "history.db")}, "\x1f"))
	serveLog := logFile(t, "serve.log")
	serve.Stdout, serve.Stderr = serveLog, serveLog
	serve.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer stop(t, "ctxlab serve", serve, serveLog)

	// The first cycle: every probe has reported.
	deadline := time.Now().Add(40 * time.Second)
	var page map[string]bool
	for {
		page = families(ctxlabAddr)
		if page["ctxlab_op_seconds"] && page["ctxlab_history_last_save_success"] && countProbes(ctxlabAddr) > 0 && countProbes(ctxlabAddr) == countOps(ctxlabAddr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ctxlab serve: no complete probe cycle within 40 s; log:\n%s", readLog(serveLog))
		}
		time.Sleep(200 * time.Millisecond)
	}

	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: ctxlab
    static_configs:
      - targets: [%q]
`, rules, ctxlabAddr)), 0o644)
	prom := exec.Command(promBin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr, "--log.level=warn")
	promLog := logFile(t, "prometheus.log")
	prom.Stdout, prom.Stderr = promLog, promLog
	prom.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer stop(t, "prometheus", prom, promLog)
	api := "http://" + promAddr + "/api/v1/"

	// Two scrapes, and every rule evaluated at least once.
	deadline = time.Now().Add(30 * time.Second)
	for {
		res, err := query(api, `count_over_time(ctxlab_build_info{job="ctxlab"}[1m])`)
		if err == nil && len(res) > 0 && res[0].Value >= 2 && rulesEvaluated(api) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus: not two scrapes and one rule evaluation within 30 s (last error %v); log:\n%s", err, readLog(promLog))
		}
		time.Sleep(250 * time.Millisecond)
	}

	// Every dashboard expression returns data. A family that this host
	// cannot export at all (no cgroup cpu.stat, no /proc/…/sched) is
	// logged, not failed.
	exprs := dashboardExprs(t)
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions in the dashboard", len(exprs))
	}
	vars := strings.NewReplacer("$instance", ".*", "$job", ".*", "$experiment", ".*", "$arm", ".*", "$__rate_interval", "1m")
	for _, e := range exprs {
		q := vars.Replace(e)
		res, err := query(api, q)
		if err != nil {
			t.Errorf("dashboard expression %s: %v", q, err)
			continue
		}
		if len(res) == 0 {
			if missing := absent(q, page); missing != "" {
				t.Logf("dashboard expression %s: no series; this host does not export %s", q, missing)
				continue
			}
			t.Errorf("dashboard expression returns no series: %s", q)
		}
	}

	// The alert evaluates over real series: its selector has data, and the
	// whole expression runs (empty: nothing has doubled in two seconds).
	p99 := `ctxlab_op_seconds{experiment="pingpong", arm="thread/futex/same-cpu", quantile="0.99"}`
	if res, err := query(api, p99); err != nil || len(res) != 1 {
		t.Errorf("the alert's series %s: %d series, error %v", p99, len(res), err)
	}
	// ctxlab_op_seconds is one set of ops: the mean from _sum and _count
	// lies within its quantiles, for every probe. While serve is younger
	// than the quantiles' window (10m), the window holds every op, so the
	// mean since start is the mean of the ops the quantiles describe.
	assertMeanWithinQuantiles(t, api, `ctxlab_op_seconds_sum / ctxlab_op_seconds_count`)
	// The history (--db) alert's series: the first cycle was saved.
	saved := `ctxlab_history_last_save_success`
	if res, err := query(api, saved); err != nil || len(res) != 1 || res[0].Value != 1 {
		t.Errorf("%s: %v, error %v; want one series at 1", saved, res, err)
	}
	// …and the database it went into has a size.
	size := `ctxlab_history_db_bytes`
	if res, err := query(api, size); err != nil || len(res) != 1 || res[0].Value <= 0 {
		t.Errorf("%s: %v, error %v; want one series above 0", size, res, err)
	}
	for _, r := range rulesState(t, api) {
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("rule %s: health %q, error %q", r.Name, r.Health, r.LastError)
		}
		if r.Type == "alerting" {
			if _, err := query(api, r.Query); err != nil {
				t.Errorf("alert %s: its expression does not evaluate: %v", r.Name, err)
			}
		}
	}
}

// assertMeanWithinQuantiles checks, for every probe, that the mean the
// query gives lies between 0.9 × its p50 and 1.1 × its top quantile
// (issue 34's bound), and logs the three.
func assertMeanWithinQuantiles(t *testing.T, api, meanQuery string) {
	t.Helper()
	key := func(m map[string]string) string { return m["experiment"] + "/" + m["arm"] }
	byProbe := func(q string) map[string]float64 {
		res, err := query(api, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out := map[string]float64{}
		for _, r := range res {
			out[key(r.Metric)] = r.Value
		}
		return out
	}
	means := byProbe(meanQuery)
	p50 := byProbe(`ctxlab_op_seconds{quantile="0.5"}`)
	top := byProbe(`ctxlab_op_seconds{quantile="0.999"}`)
	if len(means) == 0 || len(means) != len(p50) {
		t.Errorf("%d probes with a mean, %d with a p50; want the same, at least one", len(means), len(p50))
	}
	for probe, mean := range means {
		lo, hi := 0.9*p50[probe], 1.1*top[probe]
		t.Logf("%s: mean %.4g s, p50 %.4g s, p99.9 %.4g s", probe, mean, p50[probe], top[probe])
		if !(mean >= lo && mean <= hi) {
			t.Errorf("%s: mean %.4g s outside [0.9 × p50, 1.1 × p99.9] = [%.4g, %.4g] s", probe, mean, lo, hi)
		}
	}
}

type sample struct {
	Metric map[string]string
	Value  float64
}

// query runs an instant query; an error is a PromQL or HTTP error.
func query(api, q string) ([]sample, error) {
	resp, err := http.Get(api + "query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("%s", body.Error)
	}
	var raw []struct {
		Metric map[string]string
		Value  [2]any
	}
	if body.Data.ResultType == "vector" {
		if err := json.Unmarshal(body.Data.Result, &raw); err != nil {
			return nil, err
		}
	} else {
		return nil, fmt.Errorf("result type %s, want vector", body.Data.ResultType)
	}
	var out []sample
	for _, r := range raw {
		var v float64
		if s, ok := r.Value[1].(string); ok {
			fmt.Sscan(s, &v)
		}
		out = append(out, sample{r.Metric, v})
	}
	return out, nil
}

type ruleState struct {
	Name, Query, Health, Type string
	LastError                 string `json:"lastError"`
	LastEvaluation            string `json:"lastEvaluation"`
}

func rulesState(t *testing.T, api string) []ruleState {
	t.Helper()
	rs, err := fetchRules(api)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("prometheus loaded no rules from deploy/ctxlab.rules.yml")
	}
	return rs
}

func fetchRules(api string) ([]ruleState, error) {
	resp, err := http.Get(api + "rules")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct{ Rules []ruleState }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var out []ruleState
	for _, g := range body.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

func rulesEvaluated(api string) bool {
	rs, err := fetchRules(api)
	if err != nil || len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if r.LastEvaluation == "" || strings.HasPrefix(r.LastEvaluation, "0001-") {
			return false
		}
	}
	return true
}

// dashboardExprs lists every target expression of the Grafana dashboard.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr != "" {
				out = append(out, tg.Expr)
			}
		}
	}
	return out
}

var metricName = regexp.MustCompile(`ctxlab_[a-z0-9_]+`)

// absent names a ctxlab family the expression uses that the exporter's
// page does not have at all ("" when it has them all).
func absent(expr string, page map[string]bool) string {
	for _, n := range metricName.FindAllString(expr, -1) {
		base := strings.TrimSuffix(strings.TrimSuffix(n, "_sum"), "_count")
		if !page[n] && !page[base] && (strings.HasPrefix(n, "ctxlab_cgroup_") || strings.HasPrefix(n, "ctxlab_migrations_")) {
			return n
		}
	}
	return ""
}

func scrapePage(addr string) ([]byte, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func parse(b []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

// families lists the metric families on ctxlab's page.
func families(addr string) map[string]bool {
	out := map[string]bool{}
	b, err := scrapePage(addr)
	if err != nil {
		return out
	}
	fams, err := parse(b)
	if err != nil {
		return out
	}
	for n := range fams {
		out[n] = true
	}
	return out
}

func countSeries(addr, family string) int {
	b, err := scrapePage(addr)
	if err != nil {
		return -1
	}
	fams, err := parse(b)
	if err != nil {
		return -1
	}
	return len(fams[family].GetMetric())
}

// countProbes is the probes configured; countOps those that have reported.
func countProbes(addr string) int { return countSeries(addr, "ctxlab_probe_cpu_seconds_total") }
func countOps(addr string) int    { return countSeries(addr, "ctxlab_probe_success") }

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// logFile is a child's stdout and stderr: a file, so no copying goroutine
// races with a test reading the log while the child still writes.
func logFile(t *testing.T, name string) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readLog(f *os.File) string {
	b, _ := os.ReadFile(f.Name())
	return string(b)
}

// stop ends a process started by the test by its PID: SIGTERM, then
// SIGKILL after 10 s, and always waits for it.
func stop(t *testing.T, name string, cmd *exec.Cmd, log *os.File) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case err := <-done:
		// serve's documented exception to the exit statuses: stopped by
		// its service manager it has done its job, and exits 0.
		if name == "ctxlab serve" && err != nil {
			t.Errorf("%s on SIGTERM: %v; want exit 0 (docs/contract.md). Log:\n%s", name, err, readLog(log))
		}
	case <-ctx.Done():
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Errorf("%s (pid %d) did not stop on SIGTERM within 10 s; killed. Log:\n%s", name, cmd.Process.Pid, readLog(log))
	}
}
