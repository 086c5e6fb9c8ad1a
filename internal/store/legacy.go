package store

import (
	"io"
	"regexp"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// The reader of stored runs, and the one place that knows the names older
// ctxlab wrote: a run is read back from the history (Get) or from a file
// (ctxlab import, compare FILE, report FILE) through ReadRun, which maps
// each legacy name to today's, so an old run compares arm by arm with a
// new one. result, the leaf model, reads and writes today's names only.

// ReadRun reads one run document as any ctxlab stored or exported it:
// result.Read, then the names of older versions mapped to today's (arms of
// the former python experiment, metric names from before the one naming
// convention), and schema 1's "ok" arms with too few ops per repetition
// marked "too few ops".
func ReadRun(r io.Reader) (*result.Run, error) {
	run, err := result.Read(r)
	if err != nil {
		return nil, err
	}
	for i := range run.Arms {
		run.Arms[i].Metrics = renameLegacyMetrics(run.Arms[i].Metrics)
	}
	renameLegacyPython(run)
	markLegacyFewOps(run)
	return run, nil
}

// legacyFewOps is the noise reason schema 1 gave an arm whose
// repetitions held too few ops, which it left "ok".
var legacyFewOps = regexp.MustCompile(`^only \d+ ops per repetition \(< \d+\)`)

// markLegacyFewOps gives each arm of a schema-1 run that was "ok" with too
// few ops per repetition today's status, "too few ops", with the noise
// reason that said so as its reason, so an old run shows no figure from
// too few ops either (SPEC §2 rule 10). The run's stored checks and
// findings keep the words they were written with.
func markLegacyFewOps(r *result.Run) {
	if r.Schema >= 2 {
		return
	}
	for i := range r.Arms {
		a := &r.Arms[i]
		if a.Status != result.StatusOK {
			continue
		}
		for j, why := range a.Noise.Reasons {
			if legacyFewOps.MatchString(why) {
				a.Status, a.Reason = result.StatusTooFewOps, why
				a.Noise.Reasons = append(a.Noise.Reasons[:j:j], a.Noise.Reasons[j+1:]...)
				a.Noise.Noisy = len(a.Noise.Reasons) > 0
				r.Schema = result.SchemaVersion // the status is today's
				break
			}
		}
	}
}

// LegacyMetricNames maps the metric names runs stored before the one
// naming convention (exp.NameConvention) to today's.
var LegacyMetricNames = map[string]string{
	"oncpu_ns/element":                 "oncpu-ns/element",
	"runq_wait_ns/element":             "runq-wait-ns/element",
	"worker_oncpu_ns/element":          "worker-oncpu-ns/element",
	"vol_switches/ms":                  "voluntary-switches/ms",
	"invol_switches/ms":                "involuntary-switches/ms",
	"turn_elements":                    "turn-elements",
	"p50_in_pile":                      "p50-in-pile",
	"p50_go_preempt_periods":           "p50-go-preempt-periods",
	"max_go_preempt_periods":           "max-go-preempt-periods",
	"go_preempt_samples":               "go-preempt-samples",
	"starve_samples":                   "starve-samples",
	"starve_samples_after_hog":         "starve-samples-after-hog",
	"go_sched_wakeups":                 "go-sched-wakeups",
	"go_sched_latency_p50_ns":          "go-sched-latency-p50-ns",
	"go_sched_latency_p99_ns":          "go-sched-latency-p99-ns",
	"go_sched_latency_max_ns":          "go-sched-latency-max-ns",
	"latency_clusters":                 "latency-clusters",
	"throughput_ops_per_s":             "throughput-ops/s",
	"hop/half-rt":                      "half-rt-ratio",
	"x-direct":                         "direct-ratio",
	"x-plain":                          "plain-ratio",
	"x-inline":                         "inline-ratio",
	"ms/10000-lookups":                 "elapsed-ms/10000-lookups",
	"measuring_thread_switches/op":     "measuring-thread-switches/op",
	"py_clock_ns":                      "py-clock-ns",
	"task_bytes":                       "task-bytes",
	"IPC":                              "ipc",
	"LLC-load-misses/1k-instructions":  "llc-load-misses/1k-instructions",
	"dTLB-load-misses/1k-instructions": "dtlb-load-misses/1k-instructions",
}

// renameLegacyMetrics returns m with legacy names replaced (m itself when
// nothing needs renaming).
func renameLegacyMetrics(m map[string]float64) map[string]float64 {
	old := false
	for k := range m {
		if _, ok := LegacyMetricNames[k]; ok {
			old = true
			break
		}
	}
	if !old {
		return m
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		if n, ok := LegacyMetricNames[k]; ok {
			k = n
		}
		out[k] = v
	}
	return out
}

// legacyPython is the experiment CPython's arms were stored under before
// CPython became a substrate of each experiment.
const legacyPython = "python"

// legacyMemoryLookups: the former python experiment's sqlite3 lookups
// ran in :memory:; the arm of the same name runs on a database file now,
// and the :memory: one is …/db=memory.
var legacyMemoryLookups = exp.Key("hop", exp.Seg("pytask"))

// LegacyPythonName maps an arm name of the former "python" experiment to
// today's: "python/EXPERIMENT/pythread/…" is "EXPERIMENT/pythread/…", the
// forked process, "python/EXPERIMENT/process/…", is
// "EXPERIMENT/pyprocess/…" (EXPERIMENT/process/… is Go's), and the
// lookups that ran in :memory: are …/db=memory. Other names are returned
// as they are, with ok false.
func LegacyPythonName(name string) (string, bool) {
	k, err := exp.ParseArmKey(name)
	if err != nil || k.Experiment != legacyPython || len(k.Written()) < 2 {
		return name, false
	}
	k, ok := k.Lift()
	if !ok {
		return name, false
	}
	// The old substrate "process" (os.fork) is "pyprocess" now: the Go
	// experiment has its own process arms under the same mechanism names.
	if len(k.Written()) >= 2 && k.Segments[0] == exp.Seg("process") {
		k.Segments[0] = exp.Seg("pyprocess")
	}
	if isUnder(k, legacyMemoryLookups) {
		k = k.With(exp.KV("db", "memory"))
	}
	return k.String(), true
}

// isUnder says whether k's experiment and first segments are prefix's,
// and k has more.
func isUnder(k, prefix exp.ArmKey) bool {
	if k.Experiment != prefix.Experiment || len(k.Written()) <= len(prefix.Segments) || len(k.Segments) < len(prefix.Segments) {
		return false
	}
	for i, s := range prefix.Segments {
		if k.Segments[i] != s {
			return false
		}
	}
	return true
}

// renameLegacyPython rewrites a run stored before the rename: the arms of
// experiment "python" join the experiments their names now lead with, and
// the python experiment's checks and findings go with them, so a stored
// run compares arm by arm with a new one.
func renameLegacyPython(r *result.Run) {
	renamed := map[string]bool{} // the arms' new names
	for i := range r.Arms {
		a := &r.Arms[i]
		if a.Experiment != legacyPython {
			continue
		}
		n, ok := LegacyPythonName(a.Name)
		if !ok {
			continue
		}
		renamed[n] = true
		a.Name = n
		k := exp.MustParseArmKey(n)
		if v, _ := k.Param("db"); v == "memory" && a.Params != nil && a.Params["db"] == "" {
			a.Params["db"] = "memory"
		}
		a.Experiment = k.Experiment
		if a.Substrate == "process" {
			a.Substrate = "pyprocess"
		}
		renameCheckArms(a.Checks)
	}
	if len(renamed) == 0 {
		return
	}
	r.Experiments = moveLegacyPython(r.Experiments, r.Arms, renamed)
}

// moveLegacyPython is exps without the python experiment, its checks and
// findings moved to the experiments of the arms they are about (an
// experiment of today's that the run lacks is added).
func moveLegacyPython(exps []result.Experiment, arms []result.Arm, renamed map[string]bool) []result.Experiment {
	var out []result.Experiment
	at := map[string]int{}
	var old *result.Experiment
	for _, e := range exps {
		if e.Name == legacyPython {
			e := e
			old = &e
			continue
		}
		at[e.Name] = len(out)
		out = append(out, e)
	}
	if old == nil {
		return out
	}
	target := func(name string) *result.Experiment {
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, result.Experiment{Name: name, Op: "per arm"})
		}
		return &out[i]
	}
	renameCheckArms(old.Checks)
	for _, c := range old.Checks {
		if len(c.Arms) == 0 {
			continue
		}
		e := exp.ExperimentOf(c.Arms[0])
		target(e).Checks = append(target(e).Checks, c)
	}
	owner := findingOwners(old.Findings, arms, renamed)
	for i, f := range old.Findings {
		if owner[i] != "" {
			target(owner[i]).Findings = append(target(owner[i]).Findings, f)
		}
	}
	return out
}

// findingOwners is, for each stored python finding, the experiment it
// goes to: that of the first arm it names (findingOwner); a finding that
// names none goes with the next that does (a heading), else with the one
// before.
func findingOwners(findings []string, arms []result.Arm, renamed map[string]bool) []string {
	owner := make([]string, len(findings))
	for i, f := range findings {
		owner[i] = findingOwner(f, arms, renamed)
	}
	for i := len(owner) - 2; i >= 0; i-- {
		if owner[i] == "" {
			owner[i] = owner[i+1]
		}
	}
	for i := range owner {
		if owner[i] == "" && i > 0 {
			owner[i] = owner[i-1]
		}
	}
	return owner
}

// renameCheckArms renames the arms a stored check names, in its list and
// in its detail.
func renameCheckArms(cs []result.Check) {
	for i := range cs {
		for j, n := range cs[i].Arms {
			if nn, ok := LegacyPythonName(n); ok {
				cs[i].Arms[j] = nn
				cs[i].Detail = strings.ReplaceAll(cs[i].Detail, n, nn)
			}
		}
	}
}

// findingOwner is the experiment of the renamed arm with the longest
// name whose plan name (without its interpreter) a stored python finding
// quotes, or "".
func findingOwner(f string, arms []result.Arm, renamed map[string]bool) string {
	best, owner := 0, ""
	for _, a := range arms {
		if len(a.Name) <= best || !renamed[a.Name] {
			continue
		}
		if strings.Contains(f, exp.PlanName(a.Name)) {
			best, owner = len(a.Name), a.Experiment
		}
	}
	return owner
}
