// Package serve is ctxlab's Prometheus exporter: a small set of arms
// re-measured on a schedule within a CPU budget, plus what node_exporter
// cannot say about them (their own CPU, run-queue wait and cgroup
// throttling), so a fleet is compared in the monitoring it already has
// instead of host by host (SPEC §7).
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// Limits of the schedule and budget, named in usage errors.
const (
	MinInterval     = 5 * time.Second
	MaxInterval     = 24 * time.Hour
	DefaultInterval = 60 * time.Second
	MinBudgetPct    = 0.05
	MaxBudgetPct    = 50
	DefaultBudget   = 1.0 // percent of one core
	DefaultTimeout  = 10 * time.Second
	MinTimeout      = time.Second
	MaxTimeout      = 5 * time.Minute
	DefaultListen   = "127.0.0.1:9477"
	// shutdownGrace bounds how long in-flight scrapes may take at shutdown.
	shutdownGrace = 5 * time.Second
)

// ArmRunner measures one arm; runner.Arm in production, fakes in tests.
type ArmRunner func(ctx context.Context, cfg runner.Config, spec *exp.Spec, a exp.Arm) result.Arm

// Saved is what one save into the history database did, for its metrics.
type Saved struct {
	Pruned  int   // cycles deleted for being older than the retention
	DBBytes int64 // the database's size on disk afterwards; 0 if not known
	// Late is a problem after the cycle was committed (closing the
	// file): logged, but the save succeeded.
	Late error
}

// Options configure the exporter. The cli fills them from flags and
// validates them before anything starts.
type Options struct {
	Probes   []Probe
	Interval time.Duration
	// BudgetPct is the CPU the probes may use, in percent of one core averaged over time.
	BudgetPct    float64
	ProbeTimeout time.Duration
	Host         *sysinfo.Host
	Log          *slog.Logger
	Version      string
	// Save, if set, stores every cycle's results (the store's --db); nil =
	// not stored. It says what it did even when it fails: a prune that ran
	// before a failed save still deleted those cycles.
	Save func(*result.Run) (Saved, error)
	// RunArm measures one arm; nil = runner.Arm.
	RunArm ArmRunner
	// ProcRoot is where /proc is ("" = /proc); tests point it at a fixture.
	ProcRoot string
	// NoRuntimeMetrics leaves out the Go runtime and process collectors
	// (the golden test wants only ctxlab's own metrics).
	NoRuntimeMetrics bool
	// Notes are printed at start and shown on the index page (probes left out …).
	Notes []string
	// Harness is the last selfcheck stored for this host (nil: none), exported as
	// ctxlab_selfcheck_* gauges.
	Harness *result.HarnessCheck
}

// Server is a running exporter: the probe scheduler and the HTTP handlers.
type Server struct {
	o       Options
	metrics *Metrics
	cgroup  *CgroupCollector
	// host lists the signals that cannot be read here, for the index page.
	host    struct{ Unsupported map[string]string }
	reg     *prometheus.Registry
	budget  *budget
	started time.Time
	clock   float64 // ns per timestamp, calibrated once
	// syscall and syscallPath are a raw system call and what Go's
	// runtime-aware path adds to one (measure.SyscallPath), calibrated
	// once: a stored serve run says them as a `ctxlab run` does.
	syscall, syscallPath float64
	cycles               atomic.Int64
	stopping             atomic.Bool
}

// New builds the exporter: registry, collectors and budget. Nothing runs yet.
func New(o Options) *Server {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.BudgetPct == 0 {
		o.BudgetPct = DefaultBudget
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = DefaultTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.RunArm == nil {
		o.RunArm = runner.Arm
	}
	if o.Host == nil {
		o.Host = sysinfo.Detect()
	}
	var names []string
	for _, p := range o.Probes {
		names = append(names, p.Name())
	}
	s := &Server{o: o, reg: prometheus.NewRegistry(), started: time.Now(), clock: measure.ClockCost()}
	s.syscall, s.syscallPath = measure.SyscallPath()
	s.budget = newBudget(o.BudgetPct/100, o.Interval, names)
	s.metrics = NewMetrics(names, o.Interval, s.budget.perCycle, o.Version, runtime.Version())
	for _, n := range names {
		s.metrics.SetBenchTime(n, s.budget.probes[n].benchTime)
	}
	s.metrics.selfCPU = cpuSeconds
	s.metrics.history = o.Save != nil
	s.cgroup = NewCgroupCollector(o.Host.Cgroup)
	s.host.Unsupported = map[string]string{}
	if why := s.cgroup.Unsupported; why != "" {
		s.host.Unsupported["cgroup_throttling"] = why
	}
	s.reg.MustRegister(s.metrics, s.cgroup)
	if o.Harness != nil {
		s.reg.MustRegister(harnessMetrics(o.Harness)...)
	} else {
		s.o.Notes = append(s.o.Notes, "no selfcheck stored for this host, so no ctxlab_selfcheck_* metrics: ctxlab selfcheck measures the harness's overhead here")
	}
	if !o.NoRuntimeMetrics {
		s.reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	}
	return s
}

// Registry is the exporter's private registry (no global state).
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Metrics is the probe collector (tests feed it fake results).
func (s *Server) Metrics() *Metrics { return s.metrics }

// Serve runs the exporter on ln until ctx is cancelled (SIGTERM/SIGINT):
// the probe in flight is abandoned and torn down, children are reaped,
// the listener closes, and Serve returns nil. An HTTP server failure is
// returned as an error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv, ln := s.httpServer(ln)
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.Serve(ln) }()
	for _, n := range s.o.Notes {
		s.o.Log.Info(n)
	}
	if why := s.cgroup.Unsupported; why != "" {
		s.o.Log.Info("cgroup throttling unsupported", "reason", why)
	}
	s.o.Log.Info("serving", "listen", ln.Addr().String(), "probes", len(s.o.Probes), "interval", s.o.Interval,
		"budget_pct_of_one_core", s.o.BudgetPct)

	loopCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	loopDone := make(chan struct{})
	go func() { defer close(loopDone); s.loop(loopCtx) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-httpErr:
		err = fmt.Errorf("http server: %w", err)
	}
	s.stopping.Store(true)
	cancel()
	<-loopDone // the probe in flight has been torn down
	child.KillAll()
	sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer scancel()
	if e := srv.Shutdown(sctx); e != nil && err == nil && !errors.Is(e, http.ErrServerClosed) {
		err = fmt.Errorf("http shutdown: %w", e)
	}
	s.o.Log.Info("stopped", "cycles", s.cycles.Load())
	return err
}

// loop runs a cycle at once, then one per interval. Probes run one after
// another, so none overlaps another; a cycle that overruns the interval
// delays the next one rather than stacking.
func (s *Server) loop(ctx context.Context) {
	next := time.Now()
	for {
		s.Cycle(ctx)
		if ctx.Err() != nil {
			return
		}
		next = next.Add(s.o.Interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Cycle runs every due probe once and saves the results if a store is set.
func (s *Server) Cycle(ctx context.Context) {
	clock := s.clock
	var arms []result.Arm
	for _, p := range s.o.Probes {
		if ctx.Err() != nil {
			return
		}
		name := p.Name()
		if !s.budget.due(name) {
			s.metrics.Skip(name)
			s.o.Log.Debug("probe skipped for the CPU budget", "arm", name)
			continue
		}
		pb := s.budget.probes[name]
		cfg := runner.Config{
			Reps: probeReps, BenchTime: pb.benchTime, WarmUp: pb.benchTime, WarmUpOps: 1 << 20,
			Timeout: s.o.ProbeTimeout, MaxSamples: 20000, ClockCost: clock, Host: s.o.Host,
		}
		cpu0, t0 := cpuSeconds(), time.Now()
		arm, tp := p.Arm, &tap{}
		if arm.Open != nil {
			arm.Open = tp.wrap(arm.Open)
		}
		r := s.o.RunArm(ctx, cfg, p.Spec, arm)
		wall, cpu := time.Since(t0), cpuSeconds()-cpu0
		if r.DurationNs > 0 { // the arm's own time, not a wait for perf hooks before it
			wall = time.Duration(r.DurationNs)
		}
		if ctx.Err() != nil || r.Status == result.StatusInterrupted {
			return // shutting down: the run was abandoned, not a result
		}
		if r.Name == "" {
			r.Name = name
		}
		if tp.timedOut.Load() && r.Status == result.StatusFailed {
			r.Status, r.Reason = result.StatusTimedOut, fmt.Sprintf("the first op did not finish within %v", s.o.ProbeTimeout)
		}
		over := s.budget.observe(name, cpu)
		s.metrics.Record(r, Run{Wall: wall, CPU: cpu, End: time.Now(), Over: over, NextBench: pb.benchTime,
			Samples: tp.samples()})
		if r.Status != result.StatusOK {
			s.o.Log.Warn("probe did not finish", "arm", name, "status", r.Status, "reason", r.Reason)
		}
		if over {
			s.o.Log.Info("probe over its CPU share", "arm", name, "cpu_s", round(cpu), "share_s", round(s.budget.share),
				"next_benchtime", pb.benchTime, "runs_every_cycles", pb.every)
		}
		arms = append(arms, r)
	}
	s.cycles.Add(1)
	if s.o.Save != nil && len(arms) > 0 {
		run := &result.Run{
			Schema: result.SchemaVersion, ID: runID(), Time: time.Now().UTC(), Version: s.o.Version,
			GoVersion: runtime.Version(), CommandLine: []string{"ctxlab", "serve"}, Suite: "serve",
			Env: s.o.Host.Env, ClockCostNs: clock, SyscallNs: s.syscall, SyscallPathNs: s.syscallPath, Arms: arms,
		}
		saved, err := s.o.Save(run)
		if err != nil {
			s.o.Log.Warn("history database (--db) failed", "err", err)
		}
		if saved.Late != nil {
			s.o.Log.Warn("history database (--db): the cycle was saved, but", "err", saved.Late)
		}
		s.metrics.RecordSave(time.Now(), saved, err)
	}
}

func round(x float64) float64 { return float64(int64(x*1e4+0.5)) / 1e4 }

func runID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}
