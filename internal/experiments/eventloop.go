package experiments

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// eventloop: the seeds' event-loop lag. An asyncio loop serves requests
// from a few client tasks; one request in ten does X ms of pure-Python CPU
// work inline, through asyncio.to_thread, or in a ProcessPoolExecutor.
// CPython only: the loop is the worker (substrate pytask), the driver times
// it (driver.py, bench eventloop.lag). Its own experiment, not an
// interference shape: nothing here hogs a CPU from outside the loop, the
// work is the loop's own handler, and the figures (a timer's lag, I/O
// requests' latency, throughput) are not a round trip's.
func init() {
	exp.Register(&eventloopExp{exp.Spec{
		Name:    "eventloop",
		Order:   85,
		Summary: "CPython asyncio: a 1 ms timer's lag and I/O requests' latency while handlers do CPU work inline, via to_thread or in a process pool",
		Op:      "request",
		Doc: `An asyncio loop serves requests from 4 client tasks; one op is one request.
Every 10th request does X ms of pure-Python CPU work (X = 0.1, 1, 5; an
integer loop calibrated to X ms of CPU time at set-up), the others wait for
one byte on their own socket (a trip through the loop's selector). The work
runs inline in the handler, through asyncio.to_thread (the loop's default
executor), or in a ProcessPoolExecutor (fork; one worker fewer than the
CPUs, at least one, so the loop keeps a CPU). Meanwhile a 1 ms call_later
timer, re-armed as soon as it fires, measures the loop's lag: timer-lag-p50-us
and timer-lag-p99-us over the timed repetitions. The arm's latencies (p50,
p99) are the I/O-only requests'; throughput-requests/s is 1 ÷ the median.
Its own experiment rather than an interference shape: the CPU work is the
loop's own handler, not a hog beside it.
Arm names: eventloop/pytask/HOW/work=Xms.
` + cpythonDoc,
		OpLabels: []exp.OpLabel{{Label: "request"}},
		Arms:     eventloopArms,
		Checks:   eventloopChecks,
		Findings: eventloopFindings,
		Metrics: append([]exp.Metric{
			{Name: "work-ms", Unit: "ms", Better: exp.NotRanked, Doc: "CPU time of one CPU request's work, measured at set-up"},
			{Name: "cpu-request-ratio", Unit: "ratio", Better: exp.NotRanked, Doc: "share of the requests that do the CPU work"},
			{Name: "timer-lag-p50-us", Unit: "us", Better: exp.LowerIsBetter, Doc: "median lateness of a 1 ms call_later timer"},
			{Name: "timer-lag-p99-us", Unit: "us", Better: exp.LowerIsBetter, Doc: "99th percentile lateness of a 1 ms call_later timer"},
			{Name: "timer-lag-max-us", Unit: "us", Better: exp.LowerIsBetter, Doc: "largest lateness of a 1 ms call_later timer"},
			{Name: "timer-fires", Unit: "fires", Better: exp.NotRanked, Doc: "timer firings the lag percentiles come from"},
			{Name: "loop-thread-cpu-ratio", Unit: "ratio", Better: exp.NotRanked, Doc: "CPU time of the loop's thread ÷ wall time over the timed repetitions"},
			{Name: "loop-cpu-us/request", Unit: "us", Better: exp.LowerIsBetter, Doc: "CPU time of the loop's thread per request"},
			{Name: "throughput-requests/s", Unit: "requests", Better: exp.HigherIsBetter, Doc: "requests served per second (1 ÷ the median)"},
		}, cpythonMetrics...),
	}})
}

// eventloopExp is eventloop with its hook: the throughput, derived.
type eventloopExp struct{ exp.Spec }

var _ exp.Deriver = (*eventloopExp)(nil)

func (*eventloopExp) Derive(arms []result.Arm) { eventloopDerive(arms) }

var (
	eventloopWork = []string{"0.1", "1", "5"}
	eventloopHows = []string{"inline", "to_thread", "process"}
)

// eventloopPlan: each way of running the work at each X.
func eventloopPlan(exp.Params) []pyArm {
	var out []pyArm
	for _, how := range eventloopHows {
		for _, x := range eventloopWork {
			key := exp.Key("eventloop", exp.Seg("pytask"), exp.Seg(how), exp.KV("work", x+"ms"))
			out = append(out, pyArm{key: key, sub: "pytask", mech: how, op: "request", bench: "eventloop.lag",
				params: map[string]string{"how": how, "work_ms": x}, place: "unpinned",
				quick: x == "5" && how == "inline"})
		}
	}
	return out
}

func eventloopArms(p exp.Params) ([]exp.Arm, error) { return cpythonArms(p, eventloopPlan(p)) }

// eventloopDerive adds the throughput.
func eventloopDerive(arms []result.Arm) {
	for i := range arms {
		a := &arms[i]
		if a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		a.SetMetric("throughput-requests/s", 1e9/a.Median)
	}
}

// Thresholds of the event-loop checks (the seeds' model).
const (
	poolLagP99Us    = 2000 // a process pool keeps the timer's p99 under 2 ms
	inlineCapLow    = 0.5  // inline throughput is at least this share of its cap …
	inlineCapHigh   = 1.1  // … and at most this (the cap, with rounding)
	inlineCapFromMs = 1.0  // below this X the I/O requests' own cost dominates
)

// elArm is one event-loop arm's figures.
type elArm struct {
	a       result.Arm
	how     string
	x       float64 // nominal work, ms
	p50     float64 // timer lag, µs
	p99     float64
	hasLag  bool
	workMs  float64 // measured
	share   float64
	siMs    float64
	gilFree bool
}

func eventloopIndex(arms []result.Arm) []elArm {
	var out []elArm
	for _, a := range arms {
		if a.Status != result.StatusOK {
			continue
		}
		x, err := strconv.ParseFloat(a.Params["work_ms"], 64)
		if err != nil {
			continue
		}
		e := elArm{a: a, how: a.Params["how"], x: x, workMs: a.Metrics["work-ms"], share: a.Metrics["cpu-request-ratio"],
			gilFree: a.Params["gil"] == "disabled"}
		e.p50, e.hasLag = a.Metrics["timer-lag-p50-us"]
		e.p99 = a.Metrics["timer-lag-p99-us"]
		if a.Metrics["timer-fires"] < 1 {
			e.hasLag = false
		}
		e.siMs, _ = strconv.ParseFloat(strings.TrimSuffix(a.Params["switch_interval"], "ms"), 64)
		out = append(out, e)
	}
	return out
}

func lagText(e elArm) string {
	return fmt.Sprintf("timer lag p50 %s, p99 %s (%.0f fires)", result.FormatNs(e.p50*1e3), result.FormatNs(e.p99*1e3), e.a.Metrics["timer-fires"])
}

// eventloopThreadCheck is the to_thread check a GIL build answers; the
// free-threaded build answers eventloopFreeThreadedCheck instead.
const (
	eventloopThreadCheck       = "to_thread does not free the loop from CPU work: the worker holds the GIL a switch interval at a time (work ≥ the interval: timer-lag p99 ≥ ½ interval)"
	eventloopFreeThreadedCheck = "without the GIL (free-threaded build), to_thread CPU work runs beside the loop: timer-lag p99 under 2 ms"
)

// inlineLagShare is how much of one CPU request's measured time a timer
// must wait at p99 behind it: a timer due at a random moment of the work
// waits up to the whole of it, so the tail reaches nearly all of it.
const inlineLagShare = 0.8

// timerDelayMs is the driver's call_later delay, whose lateness is the lag.
const timerDelayMs = 1.0

// workOrNominalMs is the CPU request's measured time (the driver's
// calibration, median of three), or the nominal X when it was not recorded.
func workOrNominalMs(e elArm) float64 {
	if e.workMs > 0 {
		return e.workMs
	}
	return e.x
}

func eventloopChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	for _, e := range eventloopIndex(arms) {
		if !e.hasLag {
			continue
		}
		name := e.a.Name
		switch e.how {
		case "inline":
			// Work no longer than the timer's delay is not checked: a timer
			// re-armed as one request ends falls due in the requests that
			// follow, so where it lands in a CPU request is not spread over
			// the work.
			if e.x > timerDelayMs {
				out = append(out, result.Check{
					Name:   fmt.Sprintf("inline CPU work in a handler delays the loop's timers by the whole work: timer-lag p99 ≥ %.0f%% of the work's measured time (its nominal time where none was measured)", 100*inlineLagShare),
					Holds:  e.p99 >= inlineLagShare*workOrNominalMs(e)*1e3,
					Detail: fmt.Sprintf("%s: %s for %g ms of work (%.2f ms measured)", name, lagText(e), e.x, e.workMs),
					Arms:   []string{name},
				})
			}
			if e.x >= inlineCapFromMs && e.share > 0 && e.workMs > 0 {
				capRate := 1e3 / (e.share * e.workMs) // requests/s
				got := 1e9 / e.a.Median
				out = append(out, result.Check{
					Name:  fmt.Sprintf("inline CPU caps throughput near 1 ÷ CPU time per request (%.1f–%.1f× of 1 ÷ (share × work), for work of %g ms or more a request)", inlineCapLow, inlineCapHigh, inlineCapFromMs),
					Holds: got >= inlineCapLow*capRate && got <= inlineCapHigh*capRate,
					Detail: fmt.Sprintf("%s: %.0f requests/s against a cap of %.0f/s (%.0f%% of the requests do %.2f ms): %.2f× the cap; the loop's thread was on a CPU %.0f%% of the time, %.0f µs per request",
						name, got, capRate, 100*e.share, e.workMs, got/capRate, 100*e.a.Metrics["loop-thread-cpu-ratio"], e.a.Metrics["loop-cpu-us/request"]),
					Arms: []string{name},
				})
			}
		case "process":
			out = append(out, result.Check{
				Name:   "a process pool keeps the loop responsive: timer-lag p99 under 2 ms",
				Holds:  e.p99 < poolLagP99Us,
				Detail: fmt.Sprintf("%s: %s for %g ms of work per CPU request", name, lagText(e), e.x) + inlineBeside(arms, e),
				Arms:   []string{name},
			})
		case "to_thread":
			if e.gilFree {
				out = append(out, result.Check{Name: eventloopFreeThreadedCheck, Holds: e.p99 < poolLagP99Us,
					Detail: fmt.Sprintf("%s: %s", name, lagText(e)), Arms: []string{name}})
				continue
			}
			// Work shorter than the interval ends before a handoff is forced.
			// The nominal X decides, not the calibrated figure: 5 ms of work
			// calibrated to 4.9 ms must not drop the check.
			if e.siMs <= 0 || e.x < e.siMs {
				continue
			}
			out = append(out, result.Check{
				Name:  eventloopThreadCheck,
				Holds: e.p99 >= 0.5*e.siMs*1e3,
				Detail: fmt.Sprintf("%s: %s = %.2f× the switch interval (%s) for %.2f ms of work", name, lagText(e),
					e.p99/(e.siMs*1e3), e.a.Params["switch_interval"], e.workMs) + inlineBeside(arms, e),
				Arms: []string{name},
			})
		}
	}
	return out
}

// inlineBeside is the same work's inline arm's lag, for a Detail.
func inlineBeside(arms []result.Arm, e elArm) string {
	py := exp.Interpreter(e.a.Name)
	for _, o := range eventloopIndex(arms) {
		if o.how == "inline" && o.x == e.x && exp.Interpreter(o.a.Name) == py && o.hasLag {
			return fmt.Sprintf("; inline: p50 %s, p99 %s", result.FormatNs(o.p50*1e3), result.FormatNs(o.p99*1e3))
		}
	}
	return ""
}

func eventloopFindings(arms []result.Arm) []string {
	var out []string
	idx := eventloopIndex(arms)
	for _, py := range interpreterTags(arms) {
		for _, x := range eventloopWork {
			xf, _ := strconv.ParseFloat(x, 64)
			var parts []string
			for _, how := range eventloopHows {
				for _, e := range idx {
					if exp.Interpreter(e.a.Name) != py || e.how != how || e.x != xf {
						continue
					}
					part := fmt.Sprintf("%s: %.0f requests/s", how, 1e9/e.a.Median)
					if e.hasLag {
						part += fmt.Sprintf(", timer lag p50 %s p99 %s", result.FormatNs(e.p50*1e3), result.FormatNs(e.p99*1e3))
					}
					if p := e.a.Percentiles; p != nil {
						part += fmt.Sprintf(", I/O requests p50 %s p99 %s", result.FormatNs(p.P50), result.FormatNs(p.P99))
					}
					parts = append(parts, part)
				}
			}
			if len(parts) > 0 {
				out = append(out, fmt.Sprintf("%s ms of CPU work in 1 request of 10%s — %s", x, onInterpreter(py), strings.Join(parts, " · ")))
			}
		}
	}
	return out
}
