package experiments

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
)

// python: CPython threads and asyncio tasks, measured by ctxlab's embedded
// driver inside the interpreter and merged into the same result model
// (SPEC §5.9). Each arm times itself in Python; the runner summarises it.
func init() {
	exp.Register(&exp.Spec{
		Name:       "python",
		Order:      100,
		References: pythonRefs,
		Headline:   pythonHeadline,
		Verdict:    pythonVerdict,
		Summary:    "CPython threads and asyncio tasks: pingpong, ring, yield, a busy thread, sqlite hops, call chains",
		Op:         "per arm",
		Doc: `ctxlab runs its embedded driver (driver.py) with python3 from PATH, or
--python PATH, or --python all for every python3.N / python3.Nt found. The
driver times each arm itself: batch timing per repetition, per-op latencies on
a sample of ops, and OS switches from getrusage over every driver thread (and
/proc for forked children). Substrates: pythread (threading), pytask (asyncio),
process (os.fork). Without python3 the arms are skipped with a note.`,
		Arms:     pythonArms,
		Checks:   pythonChecks,
		Findings: pythonFindings,
		Metrics:  pythonMetrics,
	})
	exp.RegisterOption("python", "the CPython to drive: a command or path, or all (every python3.N/python3.Nt on PATH); default python3 (same as --python)")
}

// Limits on Python ring sizes: beyond them an arm is listed as unsupported.
const (
	maxPyThreads = 10000
	maxPyTasks   = 100000
)

// pyArm is one Python arm before it is bound to an interpreter.
type pyArm struct {
	key       string // "pingpong/pythread/simplequeue/unpinned"
	sub, mech string
	op        string
	bench     string
	params    map[string]string
	quick     bool
	full      bool // only in the full suite
	place     string
	minOps    int
	unsup     string
}

// pythonPlan is the list of Python arms for these params (SPEC §5.9).
func pythonPlan(p exp.Params) []pyArm {
	var out []pyArm
	add := func(a pyArm) { out = append(out, a) }
	pp := func(sub, mech, bench string, place string, quick bool) {
		add(pyArm{key: fmt.Sprintf("pingpong/%s/%s/%s", sub, mech, place), sub: sub, mech: mech, op: "round trip",
			bench: bench, place: place, quick: quick})
	}
	pp("pythread", "simplequeue", "pingpong.simplequeue", "unpinned", true)
	pp("pythread", "simplequeue", "pingpong.simplequeue", "same-cpu", true)
	pp("pythread", "simplequeue", "pingpong.simplequeue", "cross-cpu", false)
	pp("pythread", "event", "pingpong.event", "unpinned", false)
	pp("pythread", "pipe", "pingpong.pipe-thread", "unpinned", false)
	pp("process", "pipe", "pingpong.pipe-fork", "unpinned", false)
	pp("pytask", "asyncio-queue", "pingpong.asyncio-queue", "unpinned", true)
	pp("pytask", "future", "pingpong.future", "unpinned", false)

	ns := []int{2, 100, 1000}
	if p.Workers != nil {
		ns = p.Workers
	}
	for _, sub := range []string{"pythread", "pytask"} {
		mech, bench, limit := "simplequeue", "ring.thread", maxPyThreads
		if sub == "pytask" {
			mech, bench, limit = "asyncio-queue", "ring.task", maxPyTasks
		}
		for _, n := range ns {
			a := pyArm{key: fmt.Sprintf("ring/%s/%s/n=%d", sub, mech, n), sub: sub, mech: mech, op: "hop",
				bench: bench, params: map[string]string{"n": strconv.Itoa(n)}, place: "unpinned"}
			switch {
			case n < 2:
				a.unsup = "a ring needs at least 2 workers"
			case n > limit:
				a.unsup = fmt.Sprintf("more than %d Python %s", limit, map[string]string{"pythread": "threads", "pytask": "tasks"}[sub])
			}
			add(a)
		}
		add(pyArm{key: fmt.Sprintf("ring/%s/%s/n=2/same-cpu", sub, mech), sub: sub, mech: mech, op: "hop",
			bench: bench, params: map[string]string{"n": "2"}, place: "same-cpu"})
	}

	for _, k := range []int{1, 10, 100, 1000, 10000} {
		add(pyArm{key: fmt.Sprintf("yield/pytask/sleep0/k=%d", k), sub: "pytask", mech: "sleep0", op: "yield",
			bench: "yield.task", params: map[string]string{"k": strconv.Itoa(k)}, place: "unpinned", full: k == 10 || k == 1000})
	}

	// A busy thread makes each thread round trip wait for the switch
	// interval: size repetitions by round trips, not only by time.
	busyOps := map[string]int{exp.SuiteQuick: 20, exp.SuiteDefault: 100, exp.SuiteFull: 300}[p.Suite]
	if busyOps == 0 {
		busyOps = 100
	}
	busies := []int{0, 1}
	if p.Hogs != nil {
		busies = p.Hogs
	}
	for _, sub := range []string{"pythread", "pytask"} {
		mech, bench := "simplequeue", "pingpong.simplequeue"
		places := []string{"unpinned", "cross-cpu"}
		if sub == "pytask" {
			mech, bench, places = "asyncio-queue", "pingpong.asyncio-queue", []string{"unpinned"}
		}
		for _, busy := range busies {
			sis := []string{"default", "0.5ms"}
			if busy == 0 {
				sis = []string{"default"}
			}
			for _, si := range sis {
				for _, place := range places {
					params := map[string]string{"busy": strconv.Itoa(busy)}
					if si == "0.5ms" {
						params["switch_interval_s"] = "0.0005"
					}
					key := fmt.Sprintf("interference/%s/%s/busy=%d/si=%s", sub, mech, busy, si)
					if place != "unpinned" {
						key += "/" + place
					}
					a := pyArm{key: key, sub: sub, mech: mech, op: "round trip", bench: bench, params: params, place: place,
						quick: sub == "pythread" && busy == 1 && si == "default" && place == "cross-cpu"}
					if busy > 0 {
						a.minOps = busyOps
					}
					if busy > 64 {
						a.unsup = "more than 64 busy Python threads"
					}
					add(a)
				}
			}
		}
	}

	for _, how := range []string{"direct", "executor", "two-hop", "aiosqlite"} {
		add(pyArm{key: "hop/pytask/" + how, sub: "pytask", mech: how, op: "query", bench: "hop",
			params: map[string]string{"how": how}, place: "unpinned", quick: how != "aiosqlite"})
	}

	add(pyArm{key: "callchain/pythread/plain", sub: "pythread", mech: "call", op: "3-level call", bench: "callchain.plain", place: "unpinned"})
	add(pyArm{key: "callchain/pytask/coroutine", sub: "pytask", mech: "await", op: "3-level call", bench: "callchain.coroutine", place: "unpinned"})
	add(pyArm{key: "callchain/pytask/create-task", sub: "pytask", mech: "create_task", op: "task", bench: "callchain.task", place: "unpinned"})
	return out
}

// pyBench is an opened CPython arm: a SelfTimed bench. The interpreter
// starts in Measure and is gone when it returns.
type pyBench struct {
	measure func(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error)
}

func (b *pyBench) Measure(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
	return b.measure(ctx, req)
}

// Participants is an explicit empty list: the interpreter lives only
// inside Measure, and the driver counts its own switches over its timed
// repetitions (exp.DirectResult).
func (b *pyBench) Participants() exp.Participants { return exp.Participants{} }

func (b *pyBench) Close() error { return nil }

// skipErr is an error whose text is the reason alone, classified by kind
// (exp.ErrSkipped, exp.ErrUnsupported).
type skipErr struct {
	reason string
	kind   error
}

func (e *skipErr) Error() string { return e.reason }
func (e *skipErr) Unwrap() error { return e.kind }

// interpreters resolves the run's --python choice. An explicit choice that
// does not work is a usage error; a missing default python3 skips the arms.
func interpreters(p exp.Params) ([]*pydriver.Interpreter, string, error) {
	choice := p.Python
	switch choice {
	case "", "python3":
		in, err := pydriver.Resolve("python3")
		if err != nil {
			return nil, err.Error() + "; the CPython arms need one (--python PATH chooses another)", nil
		}
		return []*pydriver.Interpreter{in}, "", nil
	case "all":
		ins := pydriver.FindAll()
		if len(ins) == 0 {
			return nil, "no python3, python3.N or python3.Nt on PATH runs; the CPython arms need one", nil
		}
		return ins, "", nil
	}
	in, err := pydriver.Resolve(choice)
	if err != nil {
		return nil, "", fmt.Errorf("--python %s: %v; want a CPython 3 command or path, or all", choice, err)
	}
	return []*pydriver.Interpreter{in}, "", nil
}

func pythonArms(p exp.Params) ([]exp.Arm, error) {
	ins, skip, err := interpreters(p)
	if err != nil {
		return nil, err
	}
	plan := pythonPlan(p)
	var arms []exp.Arm
	if skip != "" {
		for _, pa := range plan {
			if pa.full && p.Suite != exp.SuiteFull {
				continue
			}
			reason := skip
			arms = append(arms, exp.Arm{
				Name: "python/" + pa.key, Substrate: pa.sub, Mechanism: pa.mech, Op: pa.op, Params: pa.params,
				Placement: pa.place, Quick: pa.quick,
				Open: func(context.Context) (exp.Bench, error) { return nil, &skipErr{reason, exp.ErrSkipped} },
			})
		}
		return arms, nil
	}
	tags := map[string]int{}
	for _, in := range ins {
		tags[in.Tag()]++
	}
	for i, in := range ins {
		suffix := ""
		if len(ins) > 1 {
			suffix = "/py=" + in.Tag()
			if tags[in.Tag()] > 1 {
				suffix += "-" + strconv.Itoa(i+1)
			}
		}
		for _, pa := range plan {
			if pa.full && p.Suite != exp.SuiteFull {
				continue
			}
			arms = append(arms, bindPyArm(p, in, pa, suffix))
		}
	}
	return arms, nil
}

// bindPyArm makes the runner's arm for one Python arm on one interpreter.
func bindPyArm(p exp.Params, in *pydriver.Interpreter, pa pyArm, suffix string) exp.Arm {
	params := map[string]string{"python": in.Tag(), "python_build": in.Build(), "placement": pa.place}
	for k, v := range pa.params {
		params[k] = v
	}
	req := pydriver.Request{Bench: pa.bench, Params: pa.params, MinOps: pa.minOps}
	unsup := pa.unsup
	switch pa.place {
	case "unpinned":
		if p.CPUsGiven {
			req.CPUs = p.CPUs // --cpus pins the interpreter
		}
	case "same-cpu":
		c0 := []int{p.CPUs[0]}
		req.CPUs, req.CPUsA, req.CPUsB = c0, c0, c0
	case "cross-cpu":
		if len(p.CPUs) < 2 {
			unsup = fmt.Sprintf("needs two CPUs; the run may use only %v", p.CPUs)
		} else {
			req.CPUs, req.CPUsA, req.CPUsB = p.CPUs[:2], []int{p.CPUs[0]}, []int{p.CPUs[1]}
		}
	}
	if req.CPUs != nil {
		params["cpus"] = intsText(req.CPUs)
	}
	return exp.Arm{
		Name: "python/" + pa.key + suffix, Substrate: pa.sub, Mechanism: pa.mech, Op: pa.op, Params: params,
		Placement: pa.place, Quick: pa.quick, Unsupported: unsup,
		Open: func(context.Context) (exp.Bench, error) {
			return &pyBench{measure: func(ctx context.Context, dr exp.DirectRequest) (*exp.DirectResult, error) {
				return runPy(ctx, in, req, dr)
			}}, nil
		},
	}
}

func intsText(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ",")
}

// maxPySamples caps the latencies the driver sends back (JSON on a pipe).
const maxPySamples = 50000

// runPy asks the interpreter's driver to measure one arm and converts its
// answer into the runner's terms.
func runPy(ctx context.Context, in *pydriver.Interpreter, req pydriver.Request, dr exp.DirectRequest) (*exp.DirectResult, error) {
	req.Reps = dr.Reps
	req.BenchNs = int64(dr.BenchTime)
	req.WarmUpNs = int64(dr.WarmUp)
	req.WarmUpOps = dr.WarmUpOps
	req.Policy = wirePolicy(dr.Policy.OrDefault())
	req.MaxSamples = min(dr.MaxSamples, maxPySamples)
	if req.MaxSamples <= 0 {
		req.MaxSamples = maxPySamples
	}
	r, hello, err := in.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	if !r.OK {
		if r.Unsupported != "" {
			return nil, &skipErr{r.Unsupported, exp.ErrUnsupported}
		}
		msg := "python driver: " + r.Error
		if r.Stderr != "" {
			msg += "; stderr: " + lastLines(r.Stderr, 6)
		}
		return nil, errors.New(msg)
	}
	return pyResult(r, hello), nil
}

// wirePolicy is the runner's policy as the driver reads it.
func wirePolicy(p exp.Policy) *pydriver.Policy {
	return &pydriver.Policy{Share: p.Share, GrowMax: p.GrowMax, Overshoot: p.Overshoot, MaxOpsPerRep: p.MaxOpsPerRep,
		SampleClockFactor: p.SampleClockFactor}
}

// pyResult converts a driver response (already checked for shape).
func pyResult(r *pydriver.Response, h pydriver.Hello) *exp.DirectResult {
	d := &exp.DirectResult{OpsPerRep: r.Ops[0], Samples: r.SamplesNs, SampleEvery: r.SampleEvery,
		Voluntary: r.Switches.Voluntary + r.Switches.ChildVoluntary, Involuntary: r.Switches.Involuntary + r.Switches.ChildInvoluntary,
		ChildVoluntary: r.Switches.ChildVoluntary, ChildInvoluntary: r.Switches.ChildInvoluntary, Migrations: -1}
	for i := range r.RepNs {
		d.RepMeans = append(d.RepMeans, float64(r.RepNs[i])/float64(r.Ops[i]))
		d.TotalOps += r.Ops[i]
	}
	if r.Migrations != nil {
		d.Migrations = *r.Migrations
	}
	gil := "enabled"
	if !h.GILEnabled {
		gil = "disabled"
	}
	d.Params = map[string]string{
		"python":            h.Version,
		"python_executable": h.Executable,
		"gil":               gil,
		"switch_interval":   strconv.FormatFloat(r.SwitchInterval*1000, 'g', -1, 64) + "ms",
	}
	if len(r.Affinity) > 0 {
		d.Params["affinity"] = intsText(r.Affinity) // as the driver saw it
	}
	d.Metrics = map[string]float64{"py-clock-ns": h.ClockNs}
	for k, v := range r.Metrics {
		d.Metrics[k] = v
	}
	if t := r.ThreadSwitches; t != nil && d.TotalOps > 0 {
		d.Metrics["measuring-thread-switches/op"] = float64(t.Voluntary+t.Involuntary) / float64(d.TotalOps)
	}
	d.Notes = append(d.Notes, r.Notes...)
	return d
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// pyKey strips "python/" and any "/py=…" suffix: the arm's place in the plan.
func pyKey(name string) (key, py string) {
	key = strings.TrimPrefix(name, "python/")
	if i := strings.Index(key, "/py="); i >= 0 {
		return key[:i], key[i+1:]
	}
	return key, ""
}

// Thresholds of the Python checks.
const (
	minPyThreadSwitches = 1.5  // a blocking thread handoff: ≈ 2 per round trip
	maxPyTaskSwitches   = 0.05 // a task handoff stays on one thread: ≈ 0
	busyMedianNs        = 1e6  // "into milliseconds"
)

func pythonChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	by := map[string]result.Arm{}
	for _, a := range arms {
		if a.Status == result.StatusOK {
			by[a.Name] = a
		}
	}
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Switches == nil {
			continue
		}
		key, _ := pyKey(a.Name)
		sw := a.Switches.Total()
		switch {
		case strings.HasPrefix(key, "pingpong/") && (a.Substrate == "pythread" || a.Substrate == "process") && a.Placement != "same-cpu":
			out = append(out, result.Check{
				Name:   "a CPython thread (or process) round trip costs about 2 OS switches (≥ 1.5)",
				Holds:  sw >= minPyThreadSwitches,
				Detail: fmt.Sprintf("%s: %.2f switches per round trip (%.2f voluntary, %.2f involuntary)", a.Name, sw, a.Switches.Voluntary, a.Switches.Involuntary),
				Arms:   []string{a.Name},
			})
		case strings.HasPrefix(key, "pingpong/pytask/"):
			out = append(out, result.Check{
				Name:   "an asyncio task round trip causes no OS switch (< 0.05 per round trip)",
				Holds:  sw < maxPyTaskSwitches,
				Detail: fmt.Sprintf("%s: %.4f switches per round trip", a.Name, sw),
				Arms:   []string{a.Name},
			})
		}
	}
	for _, a := range arms {
		key, py := pyKey(a.Name)
		if a.Status != result.StatusOK || !strings.HasPrefix(key, "interference/pythread/") || a.Params["busy"] == "0" || a.Percentiles == nil {
			continue
		}
		if a.Params["gil"] == "disabled" {
			continue // no GIL, no switch interval to wait for
		}
		si := a.Params["switch_interval"]
		ms, err := strconv.ParseFloat(strings.TrimSuffix(si, "ms"), 64)
		if err != nil || ms <= 0 {
			continue
		}
		base := ""
		if b, ok := by[withPy(busyBaseline(a.Name, py), py)]; ok && b.Percentiles != nil {
			base = fmt.Sprintf("; no busy thread: %s", result.FormatNs(b.Percentiles.P50))
		}
		out = append(out, result.Check{
			Name:  "one busy pure-Python thread moves the thread round-trip median to the GIL switch interval (p50 ≥ ½ interval: milliseconds at the default 5 ms)",
			Holds: a.Percentiles.P50 >= 0.5*ms*1e6,
			Detail: fmt.Sprintf("%s: p50 %s = %.2f× the switch interval (%s), p99 %s%s", a.Name,
				result.FormatNs(a.Percentiles.P50), a.Percentiles.P50/(ms*1e6), si, result.FormatNs(a.Percentiles.P99), base),
			Arms: []string{a.Name},
		})
	}
	for _, py := range pyTags(arms) {
		d, ok1 := by[withPy("python/hop/pytask/direct", py)]
		e, ok2 := by[withPy("python/hop/pytask/executor", py)]
		t, ok3 := by[withPy("python/hop/pytask/two-hop", py)]
		if !(ok1 && ok2 && ok3) {
			continue
		}
		out = append(out, result.Check{
			Name:  "sqlite3 lookup: two hops cost more than one, which costs more than direct",
			Holds: t.Median > e.Median && e.Median > d.Median,
			Detail: fmt.Sprintf("direct %s, one executor hop %s, two hops %s%s", result.FormatNs(d.Median),
				result.FormatNs(e.Median), result.FormatNs(t.Median), pySuffixText(py)),
			Arms: []string{d.Name, e.Name, t.Name},
		})
	}
	return out
}

// pyTags lists the "py=…" suffixes among the arms ("" when one interpreter).
func pyTags(arms []result.Arm) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range arms {
		if _, py := pyKey(a.Name); !seen[py] {
			seen[py] = true
			out = append(out, py)
		}
	}
	sort.Strings(out)
	return out
}

// busyBaseline names the busy=0 arm with the same placement as a busy arm.
func busyBaseline(name, py string) string {
	key, _ := pyKey(name)
	parts := strings.Split(key, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "busy=") {
			parts[i] = "busy=0"
		}
		if strings.HasPrefix(p, "si=") {
			parts[i] = "si=default"
		}
	}
	return "python/" + strings.Join(parts, "/")
}

func withPy(name, py string) string {
	if py == "" {
		return name
	}
	return name + "/" + py
}

func pySuffixText(py string) string {
	if py == "" {
		return ""
	}
	return " (" + py + ")"
}

// pyReference holds SPEC §8's published figures for the Python arms, shown
// beside ours in the findings (never as measurements).
var pyReference = map[string]string{
	"pingpong/pythread/simplequeue/unpinned":                        "7.2 µs (7.15–7.63), 2.0 OS switches",
	"pingpong/pythread/event/unpinned":                              "11.0–11.3 µs (CPython 3.13, 8 cores: 9.3 µs)",
	"pingpong/pythread/pipe/unpinned":                               "p50 2.85 µs (CPython 3.13, 8 cores)",
	"pingpong/process/pipe/unpinned":                                "p50 3.2 µs (CPython 3.13, 8 cores)",
	"pingpong/pytask/asyncio-queue/unpinned":                        "4.3 µs (4.25–4.49)",
	"pingpong/pytask/future/unpinned":                               "3.4 µs (3.38–3.52)",
	"ring/pythread/simplequeue/n=2":                                 "3.98 µs per hop",
	"ring/pythread/simplequeue/n=100":                               "4.54 µs per hop",
	"ring/pythread/simplequeue/n=1000":                              "7.65 µs per hop",
	"ring/pythread/simplequeue/n=2/same-cpu":                        "6.45 µs and 3.0 switches per hop",
	"ring/pytask/asyncio-queue/n=2":                                 "2.37 µs per hop",
	"ring/pytask/asyncio-queue/n=100":                               "2.22 µs per hop",
	"ring/pytask/asyncio-queue/n=1000":                              "3.07 µs per hop",
	"ring/pytask/asyncio-queue/n=2/same-cpu":                        "2.65 µs per hop",
	"yield/pytask/sleep0/k=1":                                       "1.61 µs per yield",
	"yield/pytask/sleep0/k=10":                                      "0.76 µs per yield",
	"yield/pytask/sleep0/k=100":                                     "0.67 µs per yield",
	"yield/pytask/sleep0/k=1000":                                    "0.67 µs per yield",
	"yield/pytask/sleep0/k=10000":                                   "1.78 µs per yield",
	"interference/pythread/simplequeue/busy=0/si=default":           "median 5.9 µs, p99 16.6 µs",
	"interference/pythread/simplequeue/busy=1/si=default":           "median 5 096 µs, p99 15 235 µs (5 ms interval; free-threaded 6.7 / 16.2 µs)",
	"interference/pythread/simplequeue/busy=1/si=0.5ms":             "median 572 µs, p99 2 187 µs",
	"interference/pythread/simplequeue/busy=1/si=default/cross-cpu": "median 5 096 µs, p99 15 235 µs (unpinned, 24 cores)",
	"interference/pythread/simplequeue/busy=1/si=0.5ms/cross-cpu":   "median 572 µs, p99 2 187 µs (unpinned, 24 cores)",
	"interference/pytask/asyncio-queue/busy=0/si=default":           "median 4.0 µs, p99 6.9 µs",
	"interference/pytask/asyncio-queue/busy=1/si=default":           "median 8.2 µs, p99 5 146 µs",
	"hop/pytask/direct":                                             "8.4 µs",
	"hop/pytask/executor":                                           "30.4 µs (run_in_executor)",
	"hop/pytask/aiosqlite":                                          "58.8 µs",
	"callchain/pythread/plain":                                      "55 ns",
	"callchain/pytask/coroutine":                                    "149 ns",
	"callchain/pytask/create-task":                                  "~2 µs per task, ~2.2 KiB per task",
}

// pyReferenceFT holds the published figures for free-threaded builds.
var pyReferenceFT = map[string]string{
	"ring/pythread/simplequeue/n=2":                                 "4.64 µs per hop (free-threaded)",
	"ring/pythread/simplequeue/n=100":                               "5.22 µs per hop (free-threaded)",
	"interference/pythread/simplequeue/busy=1/si=default":           "median 6.7 µs, p99 16.2 µs (free-threaded)",
	"interference/pythread/simplequeue/busy=1/si=default/cross-cpu": "median 6.7 µs, p99 16.2 µs (free-threaded, unpinned, 24 cores)",
}

// pyReferenceSource says where the figures come from.
const pyReferenceSource = "CPython 3.14 on 24-core Linux unless noted (SPEC §8)"

func pythonFindings(arms []result.Arm) []string {
	var out []string
	by := map[string]result.Arm{}
	for _, a := range arms {
		if a.Status == result.StatusOK {
			by[a.Name] = a
		}
	}
	ok := func(name string) (result.Arm, bool) { a, ok := by[name]; return a, ok }
	for _, py := range pyTags(arms) {
		n := func(k string) string { return withPy("python/"+k, py) }
		sfx := pySuffixText(py)
		u, ok1 := ok(n("pingpong/pythread/simplequeue/unpinned"))
		s, ok2 := ok(n("pingpong/pythread/simplequeue/same-cpu"))
		c, ok3 := ok(n("pingpong/pythread/simplequeue/cross-cpu"))
		if ok1 && ok2 {
			line := fmt.Sprintf("placement%s: a CPython thread round trip costs %s unpinned (%s switches) and %s with both threads on one CPU (%s switches)",
				sfx, result.FormatNs(u.Median), swText(u), result.FormatNs(s.Median), swText(s))
			if ok3 {
				line += fmt.Sprintf(", %s on two CPUs (%s switches)", result.FormatNs(c.Median), swText(c))
			}
			out = append(out, line+"; reported for a 2-vCPU VM: ~50 µs unpinned, ~6 µs per hop pinned to one CPU")
		}
		for _, place := range []string{"", "/cross-cpu"} {
			t0, okA := ok(n("interference/pythread/simplequeue/busy=0/si=default" + place))
			if !okA && place == "" {
				t0, okA = u, ok1
			}
			t1, okB := ok(n("interference/pythread/simplequeue/busy=1/si=default" + place))
			t2, okC := ok(n("interference/pythread/simplequeue/busy=1/si=0.5ms" + place))
			if !okB || t1.Percentiles == nil {
				continue
			}
			where := "unpinned"
			if place != "" {
				where = "the two threads on different CPUs, the busy one beside the measuring thread"
			}
			line := fmt.Sprintf("one busy thread%s, %s: thread round trip p50 %s, p99 %s at switch interval %s", sfx, where,
				result.FormatNs(t1.Percentiles.P50), result.FormatNs(t1.Percentiles.P99), t1.Params["switch_interval"])
			if okA && t0.Percentiles != nil {
				line += fmt.Sprintf(" (none: p50 %s, p99 %s)", result.FormatNs(t0.Percentiles.P50), result.FormatNs(t0.Percentiles.P99))
			}
			if okC && t2.Percentiles != nil {
				line += fmt.Sprintf("; at %s: p50 %s, p99 %s", t2.Params["switch_interval"], result.FormatNs(t2.Percentiles.P50), result.FormatNs(t2.Percentiles.P99))
			}
			if t1.Percentiles.P50 >= busyMedianNs {
				line += ": the woken thread waits for the busy one to be forced off the GIL"
			} else {
				line += ": the woken thread mostly took the GIL before the busy thread did; only the tail waits a switch interval"
			}
			out = append(out, line)
		}
		a0, okD := ok(n("interference/pytask/asyncio-queue/busy=0/si=default"))
		if !okD {
			a0, okD = ok(n("pingpong/pytask/asyncio-queue/unpinned"))
		}
		a1, okE := ok(n("interference/pytask/asyncio-queue/busy=1/si=default"))
		if okD && okE && a0.Percentiles != nil && a1.Percentiles != nil {
			out = append(out, fmt.Sprintf("one busy thread%s: asyncio round-trip median %s → %s, p99 %s → %s: tasks hand over without the GIL, but lose it to the busy thread each switch interval",
				sfx, result.FormatNs(a0.Percentiles.P50), result.FormatNs(a1.Percentiles.P50),
				result.FormatNs(a0.Percentiles.P99), result.FormatNs(a1.Percentiles.P99)))
		}
		d, okF := ok(n("hop/pytask/direct"))
		e, okG := ok(n("hop/pytask/executor"))
		t, okH := ok(n("hop/pytask/two-hop"))
		if okF && okG && okH && d.Median > 0 {
			out = append(out, fmt.Sprintf("sqlite3 lookup%s: direct %s; one executor hop %s (%.1f× direct); two hops %s (%.1f×)",
				sfx, result.FormatNs(d.Median), result.FormatNs(e.Median), e.Median/d.Median, result.FormatNs(t.Median), t.Median/d.Median))
		}
	}
	// The published figures beside ours, arm by arm.
	var refs []string
	for _, a := range arms {
		key, _ := pyKey(a.Name)
		ref, has := pyReference[key]
		if ft, ok := pyReferenceFT[key]; ok && a.Params["gil"] == "disabled" {
			ref, has = ft, true
		}
		if !has || a.Status != result.StatusOK {
			continue
		}
		here := result.FormatNs(a.Median)
		if a.Percentiles != nil && strings.HasPrefix(key, "interference/") {
			here = "median " + result.FormatNs(a.Percentiles.P50) + ", p99 " + result.FormatNs(a.Percentiles.P99)
		}
		if a.Switches != nil && strings.HasPrefix(key, "pingpong/") {
			here += fmt.Sprintf(", %.1f OS switches", a.Switches.Total())
		}
		line := fmt.Sprintf("%s: here %s; published %s", strings.TrimPrefix(a.Name, "python/"), here, ref)
		if notComparable(a) {
			line += " — not comparable: this arm carries harness cost the published plain loop did not (its note says which)"
		}
		refs = append(refs, line)
	}
	if len(refs) > 0 {
		out = append(out, "published reference figures, "+pyReferenceSource+", beside ours:")
		out = append(out, refs...)
	}
	return out
}

// notComparable reports whether the driver said that the arm carries
// harness cost a plain loop (the published figures') would not: its notes
// then start with "not comparable".
func notComparable(a result.Arm) bool {
	for _, n := range a.Notes {
		if strings.HasPrefix(n, "not comparable") {
			return true
		}
	}
	return false
}

func swText(a result.Arm) string {
	if a.Switches == nil {
		return "?"
	}
	return fmt.Sprintf("%.1f", a.Switches.Total())
}

// pythonMetrics declares the figures python arms add beside the median.
var pythonMetrics = []exp.Metric{
	{Name: "py-clock-ns", Unit: "ns", Better: exp.NotRanked, Doc: "cost of one time.perf_counter() read in the driver"},
	{Name: "measuring-thread-switches/op", Unit: "switches", Better: exp.LowerIsBetter, Doc: "OS switches per op of the driver's measuring thread alone (RUSAGE_THREAD)"},
	{Name: "task-bytes", Unit: "bytes", Better: exp.LowerIsBetter, Doc: "memory per asyncio task (tracemalloc)"},
}

// pythonRefs: until the CPython arms move into the experiments they
// measure, those experiments' CPython figures stand beside the
// python/<experiment>/… arms (the fork pipe's substrate is "process" here).
var pythonRefs = func() []exp.Reference {
	var out []exp.Reference
	for _, e := range []struct {
		name string
		refs []exp.Reference
	}{{"pingpong", pingpongRefs}, {"ring", ringRefs}, {"yield", yieldRefs}, {"interference", interferenceRefs}} {
		for _, r := range e.refs {
			if len(r.Substrates) == 0 {
				continue
			}
			r.Prefix = "python/" + e.name + "/"
			r.Substrates = append([]string{"process"}, r.Substrates...)
			if r.Substrates[1] != "pyprocess" {
				r.Substrates = r.Substrates[1:]
			}
			out = append(out, r)
		}
	}
	return out
}()

// The verdict's CPython rows of the handoff table.
var pythonHeadline = []exp.Headline{
	{Label: "CPython threads, SimpleQueue", One: []string{"python/pingpong/pythread/simplequeue/same-cpu"},
		Across: []string{"python/pingpong/pythread/simplequeue/cross-cpu", "python/pingpong/pythread/simplequeue/unpinned"}, Published: "7.2 µs (7.15–7.63), 2.0 switches"},
	{Label: "asyncio tasks, asyncio.Queue", One: []string{"python/pingpong/pytask/asyncio-queue/same-cpu"},
		Across: []string{"python/pingpong/pytask/asyncio-queue/cross-cpu", "python/pingpong/pytask/asyncio-queue/unpinned"}, Published: "4.3 µs (4.25–4.49)"},
}

// pythonVerdict: a CPython thread round trip beside one busy thread, and
// the sqlite3 lookup with an executor hop.
func pythonVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	const busyPublished = "p50 5.9 µs → 5 096 µs, p99 16.6 µs → 15 235 µs"
	var tail string
	busy := v.Where("python", func(a result.Arm) bool {
		return strings.HasPrefix(a.Name, "python/interference/pythread/") && a.Params["busy"] == "1" && a.Percentiles != nil
	})
	if len(busy) > 0 {
		a := busy[0]
		si := a.Params["switch_interval"]
		if si == "" {
			si = "—"
		}
		tail = fmt.Sprintf("  CPython thread round trip, 1 busy thread, switch interval %s: p50 %s, p99 %s", si, result.FormatNs(a.Percentiles.P50), result.FormatNs(a.Percentiles.P99))
		if b, ok := v.Pick(strings.Replace(a.Name, "busy=1", "busy=0", 1)); ok && b.Percentiles != nil {
			tail = fmt.Sprintf("  CPython thread round trip, 1 busy thread, switch interval %s: p50 %s → %s, p99 %s → %s", si,
				result.FormatNs(b.Percentiles.P50), result.FormatNs(a.Percentiles.P50), result.FormatNs(b.Percentiles.P99), result.FormatNs(a.Percentiles.P99))
		}
		tail += "; published " + busyPublished
	} else {
		tail = "  CPython: not measured (python3 missing or its arms not selected); published " + busyPublished
	}
	out := []exp.VerdictSection{{Block: exp.BlockTail, Lines: []string{tail}}}
	d, ok1 := v.Pick("python/hop/pytask/direct")
	e, ok2 := v.Pick("python/hop/pytask/executor")
	if ok1 && ok2 {
		line := fmt.Sprintf("  CPython sqlite3: direct %s · executor hop %s (%.1f×)", exp.Figure(d), exp.Figure(e), e.Median/d.Median)
		if t, ok := v.Pick("python/hop/pytask/two-hop"); ok {
			line += fmt.Sprintf(" · two hops %s (%.1f×)", exp.Figure(t), t.Median/d.Median)
		}
		out = append(out, exp.VerdictSection{Block: exp.BlockHop, Lines: []string{line}})
	}
	return out
}
