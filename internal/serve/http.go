package serve

import (
	"html/template"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Limits of the HTTP side. Scrapes are small and quick; a client that is
// slower than these is dropped, not waited for.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	// idleTimeout closes kept-alive connections between scrapes; Prometheus
	// reconnects when it finds one closed.
	idleTimeout    = 30 * time.Second
	maxHeaderBytes = 16 << 10
	// fdReserve is what the probes and /proc reads may need besides
	// connections (pipes, eventfds, perf events, children's pidfds).
	fdReserve = 64
	maxConns  = 512
)

// httpServer returns the server for ln, with its timeouts, and ln wrapped
// so that connections stay within the file-descriptor limit.
func (s *Server) httpServer(ln net.Listener) (*http.Server, net.Listener) {
	cl := newConnCap(ln, connLimit())
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         cl.track,
	}
	return srv, cl
}

// connLimit is how many connections may be open at once: half of what
// RLIMIT_NOFILE leaves after fdReserve, at least 4, at most maxConns.
func connLimit() int {
	var rl unix.Rlimit
	n := maxConns
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur < uint64(2*maxConns+fdReserve) {
		n = (int(rl.Cur) - fdReserve) / 2
	}
	return max(n, 4)
}

// connCap is a listener that keeps at most max connections open. When
// full, a new connection takes the place of the connection that has been
// idle (between requests, or not yet sent one) the longest; if every
// connection is busy serving, the new one is closed. So clients that only
// hold connections open can neither exhaust file descriptors (which made
// every accept fail with EMFILE) nor lock scrapes out: unlike
// netutil.LimitListener, which queues new connections behind the idle
// ones until their timeouts run out.
type connCap struct {
	net.Listener
	max   int
	mu    sync.Mutex
	conns map[net.Conn]connInfo
}

type connInfo struct {
	busy  bool
	since time.Time
}

func newConnCap(ln net.Listener, max int) *connCap {
	return &connCap{Listener: ln, max: max, conns: map[net.Conn]connInfo{}}
}

func (l *connCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if len(l.conns) >= l.max {
			var victim net.Conn
			var oldest time.Time
			for vc, in := range l.conns {
				if !in.busy && (victim == nil || in.since.Before(oldest)) {
					victim, oldest = vc, in.since
				}
			}
			if victim == nil {
				l.mu.Unlock()
				c.Close()
				continue
			}
			delete(l.conns, victim)
			victim.Close()
		}
		l.conns[c] = connInfo{since: time.Now()}
		l.mu.Unlock()
		return c, nil
	}
}

// track follows each connection's state (http.Server.ConnState).
func (l *connCap) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.conns[c]; !ok {
		return
	}
	switch st {
	case http.StateActive:
		l.conns[c] = connInfo{busy: true, since: time.Now()}
	case http.StateIdle:
		l.conns[c] = connInfo{since: time.Now()}
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

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
