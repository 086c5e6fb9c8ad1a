package serve

import (
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Handler serves /metrics, /healthz and a small index page.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /{$}", s.index)
	return mux
}

// healthz is 200 while the exporter serves; 503 once it is shutting down,
// so a load balancer stops sending scrapes. A failing probe is not
// unhealthy: it is a measurement, reported as ctxlab_probe_success 0.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.stopping.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("stopping\n"))
		return
	}
	w.Write([]byte("ok\n"))
}

var indexTmpl = template.Must(template.New("index").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>ctxlab exporter</title>
<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 10px;text-align:left}th{border-bottom:1px solid #999}</style>
</head><body>
<h1>ctxlab exporter</h1>
<p>What switching between concurrent workers costs on this host, re-measured every {{.Interval}}
within {{.Budget}}% of one core. <a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a></p>
<table><tr><th>probe (arm)</th><th>status</th><th>mean</th><th>p99</th><th>switches/op</th><th>last run</th><th>CPU so far</th><th>skipped (budget)</th></tr>
{{range .Probes}}<tr><td>{{.Name}}</td><td>{{.Status}}</td><td>{{.Mean}}</td><td>{{.P99}}</td><td>{{.Switches}}</td><td>{{.LastRun}}</td><td>{{.CPU}}</td><td>{{.Skipped}}</td></tr>
{{end}}</table>
{{if .Unsupported}}<h2>Host signals not available here</h2><ul>{{range .Unsupported}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Notes}}<h2>Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p>ctxlab {{.Version}}, up {{.Uptime}}, {{.Cycles}} cycles.</p>
</body></html>
`))

type indexRow struct {
	Name, Status, Mean, P99, Switches, LastRun, CPU string
	Skipped                                         float64
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	var rows []indexRow
	for _, p := range s.metrics.Snapshots() {
		row := indexRow{Name: p.Name, Status: "not run yet", Mean: "—", P99: "—", Switches: "—", LastRun: "—",
			CPU: time.Duration(p.CPU * float64(time.Second)).Round(time.Millisecond).String(), Skipped: p.Skipped}
		if a := p.Last; a != nil {
			row.Status = a.Status
			if a.Reason != "" {
				row.Status += ": " + a.Reason
			}
			row.LastRun = p.LastRun.UTC().Format(time.RFC3339)
			if a.Status == result.StatusOK {
				row.Mean = result.FormatValue(a.Median, a.Unit)
				if a.Percentiles != nil {
					row.P99 = result.FormatValue(a.Percentiles.P99, a.Unit)
				}
				if a.Switches != nil {
					row.Switches = formatFloat(a.Switches.Total())
				}
			}
		}
		rows = append(rows, row)
	}
	var unsup []string
	for sig, why := range s.host.Unsupported {
		unsup = append(unsup, sig+": "+why)
	}
	sort.Strings(unsup)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	indexTmpl.Execute(w, map[string]any{
		"Interval": s.o.Interval, "Budget": s.o.BudgetPct, "Probes": rows, "Unsupported": unsup,
		"Notes": s.o.Notes, "Version": s.o.Version, "Uptime": time.Since(s.started).Round(time.Second),
		"Cycles": s.cycles.Load(),
	})
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
