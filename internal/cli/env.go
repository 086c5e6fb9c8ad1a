package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

func newEnvCmd(stdout io.Writer) *cobra.Command {
	var format, db string
	c := &cobra.Command{
		Use:   "env",
		Short: "show the machine as ctxlab sees it: CPUs, caches, counters, the build, a system call's cost, noise now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" {
				return usagef("--format %q: must be table or json", format)
			}
			h := sysinfo.Detect()
			if format == "json" {
				return env(stdout, format, h, lastHarness(cmd.Context(), db, h.Env.Hostname))
			}
			return onScreen(stdout, func(w io.Writer) error { return env(w, format, h, lastHarness(cmd.Context(), db, h.Env.Hostname)) })
		},
	}
	c.Flags().StringVar(&format, "format", "table", "table or json")
	addDBFlag(c.Flags(), &db)
	return c
}

// env shows host h (sysinfo.Detect's) with what is probed now: counters,
// the clock's cost, a system call's and what Go's runtime path adds to it,
// the interpreters, the noise over 200 ms, and the last selfcheck stored
// for this host (harness, nil when none).
func env(w io.Writer, format string, h *sysinfo.Host, harness *result.HarnessCheck) error {
	p := envProbes{Counters: probeCounters(), ClockNs: measure.ClockCost(), Harness: harness}
	p.SyscallNs, p.SyscallPathNs = measure.SyscallPath()
	// Noise now: steal and load over a short window.
	n0 := sysinfo.Sample(h)
	time.Sleep(200 * time.Millisecond)
	n1 := sysinfo.Sample(h)
	if dt := n1.Total - n0.Total; dt > 0 {
		p.StealPct = 100 * (n1.Steal - n0.Steal) / dt
	}
	p.ProcsRunning = n1.ProcsRunning
	p.Pythons, p.PythonsNoAnswer = envPythons()
	return writeEnv(w, format, h, p)
}

// envProbes is what env probes now, beside the host's facts.
type envProbes struct {
	Counters []result.CounterInfo
	ClockNs  float64
	// SyscallNs is a raw getppid; SyscallPathNs what Go's runtime-aware
	// path adds to it (measure.SyscallPath).
	SyscallNs, SyscallPathNs float64
	StealPct                 float64
	ProcsRunning             uint64
	Pythons                  []*pydriver.Interpreter
	PythonsNoAnswer          []string // on PATH, but their probe did not answer in time
	Harness                  *result.HarnessCheck
}

// writeEnv prints host h and probes p as a table or JSON.
func writeEnv(w io.Writer, format string, h *sysinfo.Host, p envProbes) error {
	e := h.Env
	e.Counters, e.Harness = p.Counters, p.Harness
	clock, steal := p.ClockNs, p.StealPct
	if format == "json" {
		enc := json.NewEncoder(termsafe.JSON(w))
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			result.Env
			ClockCostNs   float64  `json:"clock_cost_ns"`
			SyscallNs     float64  `json:"syscall_ns"`
			SyscallPathNs float64  `json:"syscall_path_ns"`
			StealNowPct   float64  `json:"steal_now_pct"`
			ProcsRunning  uint64   `json:"procs_running"`
			Pythons       any      `json:"pythons"`
			NoAnswer      []string `json:"pythons_no_answer,omitempty"`
		}{e, clock, p.SyscallNs, p.SyscallPathNs, steal, p.ProcsRunning, p.Pythons, p.PythonsNoAnswer})
	}
	// The machine's own text (host name, CPU model, cgroup paths, notes)
	// is whatever its administrator set: shown escaped, as every outside
	// string is (termsafe).
	kv := func(k, v string) { fmt.Fprintf(w, "%-22s %s\n", k, termsafe.String(v)) }
	kv("host", e.Hostname)
	kv("cpu", e.CPUModel)
	kv("cpus", fmt.Sprintf("%d logical, online %s; %d cores × %d threads", e.LogicalCPUs, sysinfo.FormatCPUList(e.OnlineCPUs), e.Cores, e.ThreadsPerCore))
	var cs []string
	for _, c := range e.Caches {
		cs = append(cs, fmt.Sprintf("L%d %s %s", c.Level, c.Type, result.FormatValue(float64(c.SizeB), "bytes")))
	}
	if len(cs) == 0 {
		cs = []string{"not reported by this kernel (no /sys/devices/system/cpu/cpu0/cache)"}
	}
	kv("caches", strings.Join(cs, ", "))
	kv("kernel", e.Kernel)
	kv("scheduler", fmt.Sprintf("%s, slice %s", orUnknown(e.Scheduler), sliceText(e.SchedSliceNs)))
	kv("virtualised", yesNo(e.Hypervisor))
	kv("go", fmt.Sprintf("%s, GOMAXPROCS %d%s", e.GoVersion, e.GOMAXPROCS, cgoText(e.CgoEnabled)))
	kv("clock", fmt.Sprintf("%.1f ns per timestamp", clock))
	kv("harness", e.Harness.Text())
	// Which arms pay the runtime-aware path, and how often, is in the
	// README (How honest is the harness?): a line here says what it is.
	kv("syscall", fmt.Sprintf("%s raw (getppid); Go's runtime-aware path adds %s (README: How honest is the harness?)", result.FormatNs(p.SyscallNs), result.FormatNs(p.SyscallPathNs)))
	kv("cgroup", h.CgroupText())
	kv("limits", fmt.Sprintf("threads-max %d, RLIMIT_NPROC %s, MemAvailable %s", e.ThreadsMax, limitText(e.NprocLimit), result.FormatValue(float64(e.MemAvailableB), "bytes")))
	if e.Governor != "" {
		kv("governor", e.Governor)
	}
	kv("perf_event_paranoid", fmt.Sprint(e.PerfParanoid))
	fmt.Fprintln(w, "counters:")
	for _, c := range e.Counters {
		state := "works"
		if !c.Supported {
			state = "unsupported: " + c.Unsupported
		}
		fmt.Fprintf(w, "  %-18s %-9s %s\n", termsafe.String(c.Name), termsafe.String(c.Kind), termsafe.String(state))
	}
	writePythons(w, p.Pythons, p.PythonsNoAnswer)
	kv("noise now", fmt.Sprintf("load1 %.2f, steal %.1f%% (since boot %.2f%%), %d runnable", e.Load1, steal, e.StealPct, p.ProcsRunning))
	for _, n := range e.Notes {
		kv("note", n)
	}
	return nil
}

// cgoText says how the build's threads are started.
func cgoText(cgo string) string {
	switch cgo {
	case "1":
		return "; cgo build: glibc's rseq on every thread (thread and process handoffs read higher than a CGO_ENABLED=0 build's: 5–7% on the VMs measured)"
	case "0":
		return "; CGO_ENABLED=0 build"
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func sliceText(ns int64) string {
	if ns <= 0 {
		return "not exposed"
	}
	return result.FormatNs(float64(ns))
}

func yesNo(b bool) string {
	if b {
		return "yes (hypervisor flag set)"
	}
	return "no"
}

func limitText(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
