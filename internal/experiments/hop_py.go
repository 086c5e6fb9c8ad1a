package experiments

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// hop's CPython arms: the seed's sqlite3 lookup from asyncio, direct and
// through hops, their checks and findings and the published figures.

// The CPython lookups: the seed's sqlite3 lookup from an asyncio task, on
// a database file (the seed's, the unnamed default) and in :memory:
// ("/db=memory"), directly and through hops to executor threads or
// aiosqlite's own thread.
var (
	hopPyWays = []string{"direct", "executor", "two-hop", "aiosqlite"}
	hopPyDBs  = []string{"file", "memory"}
)

// hopPyKey is the key of one CPython way on one database: hop/pytask/HOW
// on the file, hop/pytask/HOW/db=memory in :memory:.
func hopPyKey(how, db string) exp.ArmKey {
	k := exp.Key("hop", exp.Seg("pytask"), exp.Seg(how))
	if db == "file" {
		return k
	}
	return k.With(exp.KV("db", db))
}

// hopPyUserKey and hopPyCallKey are the CPython arms of the user's query
// and of the user's function: hop/pytask/user/HOW, hop/pytask/py-call/HOW.
func hopPyUserKey(how string) exp.ArmKey {
	return exp.Key("hop", exp.Seg("pytask"), exp.Seg(userOpName), exp.Seg(how))
}

// hopPyUserImmutableKey is the user's query on an immutable connection:
// hop/pytask/user-immutable/HOW (direct only).
func hopPyUserImmutableKey(how string) exp.ArmKey {
	return exp.Key("hop", exp.Seg("pytask"), exp.Seg(userImmutableOpName), exp.Seg(how))
}

func hopPyCallKey(how string) exp.ArmKey {
	return exp.Key("hop", exp.Seg("pytask"), exp.Seg("py-call"), exp.Seg(how))
}

// hopPyPlan is an sqlite3 lookup from asyncio, direct and through hops to
// executor threads (SPEC §5.9), on a file and in :memory:, each way's two
// arms side by side.
func hopPyPlan(p exp.Params) []pyArm {
	var out []pyArm
	// The user's query first (hopArms has refused a bad one already).
	if user, err := userOp(p); err == nil && user != nil {
		out = append(out, userPyArms(user, sqlop.ConnApp, "hop", hopPyWays, hopPyUserKey)...)
		out = append(out, userPyArms(user, sqlop.ConnImmutable, "hop", []string{"direct"}, hopPyUserImmutableKey)...)
	}
	if call, err := userPyCall(p); err == nil && call != nil {
		out = append(out, pyCallArms(call, "pycall", []string{"direct", "to_thread", "executor", "two-hop"},
			hopPyCallKey)...)
	}
	for _, how := range hopPyWays {
		for _, db := range hopPyDBs {
			out = append(out, pyArm{key: hopPyKey(how, db), sub: "pytask", mech: how, op: "query", bench: "hop",
				params: map[string]string{"how": how, "db": db}, place: "unpinned",
				quick: how != "aiosqlite" && db == "file", tempDB: db == "file"})
		}
	}
	return out
}

// aiosqlite against the two-hop wrapper that imitates it: aiosqlite sends
// each query to its own thread and back about twice (execute, fetch), so
// it must cost more than the direct lookup and land within this range of
// the two-hop wrapper.
const hopAioLow, hopAioHigh = 0.5, 2.0

func hopPyChecks(arms []result.Arm) []result.Check {
	var out []result.Check
	by := okArms(arms)
	for _, py := range interpreterTags(arms) {
		for _, db := range hopPyDBs {
			on := " (db=" + db + onInterpreter(py) + ")"
			pick := func(how string) (result.Arm, bool) { return by.get(hopPyKey(how, db).WithInterpreter(py)) }
			d, ok1 := pick("direct")
			e, ok2 := pick("executor")
			t, ok3 := pick("two-hop")
			if ok1 && ok2 && ok3 {
				out = append(out, result.Check{
					Name:  "sqlite3 lookup: two hops cost more than one, which costs more than direct",
					Holds: t.Median > e.Median && e.Median > d.Median,
					Detail: fmt.Sprintf("direct %s, one executor hop %s, two hops %s%s", result.FormatNs(d.Median),
						result.FormatNs(e.Median), result.FormatNs(t.Median), on),
					Arms: []string{d.Name, e.Name, t.Name},
				})
			}
			a, ok4 := pick("aiosqlite")
			if ok1 && ok3 && ok4 && t.Median > 0 && d.Median > 0 {
				r := a.Median / t.Median
				detail := fmt.Sprintf("aiosqlite %s (%.1f× direct), two-hop wrapper %s (%.1f× direct): aiosqlite/two-hop %.2f; direct %s",
					result.FormatNs(a.Median), a.Median/d.Median, result.FormatNs(t.Median), t.Median/d.Median, r, result.FormatNs(d.Median))
				names := []string{d.Name, t.Name, a.Name}
				if ok2 {
					detail += ", one executor hop " + result.FormatNs(e.Median)
					names = []string{d.Name, e.Name, t.Name, a.Name}
				}
				out = append(out, result.Check{
					Name:   fmt.Sprintf("aiosqlite costs more than direct sqlite3 and is in the two-hop wrapper's range (aiosqlite / two-hop in %.1f..%.1f)", hopAioLow, hopAioHigh),
					Holds:  a.Median > d.Median && r >= hopAioLow && r <= hopAioHigh,
					Detail: detail + on,
					Arms:   names,
				})
			}
		}
	}
	return out
}

func hopPyFindings(arms []result.Arm) []string {
	var out []string
	by := okArms(arms)
	for _, py := range interpreterTags(arms) {
		for _, db := range hopPyDBs {
			pick := func(how string) (result.Arm, bool) { return by.get(hopPyKey(how, db).WithInterpreter(py)) }
			d, okF := pick("direct")
			if !okF || d.Median <= 0 {
				continue
			}
			parts := []string{"direct " + result.FormatNs(d.Median)}
			for _, w := range []struct{ how, label string }{{"executor", "one executor hop"}, {"two-hop", "two hops"}, {"aiosqlite", "aiosqlite"}} {
				if a, ok := pick(w.how); ok {
					parts = append(parts, fmt.Sprintf("%s %s (%.1f×)", w.label, result.FormatNs(a.Median), a.Median/d.Median))
				}
			}
			if len(parts) > 1 {
				out = append(out, fmt.Sprintf("sqlite3 lookup on %s%s: %s", hopDBLabel[db], onInterpreter(py), strings.Join(parts, " · ")))
			}
		}
	}
	return append(out, hopPyRefs.findings(arms)...)
}

var hopDBLabel = map[string]string{"file": "a file", "memory": ":memory:"}

// hopPyRefs are SPEC §8's figures for the CPython sqlite3 lookups, beside
// each arm: the seed measured on a file; the two-hop wrapper imitates
// aiosqlite, so its row is aiosqlite's.
var hopPyRefs = pyRefs{GIL: []pyRef{
	{hopPyKey("direct", "file"), "8.4 µs"},
	{hopPyKey("executor", "file"), "30.4 µs (run_in_executor)"},
	{hopPyKey("two-hop", "file"), "58.8 µs (aiosqlite, which two-hop imitates)"},
	{hopPyKey("aiosqlite", "file"), "58.8 µs"},
	{hopPyKey("direct", "memory"), "8.4 µs (on a file)"},
	{hopPyKey("executor", "memory"), "30.4 µs (run_in_executor, on a file)"},
	{hopPyKey("two-hop", "memory"), "58.8 µs (aiosqlite on a file, which two-hop imitates)"},
	{hopPyKey("aiosqlite", "memory"), "58.8 µs (on a file)"},
}}
