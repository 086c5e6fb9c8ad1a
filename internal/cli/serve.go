package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/serve"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// ServeOptions are the flags of `ctxlab serve`.
type ServeOptions struct {
	Listen       string
	AllowRemote  bool
	Interval     time.Duration
	Probes       []string
	BudgetPct    float64
	ProbeTimeout time.Duration
	Verbose      bool
	// DB, when set, is the history database every probe cycle is saved in,
	// and DBRetention how long a saved cycle is kept there (0: for ever).
	DB          string
	DBRetention time.Duration
	// dbRetentionSet: --db-retention was given (it needs --db).
	dbRetentionSet bool
	// Serve is what the serve package gets (applyServeStore sets Save).
	Serve serve.Options
}

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &ServeOptions{}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Prometheus exporter: a few probes re-measured on a schedule within a CPU budget",
		Long: `Serve Prometheus metrics at /metrics (plus /healthz and an index page at /).

A small set of arms (probes) is measured at start and then every --interval,
one after another, never overlapping. The exporter's whole CPU (getrusage:
itself and its reaped children) is kept within --cpu-budget percent of one
core averaged over time: probes shrink their repetitions, one that still
costs too much runs less often, and when the host is busy and probes cost
more the next ones are put off (ctxlab_probe_skipped_total,
ctxlab_budget_exceeded_total). Host-wide signals are node_exporter's job;
ctxlab adds its cgroup's throttling and its probes' run-queue wait. A probe
that fails or times out sets ctxlab_probe_success 0; the server keeps
serving. SIGTERM or SIGINT abandons the probe in flight, reaps its
children, closes the listener and exits 0.

Default probes (the arms each experiment declares):
  ` + strings.Join(serve.DefaultProbes(nil), "\n  ") + `

It listens on 127.0.0.1 unless told otherwise: binding another address
exposes how this host is loaded and scheduled to the network, so a
non-loopback --listen needs --allow-remote.`,
		Example: `  ctxlab serve
  ctxlab serve --interval 10s --probes 'pingpong/thread/futex/*'
  ctxlab serve --listen 0.0.0.0:9477 --allow-remote   # in a container or DaemonSet
  ctxlab serve --db /var/lib/ctxlab/history.db        # also keep a week of cycles in the history
  ctxlab serve --db h.db --db-retention 30d           # … or a month`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, o, stderr)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", serve.DefaultListen, "address to serve metrics on, host:port")
	f.BoolVar(&o.AllowRemote, "allow-remote", false, "allow a --listen address other than loopback")
	f.DurationVar(&o.Interval, "interval", serve.DefaultInterval,
		"time between probe cycles, "+durRange(serve.MinInterval, serve.MaxInterval))
	f.StringSliceVar(&o.Probes, "probes", nil, "arm names or globs to probe, comma-separated (default: the set above)")
	f.Float64Var(&o.BudgetPct, "cpu-budget", serve.DefaultBudget,
		"CPU the probes may use, percent of one core averaged, "+budgetRange)
	f.DurationVar(&o.ProbeTimeout, "probe-timeout", serve.DefaultTimeout,
		"time limit of one probe run, "+durRange(serve.MinTimeout, serve.MaxTimeout))
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "log every skipped probe too")
	f.StringVar(&o.DB, "db", "", "save each probe cycle in this history database (default: not saved)")
	o.DBRetention = defaultDBRetention
	f.Var(retentionValue{&o.DBRetention}, "db-retention",
		fmt.Sprintf("delete probe cycles saved with --db once they are this old, %s..%s (whole numbers of s, m, h, d, w, y, e.g. 30d or 1d12h), or 0 to keep every one", formatRetention(minDBRetention), formatRetention(maxDBRetention)))
	return c
}

// budgetRange is --cpu-budget's range, in percent of one core.
var budgetRange = fmt.Sprintf("%g..%g", serve.MinBudgetPct, float64(serve.MaxBudgetPct))

// validateServe checks every flag before anything starts; errors are usage errors.
func validateServe(o *ServeOptions, host *sysinfo.Host) error {
	if o.Interval < serve.MinInterval || o.Interval > serve.MaxInterval {
		return outOfRange("--interval", o.Interval, durRange(serve.MinInterval, serve.MaxInterval))
	}
	if !(o.BudgetPct >= serve.MinBudgetPct && o.BudgetPct <= serve.MaxBudgetPct) { // NaN fails both

		return outOfRange("--cpu-budget", fmt.Sprintf("%g", o.BudgetPct), budgetRange+" (percent of one core)")
	}
	if o.ProbeTimeout < serve.MinTimeout || o.ProbeTimeout > serve.MaxTimeout {
		return outOfRange("--probe-timeout", o.ProbeTimeout, durRange(serve.MinTimeout, serve.MaxTimeout))
	}
	if err := checkListen(o.Listen, o.AllowRemote); err != nil {
		return err
	}
	if err := checkDBRetention(o); err != nil {
		return err
	}
	p := exp.Params{Suite: exp.SuiteDefault, Host: host, CPUs: host.OnlineCPUs}
	if allowed, err := measure.Affinity(); err == nil && len(allowed) > 0 {
		p.CPUs = allowed // a container's cpuset: pin only where we may run
	}
	probes, notes, err := serve.Resolve(o.Probes, p, nil)
	if err != nil {
		if errors.Is(err, serve.ErrNoProbes) {
			return usagef("--probes %s: %v: %s", strings.Join(o.Probes, ","), err, strings.Join(notes, "; "))
		}
		return &UsageError{err}
	}
	o.Serve.Probes, o.Serve.Notes = probes, notes
	return nil
}

// checkListen wants host:port with a port in 1..65535 and, unless remote
// access is allowed, a loopback host: an exporter on every interface shows
// host details to whoever can reach the port.
func checkListen(addr string, allowRemote bool) error {
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: want host:port, e.g. %s: %v", addr, serve.DefaultListen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return usagef("--listen %q: port %q must be a number in 1..65535", addr, port)
	}
	if allowRemote || isLoopback(h) {
		return nil
	}
	what := h
	if h == "" {
		what = "every interface"
	}
	return usagef("--listen %q binds %s, not loopback: add --allow-remote to expose the metrics to the network", addr, what)
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func runServe(cmd *cobra.Command, o *ServeOptions, stderr io.Writer) error {
	host := sysinfo.Detect()
	o.dbRetentionSet = cmd.Flags().Changed("db-retention")
	if err := validateServe(o, host); err != nil {
		return err
	}
	if err := applyServeStore(o); err != nil {
		return err
	}
	level := slog.LevelInfo
	if o.Verbose {
		level = slog.LevelDebug
	}
	so := o.Serve
	so.Interval, so.BudgetPct, so.ProbeTimeout = o.Interval, o.BudgetPct, o.ProbeTimeout
	so.Host, so.Version = host, version()
	so.Harness = lastHarness(cmd.Context(), o.DB, host.Env.Hostname)
	so.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--listen %s: the address is already in use (another ctxlab serve or exporter?); stop it or choose another port", o.Listen)
		}
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	return serve.New(so).Serve(cmd.Context(), ln)
}
