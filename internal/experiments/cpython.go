package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// CPython as a substrate (SPEC §5.9): pingpong, ring, yield, interference,
// hop and callchain each add arms whose workers are CPython threads
// (pythread), asyncio tasks (pytask) or forked CPython processes
// (pyprocess), measured by ctxlab's embedded driver (driver.py) inside the
// interpreter and merged into the same result model. Each such arm times
// itself in Python and the runner summarises it, as mech serves the Go
// arms. This file registers no experiment: it resolves the interpreter,
// binds a driver bench to an arm and converts the driver's answer; the
// experiments own their CPython arms, checks and references.
func init() {
	exp.RegisterArmOption(exp.StringOption("python", "which CPython runs the CPython arms (pythread, pytask, pyprocess): a command or path, or all (every python3.N/python3.Nt on PATH); default python3 (same as --python)"),
		func(a exp.Arm) bool { return cpythonSubstrates[a.Substrate] })
	exp.RegisterSelector("python", "every CPython arm of every experiment: CPython threads, asyncio tasks and forked CPython processes",
		"*/pythread", "*/pytask", "*/pyprocess")
}

// cpythonSubstrates are the substrates whose arms the driver measures.
var cpythonSubstrates = map[string]bool{"pythread": true, "pytask": true, "pyprocess": true}

// cpythonDoc is what each experiment's Doc says about its CPython arms.
const cpythonDoc = `CPython arms (substrates pythread, pytask, pyprocess) run ctxlab's embedded
driver with python3 from PATH, --python PATH, or --python all (every python3.N
and python3.Nt found, arms suffixed /py=VERSION); the driver times them itself.
Without python3 they are skipped with a note. ` + "`ctxlab run python`" + ` runs
every CPython arm of every experiment.`

// cpythonMetrics are the figures every CPython arm adds beside its median.
var cpythonMetrics = []exp.Metric{
	{Name: "py-clock-ns", Unit: "ns", Better: exp.NotRanked, Doc: "cost of one time.perf_counter() read in the driver"},
	{Name: "measuring-thread-switches/op", Unit: "switches", Better: exp.LowerIsBetter, Doc: "OS switches per op of the driver's measuring thread alone (RUSAGE_THREAD)"},
}

// pyArm is one CPython arm before it is bound to an interpreter.
type pyArm struct {
	key       exp.ArmKey // pingpong/pythread/simplequeue/unpinned
	sub, mech string
	op        string
	bench     string
	params    map[string]string
	// driverOnly are params the driver gets but the stored arm does not
	// (the user's file path, query text and arguments).
	driverOnly map[string]string
	// check, when set, is asked of the interpreter before any arm opens
	// (the user's module imports): its error is a usage error, and so is
	// finding no interpreter.
	check  func(ctx context.Context, in *pydriver.Interpreter) error
	quick  bool
	full   bool // only in the full suite
	place  string
	minOps int
	unsup  string
	// tempDB: the driver makes a ctxlab-sqlop-<pid>- directory for the
	// arm's database file, so opening the arm sweeps stale ones first.
	tempDB bool
	// freeThreaded: a published figure exists for a free-threaded build;
	// --python all without one lists the arm as unsupported for it.
	freeThreaded bool
}

// withCPython returns an experiment's Arms: its Go arms, then the CPython
// arms of plan bound to the run's interpreters.
func withCPython(goArms func(exp.Params) ([]exp.Arm, error), plan func(exp.Params) []pyArm) func(exp.Params) ([]exp.Arm, error) {
	return func(p exp.Params) ([]exp.Arm, error) {
		arms, err := goArms(p)
		if err != nil {
			return nil, err
		}
		py, err := cpythonArms(p, plan(p))
		if err != nil {
			return nil, err
		}
		return append(arms, py...), nil
	}
}

// isCPython reports whether the arm's workers are CPython's.
func isCPython(a result.Arm) bool { return cpythonSubstrates[a.Substrate] }

// splitCPython separates an experiment's Go and OS arms from its CPython ones.
func splitCPython(arms []result.Arm) (native, py []result.Arm) {
	for _, a := range arms {
		if isCPython(a) {
			py = append(py, a)
		} else {
			native = append(native, a)
		}
	}
	return native, py
}

// cpythonChecks evaluates an experiment's native checks on its native arms
// and its CPython checks on its CPython arms: neither sees the other's.
func cpythonChecks(native, py func([]result.Arm) []result.Check) func([]result.Arm) []result.Check {
	return func(arms []result.Arm) []result.Check {
		n, p := splitCPython(arms)
		var out []result.Check
		if native != nil {
			out = native(n)
		}
		if py != nil && len(p) > 0 {
			out = append(out, py(p)...)
		}
		return out
	}
}

// cpythonFindings is cpythonChecks for findings.
func cpythonFindings(native, py func([]result.Arm) []string) func([]result.Arm) []string {
	return func(arms []result.Arm) []string {
		n, p := splitCPython(arms)
		var out []string
		if native != nil {
			out = native(n)
		}
		if py != nil && len(p) > 0 {
			out = append(out, py(p)...)
		}
		return out
	}
}

// nativeDerive runs an experiment's Derive on its native arms only (in
// place), so baselines picked by name never land on a CPython arm.
func nativeDerive(derive func([]result.Arm)) func([]result.Arm) {
	return func(arms []result.Arm) {
		var idx []int
		var n []result.Arm
		for i, a := range arms {
			if !isCPython(a) {
				idx = append(idx, i)
				n = append(n, a)
			}
		}
		derive(n)
		for j, i := range idx {
			arms[i] = n[j]
		}
	}
}

// pyBench is an opened CPython arm: a SelfTimed bench. The interpreter's
// driver sets the bench up in Start and holds it until Close; the runner
// sizes it through Batch.
type pyBench struct {
	in  *pydriver.Interpreter
	req pydriver.Request
	arm *pydriver.Arm
}

func (b *pyBench) Start(ctx context.Context) (exp.SelfTiming, error) {
	arm, err := b.in.Open(ctx, b.req)
	if err != nil {
		return exp.SelfTiming{}, pyErr(err)
	}
	b.arm = arm
	return exp.SelfTiming{ClockNs: arm.Hello.ClockNs, UnitOps: arm.Unit, Sampled: arm.Sampled,
		MinOps: b.req.MinOps, MaxSamples: maxPySamples}, nil
}

func (b *pyBench) Batch(ctx context.Context, n int) (int, int64, error) {
	ops, ns, err := b.arm.Batch(ctx, n)
	return ops, ns, pyErr(err)
}

func (b *pyBench) Measure(ctx context.Context, req exp.DirectRequest) (*exp.DirectResult, error) {
	return runPy(ctx, b.in, b.arm, req)
}

// Participants are the driver's process and its children, once the arm
// is open. The runner reads them only for a comparison's turns (their CPU
// time, which the turns' batches do not report): over the timed
// repetitions the driver counts its own switches and CPU time
// (exp.DirectResult).
func (b *pyBench) Participants() exp.Participants {
	if b.arm == nil {
		return exp.Participants{}
	}
	return exp.Participants{PIDs: b.arm.Processes()}
}

func (b *pyBench) Close() error {
	if b.arm != nil {
		b.arm.Close()
	}
	return nil
}

// skipErr is an error whose text is the reason alone, classified by kind
// (exp.ErrSkipped, exp.ErrUnsupported).
type skipErr struct {
	reason string
	kind   error
}

func (e *skipErr) Error() string { return e.reason }
func (e *skipErr) Unwrap() error { return e.kind }

// interpreters resolves the run's --python choice. An explicit choice that
// does not work is an error; a default python3 that is missing or does not
// answer is a reason to skip the arms. Every CPython arm of a run asks, so
// the answer is kept per choice and PATH (each ask would start every
// interpreter once more); one cut short by ctx (SIGINT) is not kept.
func interpreters(ctx context.Context, choice string) ([]*pydriver.Interpreter, string, error) {
	key := choice + "\x00" + os.Getenv("PATH")
	resolved.Lock()
	defer resolved.Unlock()
	if r, ok := resolved.m[key]; ok {
		return r.ins, r.skip, r.err
	}
	ins, skip, err := resolveInterpreters(ctx, choice)
	if ctx.Err() != nil {
		return nil, "", fmt.Errorf("finding the CPython interpreter: %w", context.Cause(ctx))
	}
	if resolved.m == nil {
		resolved.m = map[string]resolution{}
	}
	resolved.m[key] = resolution{ins, skip, err}
	return ins, skip, err
}

type resolution struct {
	ins  []*pydriver.Interpreter
	skip string
	err  error
}

var resolved struct {
	sync.Mutex
	m map[string]resolution
}

func resolveInterpreters(ctx context.Context, choice string) ([]*pydriver.Interpreter, string, error) {
	switch choice {
	case "", "python3":
		in, err := pydriver.ResolveContext(ctx, "python3")
		if err != nil {
			return nil, err.Error() + "; the CPython arms need one (--python PATH chooses another)", nil
		}
		return []*pydriver.Interpreter{in}, "", nil
	case "all":
		ins := pydriver.FindAllContext(ctx)
		if len(ins) == 0 {
			return nil, "no python3, python3.N or python3.Nt on PATH runs; the CPython arms need one", nil
		}
		return ins, "", nil
	}
	in, err := pydriver.ResolveContext(ctx, choice)
	if err != nil {
		return nil, "", fmt.Errorf("--python %s: %v; want a CPython 3 command or path, or all", choice, err)
	}
	return []*pydriver.Interpreter{in}, "", nil
}

// noFreeThreaded is the reason a free-threaded arm of --python all gives
// when no interpreter found is a free-threaded build.
const noFreeThreaded = "no free-threaded CPython found (python3.Nt on PATH)"

// freeThreadedTag is the interpreter of the placeholder arms --python all
// lists for the free-threaded build when there is none.
const freeThreadedTag = "free-threaded"

// cpythonArms binds an experiment's CPython plan to the run's interpreter.
// One interpreter (python3, or --python PATH) leaves the arms' names as
// the plan has them, so they are listed and selected without starting
// Python: the interpreter is asked once the run resolves its arms
// (exp.Resolve) or opens the first one. --python all names each arm after
// its interpreter, so listing those arms asks every interpreter on PATH.
func cpythonArms(p exp.Params, plan []pyArm) ([]exp.Arm, error) {
	if len(plan) == 0 {
		return nil, nil
	}
	if p.Python == "all" {
		return cpythonAllArms(p, plan)
	}
	get := func(ctx context.Context) (*pydriver.Interpreter, error) {
		ins, skip, err := interpreters(ctx, p.Python)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			return nil, &skipErr{skip, exp.ErrSkipped}
		}
		return ins[0], nil
	}
	var arms []exp.Arm
	for _, pa := range plan {
		if pa.full && p.Suite != exp.SuiteFull {
			continue
		}
		a := pyArmOn(p, pa, "", get)
		if a.Unsupported == "" {
			check := pa.check
			a.Resolve = func(ctx context.Context) error {
				in, err := get(ctx)
				if err != nil && (check == nil || !errors.Is(err, exp.ErrSkipped)) {
					if errors.Is(err, exp.ErrSkipped) {
						return nil // a missing python3 skips the arms, with a note
					}
					return err
				}
				if check != nil {
					if err != nil {
						return fmt.Errorf("%s needs a CPython: %w", pa.key.String(), err)
					}
					return check(ctx, in)
				}
				return nil
			}
		}
		arms = append(arms, a)
	}
	return arms, nil
}

// cpythonAllArms binds the plan to every interpreter of --python all.
func cpythonAllArms(p exp.Params, plan []pyArm) ([]exp.Arm, error) {
	ins, skip, err := interpreters(context.Background(), p.Python)
	if err != nil {
		return nil, err
	}
	var arms []exp.Arm
	if skip != "" {
		for _, pa := range plan {
			if pa.full && p.Suite != exp.SuiteFull {
				continue
			}
			reason := skip
			arms = append(arms, exp.Arm{
				Name: pa.key.String(), Substrate: pa.sub, Mechanism: pa.mech, Op: pa.op, Params: pa.params,
				Placement: pa.place, Quick: pa.quick,
				Open: func(context.Context) (exp.Bench, error) { return nil, &skipErr{reason, exp.ErrSkipped} },
			})
		}
		return arms, nil
	}
	tags := map[string]int{}
	ft := false
	for _, in := range ins {
		tags[in.Tag()]++
		ft = ft || in.FreeThreaded
	}
	names := make([]string, len(ins))
	for i, in := range ins {
		if len(ins) > 1 { // one interpreter: the plan's names
			names[i] = in.Tag()
			if tags[in.Tag()] > 1 {
				names[i] += "-" + strconv.Itoa(i+1)
			}
		}
	}
	// Arm by arm, each on every interpreter in turn: one arm's builds run
	// one after another, on the machine as it was then, and sit side by
	// side in the table.
	for _, pa := range plan {
		if pa.full && p.Suite != exp.SuiteFull {
			continue
		}
		for i, in := range ins {
			arms = append(arms, bindPyArm(p, in, pa, names[i]))
		}
	}
	if !ft {
		for _, pa := range plan {
			if !pa.freeThreaded || pa.full && p.Suite != exp.SuiteFull {
				continue
			}
			params := map[string]string{"python_build": "free-threaded"}
			for k, v := range pa.params {
				params[k] = v
			}
			arms = append(arms, exp.Arm{
				Name: pa.key.WithInterpreter(freeThreadedTag).String(), Substrate: pa.sub, Mechanism: pa.mech, Op: pa.op, Params: params,
				Placement: pa.place, Unsupported: noFreeThreaded,
				Open: func(context.Context) (exp.Bench, error) {
					return nil, &skipErr{noFreeThreaded, exp.ErrUnsupported}
				},
			})
		}
	}
	return arms, nil
}

// bindPyArm makes the runner's arm for one CPython arm on an interpreter
// already found, named for it by tag under --python all ("" otherwise).
func bindPyArm(p exp.Params, in *pydriver.Interpreter, pa pyArm, tag string) exp.Arm {
	a := pyArmOn(p, pa, tag, func(context.Context) (*pydriver.Interpreter, error) { return in, nil })
	a.Params[exp.ParamPython], a.Params[exp.ParamPythonBuild] = in.Tag(), in.Build()
	return a
}

// pyArmOn makes the runner's arm for one CPython arm on the interpreter
// get finds when the arm opens (tagged tag under --python all), placed as
// the experiment's Go arms are (exp.Placements): the driver pins its two
// workers to A and B and the interpreter to the placement's CPUs.
func pyArmOn(p exp.Params, pa pyArm, tag string, get func(context.Context) (*pydriver.Interpreter, error)) exp.Arm {
	params := map[string]string{"placement": pa.place}
	for k, v := range pa.params {
		params[k] = v
	}
	req := pydriver.Request{Bench: pa.bench, Params: pa.params, MinOps: pa.minOps}
	if pa.driverOnly != nil {
		req.Params = map[string]string{}
		for _, m := range []map[string]string{pa.params, pa.driverOnly} {
			for k, v := range m {
				req.Params[k] = v
			}
		}
	}
	unsup := pa.unsup
	for _, pl := range exp.Placements(p) {
		if pl.Name != pa.place {
			continue
		}
		if pl.Unsupported != "" && unsup == "" {
			unsup = pl.Unsupported
		}
		req.CPUs = pl.Process // --cpus pins an unpinned interpreter
		if pl.A != nil {
			req.CPUs, req.CPUsA, req.CPUsB = union(pl.A, pl.B), pl.A, pl.B
		}
	}
	if req.CPUs != nil {
		params["cpus"] = intsText(req.CPUs)
	}
	return exp.Arm{
		Name: pa.key.WithInterpreter(tag).String(), Substrate: pa.sub, Mechanism: pa.mech, Op: pa.op, Params: params,
		Placement: pa.place, Quick: pa.quick, Unsupported: unsup,
		// Two CPython arms can be open at once (two drivers of one
		// interpreter), and take turns in bursts. Two kinds are set up
		// afresh for each turn instead: one with busy threads or processes
		// would keep them spinning through the other's turns; and an
		// unpinned one's threads, idle between bursts, settle where the
		// scheduler last put them (a thread round trip read 3.4× its GIL
		// build's in bursts, 1.06× as the arms), while a fresh set-up each
		// turn samples placements as the arm's own set-up does.
		OneAtATime: params["busy"] != "" && params["busy"] != "0" || pa.place == "unpinned",
		Open: func(ctx context.Context) (exp.Bench, error) {
			in, err := get(ctx)
			if err != nil {
				return nil, err
			}
			if pa.tempDB {
				sqlop.SweepTemp()
			}
			return &pyBench{in: in, req: req}, nil
		},
	}
}

// union is a and b's CPUs, a's first, each once.
func union(a, b []int) []int {
	out := append([]int(nil), a...)
	for _, c := range b {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// maxPySamples caps the latencies the driver sends back (JSON on a pipe).
const maxPySamples = 50000

// runPy asks the arm's driver for its timed repetitions and converts its
// answer into the runner's terms.
func runPy(ctx context.Context, in *pydriver.Interpreter, arm *pydriver.Arm, dr exp.DirectRequest) (*exp.DirectResult, error) {
	r, err := arm.Measure(ctx, pydriver.Timed{Reps: dr.Reps, Ops: dr.OpsPerRep, Every: dr.SampleEvery, PerOpNs: dr.PerOpNs})
	if err != nil {
		return nil, pyErr(err)
	}
	d := pyResult(r, arm.Hello)
	d.Params["python_build"] = in.Build()
	return d, nil
}

// pyErr is the arm's error for what the driver said: an unsupported arm
// is exp.ErrUnsupported, a failed one names the driver and the end of its
// stderr.
func pyErr(err error) error {
	var ref *pydriver.Refused
	if !errors.As(err, &ref) {
		return err
	}
	if ref.Unsupported {
		return &skipErr{ref.Reason, exp.ErrUnsupported}
	}
	msg := "python driver: " + ref.Reason
	if ref.Stderr != "" {
		msg += "; stderr: " + lastLines(ref.Stderr, 6)
	}
	return errors.New(msg)
}

// pyResult converts a driver response (already checked for shape).
func pyResult(r *pydriver.Response, h pydriver.Hello) *exp.DirectResult {
	d := &exp.DirectResult{OpsPerRep: r.Ops[0], Samples: r.SamplesNs, SampleEvery: r.SampleEvery,
		Voluntary: r.Switches.Voluntary + r.Switches.ChildVoluntary, Involuntary: r.Switches.Involuntary + r.Switches.ChildInvoluntary,
		ChildVoluntary: r.Switches.ChildVoluntary, ChildInvoluntary: r.Switches.ChildInvoluntary, Migrations: -1, CPUNs: r.CPUNs}
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
