package experiments

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// CPython's twin of the concurrency table (the seeds' compare(op_async,
// op_sync, n, C)): asyncio tasks under a semaphore, each lookup hopping to
// a worker thread, against a thread pool's map of the plain call.

// concPyWays: the arm's way → its substrate, driver bench and how.
var concPyWays = []struct{ way, sub, bench, how, label string }{
	{"to_thread", "pytask", "concurrency.sem", "to_thread", "asyncio.gather under Semaphore(C), each call via to_thread"},
	{"run_in_executor", "pytask", "concurrency.sem", "executor", "asyncio.gather under Semaphore(C), each call via run_in_executor"},
	{"pool-map", "pythread", "concurrency.pool", "", "ThreadPoolExecutor(C).map"},
}

// concPyKey is a CPython arm's key: concurrency/SUB/OP/WAY/c=C.
func concPyKey(sub, op, way string, c int) exp.ArmKey {
	return exp.Key("concurrency", exp.Seg(sub), exp.Seg(op), exp.Seg(way), exp.KV("c", c))
}

func concurrencyPyPlan(p exp.Params) []pyArm {
	levels, err := concInFlight(p)
	if err != nil {
		return nil // concurrencyArms has refused the run already
	}
	var out []pyArm
	// The user's query first (concurrencyArms has refused a bad one already).
	if user, err := userOp(p); err == nil && user != nil {
		for _, w := range concPyWays {
			for _, c := range levels {
				for _, pa := range userPyArms(user, sqlop.ConnApp, w.bench, []string{w.how}, func(string) exp.ArmKey {
					return concPyKey(w.sub, userOpName, w.way, c)
				}) {
					pa.sub, pa.mech, pa.full = w.sub, w.way, w.way == "run_in_executor"
					pa.params["op"], pa.params["way"], pa.params["c"] = "user", w.way, strconv.Itoa(c)
					if w.how == "" {
						delete(pa.params, "how")
					}
					out = append(out, pa)
				}
			}
		}
	}
	if call, err := userPyCall(p); err == nil && call != nil {
		for _, w := range concPyWays {
			for _, c := range levels {
				for _, pa := range pyCallArms(call, w.bench, []string{w.how}, func(string) exp.ArmKey {
					return concPyKey(w.sub, "py-call", w.way, c)
				}) {
					pa.sub, pa.mech, pa.full = w.sub, w.way, w.way == "run_in_executor"
					pa.params["way"], pa.params["c"] = w.way, strconv.Itoa(c)
					if w.how == "" {
						delete(pa.params, "how")
					}
					out = append(out, pa)
				}
			}
		}
	}
	for _, op := range []string{"sqlite-file", "dict"} {
		for _, w := range concPyWays {
			for _, c := range levels {
				params := map[string]string{"op": op, "way": w.way, "c": strconv.Itoa(c)}
				if w.how != "" {
					params["how"] = w.how
				}
				out = append(out, pyArm{key: concPyKey(w.sub, op, w.way, c),
					sub: w.sub, mech: w.way, op: "lookup", bench: w.bench, params: params, place: "unpinned",
					quick: op == "sqlite-file" && c == 10 && (w.way == "to_thread" || w.way == "pool-map"),
					full:  w.way == "run_in_executor", tempDB: op == "sqlite-file"})
			}
		}
	}
	return out
}

func concSwitches(a result.Arm) string {
	if a.Switches == nil {
		return ""
	}
	return fmt.Sprintf(", %.2f OS switches per lookup", a.Switches.Total())
}

// concurrencyPyChecks: the seeds' shape — at every C, a pool's map of the
// plain call beats a task per call hopping to a thread under a semaphore.
func concurrencyPyChecks(arms []result.Arm) []result.Check {
	idx := concIndex(arms)
	var out []result.Check
	for k, s := range idx {
		if k.way != "to_thread" && k.way != "run_in_executor" {
			continue
		}
		t, ok := idx[concKey{op: k.op, way: "pool-map", py: k.py, c: k.c}]
		if !ok {
			continue
		}
		out = append(out, result.Check{
			Name:  "CPython: ThreadPoolExecutor(C).map of the plain call beats a task per call under a Semaphore(C) hopping to a thread (per lookup, same C)",
			Holds: t.Median < s.Median,
			Detail: fmt.Sprintf("%s at C=%d%s: pool map %s per lookup%s; semaphore + %s %s%s", k.op, k.c, onInterpreter(k.py),
				result.FormatNs(t.Median), concSwitches(t), k.way, result.FormatNs(s.Median), concSwitches(s)),
			Arms: []string{t.Name, s.Name},
		})
	}
	slices.SortFunc(out, func(a, b result.Check) int { return strings.Compare(a.Detail, b.Detail) })
	return out
}

func concurrencyPyFindings(arms []result.Arm) []string {
	idx := concIndex(arms)
	var out []string
	for _, py := range interpreterTags(arms) {
		for _, op := range []string{"sqlite-file", "dict"} {
			for _, w := range concPyWays {
				k := concKey{op: op, way: w.way, py: py}
				var parts []string
				for _, c := range concLevels(idx, k) {
					a := idx[k.at(c)]
					part := fmt.Sprintf("C=%d %.1f ms", c, a.Median*concTotal/1e6)
					if a.Switches != nil {
						part += fmt.Sprintf(" (%.2f switches/lookup)", a.Switches.Total())
					}
					parts = append(parts, part)
				}
				if len(parts) > 0 {
					out = append(out, fmt.Sprintf("CPython%s: 10 000 %s lookups through %s: %s", onInterpreter(py), op, w.label, strings.Join(parts, " · ")))
				}
			}
		}
	}
	return out
}
