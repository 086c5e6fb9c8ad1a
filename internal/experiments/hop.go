package experiments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// hop: one fast local operation called directly and through wrappers that
// hop to another worker; op = one call (SPEC §5.6).
func init() {
	exp.Register(&exp.Spec{
		Name:       "hop",
		Order:      60,
		References: hopRefs,
		Harness:    []exp.HarnessRef{{Arm: "hop/pytask/direct", Reference: exp.RefPyLookup}},
		Verdict:    hopVerdict,
		Summary:    "a fast local operation (SQLite lookup, map lookup) called directly vs through hops to worker goroutines and threads",
		Op:         "call",
		OpLabels:   []exp.OpLabel{{Label: "op", Has: "user"}, {Label: "op", Has: "py-call"}, {Label: "query", Has: "pytask"}, {Label: "call"}},
		Doc: `One op is one call of a fast local operation: a SQLite lookup by
primary key (select v from t where id = ?, 1 000 rows, a fresh query per
call) in a database file in a temp dir (-file) or in :memory: (-memory),
through modernc.org/sqlite (pure Go) or mattn/go-sqlite3 (cgo; built only
with -tags mattn), or a Go map lookup as the pure-compute control.
-prepared ops (direct only) run one statement prepared per connection
instead: the compile a fresh query pays, which CPython's sqlite3 saves with
its statement cache. Ways: direct (the caller runs it);
goroutine (one hop to a worker goroutine, request and reply over channels);
thread (one hop to a worker locked to its own OS thread); thread-2hop (two
hops to that worker per call: execute, then fetch the row — the shape of
thread-backed async database wrappers); pool-cC-nN (C concurrent callers
share N worker goroutines; the figure is wall time per call, p50 is one
caller's latency). At GOMAXPROCS=1 and all CPUs. hop.callers and hop.pool
set C and N. cgo-call is one bare call of a trivial C function.
CPython (pytask): the same sqlite3 lookup (a fresh conn.execute(...)
.fetchone() per call, same table) from an asyncio task, direct, through one
run_in_executor hop (executor), through two hops (two-hop: execute, then
fetch, the shape of aiosqlite), and through aiosqlite where the interpreter
imports it (Debian: python3-aiosqlite for /usr/bin/python3); on a database
file and in :memory: (/db=memory).
` + cpythonDoc,
		Arms:   withCPython(hopArms, hopPyPlan),
		Derive: nativeDerive(hopDerive),
		Checks: cpythonChecks(hopChecks, hopPyChecks),
		Findings: func(arms []result.Arm) []string {
			out := append(userReadings(arms), cpythonFindings(hopFindings, hopPyFindings)(arms)...)
			return append(out, hopStoreFindings(arms)...)
		},
		Metrics: append(append([]exp.Metric(nil), hopMetrics...), cpythonMetrics...),
	})
	exp.RegisterOption(hopCallersOpt)
	exp.RegisterOption(hopPoolOpt)
}

// hop's --set options.
var (
	hopCallersOpt = exp.IntOption("hop.callers", "hop: concurrent callers C of the pool way, 1..10000 (default 8)", 1, hopMaxCallers)
	hopPoolOpt    = exp.IntOption("hop.pool", "hop: worker goroutines N of the pool way, 1..1000 (default 2)", 1, hopMaxPool)
)

// The operations hop wraps, and the ways it calls them. The SQLite lookups
// run on a file (the seed's) and in :memory:, each a fresh query per call;
// the -prepared ones run a statement prepared once, called directly only.
var (
	hopOps         = []string{"map", "modernc-file", "modernc-memory", "mattn-file", "mattn-memory"}
	hopPreparedOps = []string{"modernc-file-prepared", "modernc-memory-prepared", "mattn-file-prepared", "mattn-memory-prepared"}
	hopWays        = []string{"direct", "goroutine", "thread", "thread-2hop", "pool"}
)

// Default pool shape: more callers than workers, workers = a small pool.
const (
	hopDefaultCallers = 8
	hopDefaultPool    = 2
	hopMaxCallers     = 10000
	hopMaxPool        = 1000 // each worker opens its own connection
)

// quickHop are the arms (op/way/gomaxprocs) of the quick suite.
var quickHop = map[string]bool{
	"modernc-memory/direct/all": true, "modernc-memory/goroutine/all": true, "modernc-memory/thread/all": true,
	"modernc-memory/thread-2hop/all": true, "modernc-memory/pool/all": true,
	"modernc-memory/direct/1": true, "modernc-memory/goroutine/1": true,
	"mattn-memory/direct/all": true, "map/direct/1": true, "map/goroutine/1": true,
	"modernc-file/direct/all": true, "mattn-file/direct/all": true,
}

func hopArms(p exp.Params) ([]exp.Arm, error) {
	callers, pool := hopCallersOpt.Or(p, hopDefaultCallers), hopPoolOpt.Or(p, hopDefaultPool)
	user, _, err := userOps(p)
	if err != nil {
		return nil, err
	}
	gmps, gmpNames := hopGomaxprocs(p)
	unp := exp.Unpinned(p)
	var arms []exp.Arm
	add := func(op, way string, g int, gname string) {
		wayName := way
		if way == "pool" {
			wayName = fmt.Sprintf("pool-c%d-n%d", callers, pool)
		}
		sub, mechanism, hops := "goroutine", "chan", 1
		switch way {
		case "direct":
			sub, mechanism, hops = "caller", "call", 0
		case "thread":
			sub = "thread"
		case "thread-2hop":
			sub, hops = "thread", 2
		}
		params := map[string]string{"op": op, "way": way, "hops": strconv.Itoa(hops), "gomaxprocs": strconv.Itoa(g)}
		if way == "pool" {
			params["callers"], params["pool"] = strconv.Itoa(callers), strconv.Itoa(pool)
		}
		cfg := hopConfig{op: op, way: way, callers: callers, pool: pool}
		a := exp.Arm{
			Name: fmt.Sprintf("hop/%s/%s/gomaxprocs=%s", op, wayName, gname), Substrate: sub, Mechanism: mechanism,
			Params: params, GOMAXPROCS: g, Placement: unp.Name, CPUs: unp.Process,
			Quick: quickHop[op+"/"+way+"/"+gname],
			Open:  func(ctx context.Context) (exp.Bench, error) { return openHop(ctx, cfg) },
		}
		if op == userOpName {
			cfg.user, a.Quick, a.Op = user, true, user.Op()
			userParams(params, user)
		} else {
			a.Unsupported = sqlop.Unsupported(op)
		}
		arms = append(arms, a)
	}
	// The user's query first, every way but the pool, beside the built-in rows.
	if user != nil {
		for _, way := range []string{"direct", "goroutine", "thread", "thread-2hop"} {
			for i, g := range gmps {
				if gmpNames[i] != "1" || p.Suite == exp.SuiteFull || p.GOMAXPROCS != nil {
					add(userOpName, way, g, gmpNames[i])
				}
			}
		}
	}
	for _, op := range hopOps {
		for _, way := range hopWays {
			for i, g := range gmps {
				// The default suite shows the file stores at all CPUs only.
				if p.Suite != exp.SuiteFull && strings.HasSuffix(op, "-file") && p.GOMAXPROCS == nil && gmpNames[i] == "1" {
					continue
				}
				add(op, way, g, gmpNames[i])
			}
		}
	}
	// A statement prepared once, next to the fresh query's direct lookup.
	for _, op := range hopPreparedOps {
		for i, g := range gmps {
			if gmpNames[i] != "1" || p.Suite == exp.SuiteFull || p.GOMAXPROCS != nil {
				add(op, "direct", g, gmpNames[i])
			}
		}
	}
	// The cgo crossing alone, next to the cgo driver's direct lookup.
	for i, g := range gmps {
		if gmpNames[i] != "1" || p.Suite == exp.SuiteFull {
			add("cgo-call", "direct", g, gmpNames[i])
		}
	}
	return arms, nil
}

// hopConfig is what one hop arm opens.
type hopConfig struct {
	op, way       string
	callers, pool int
	user          *sqlop.UserOp // op "user": the user's query
}

// hopSource is the operation an arm opens: the user's, or a built-in one.
func hopSource(op string, u *sqlop.UserOp) (*sqlop.Source, error) {
	if op == userOpName {
		return sqlop.NewUserSource(u), nil
	}
	src, err := sqlop.NewSource(op)
	if err != nil && errors.Is(err, sqlop.ErrUnsupported) {
		err = fmt.Errorf("%w: %v", exp.ErrUnsupported, err)
	}
	return src, err
}

// hopBench is an opened hop arm. Close may come from another goroutine
// while Run is going (timeout, Ctrl-C): it sets closed, waits for Run to
// notice (runMu), then stops the workers and removes the temp dir.
type hopBench struct {
	cfg     hopConfig
	src     *sqlop.Source
	direct  sqlop.Handle
	workers *hopWorkers
	callers []*hopCaller
	closed  atomic.Bool
	runMu   sync.Mutex
	once    sync.Once
	err     error
}

func openHop(ctx context.Context, cfg hopConfig) (_ *hopBench, err error) {
	src, err := hopSource(cfg.op, cfg.user)
	if err != nil {
		return nil, err
	}
	h := &hopBench{cfg: cfg, src: src}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	switch cfg.way {
	case "direct":
		h.direct, err = src.Open()
		return h, err
	case "goroutine", "thread", "thread-2hop":
		h.workers, err = startHopWorkers(ctx, src, 1, cfg.way != "goroutine")
		if err != nil {
			return nil, err
		}
		h.callers = []*hopCaller{newHopCaller(src, h.workers.reqs, 0, &h.closed)}
	case "pool", "threadpool":
		h.workers, err = startHopWorkers(ctx, src, cfg.pool, cfg.way == "threadpool")
		if err != nil {
			return nil, err
		}
		for k := 0; k < cfg.callers; k++ {
			h.callers = append(h.callers, newHopCaller(src, h.workers.reqs, k*97, &h.closed))
		}
	default:
		return nil, fmt.Errorf("unknown way %q", cfg.way)
	}
	return h, nil
}

func (h *hopBench) Run(b *measure.B) error {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	if h.closed.Load() {
		return errHopClosed
	}
	switch h.cfg.way {
	case "direct":
		return directLoop(h.src, h.direct, b.N, b.S, &h.closed)
	case "goroutine", "thread":
		return h.callers[0].loop(b.N, 1, b.S)
	case "thread-2hop":
		return h.callers[0].loop(b.N, 2, b.S)
	default:
		return poolCalls(h.callers, b.N, b.S)
	}
}

// Participants: the whole process. The caller is a goroutine on any of
// the runtime's threads, and the worker threads' hand-offs go through it.
func (h *hopBench) Participants() exp.Participants { return exp.WholeProcess() }

func (h *hopBench) Close() error {
	h.once.Do(func() {
		h.closed.Store(true)
		h.runMu.Lock()
		defer h.runMu.Unlock()
		var errs []error
		if h.workers != nil {
			errs = append(errs, h.workers.stop())
		}
		if h.direct != nil {
			errs = append(errs, h.direct.Close())
		}
		errs = append(errs, h.src.Close())
		h.err = errors.Join(errs...)
	})
	return h.err
}

// hopKey is an arm's op, way and GOMAXPROCS, to find its direct baseline.
type hopKey struct {
	op, way string
	gmp     int
}

func hopIndex(arms []result.Arm) map[hopKey]*result.Arm {
	out := map[hopKey]*result.Arm{}
	for i := range arms {
		a := &arms[i]
		if a.Experiment != "hop" || a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		out[hopKey{a.Params["op"], a.Params["way"], a.GOMAXPROCS}] = a
	}
	return out
}

// hopDerive adds each arm's multiple of the direct call and the time the
// hops added (Metrics "direct-ratio" and "added-ns/op").
func hopDerive(arms []result.Arm) {
	idx := hopIndex(arms)
	for k, a := range idx {
		d, ok := idx[hopKey{k.op, "direct", k.gmp}]
		if !ok {
			continue
		}
		a.SetMetric("direct-ratio", a.Median/d.Median)
		a.SetMetric("added-ns/op", a.Median-d.Median)
	}
	// The cgo crossing next to the cgo driver's lookup.
	for k, a := range idx {
		if k.op != "cgo-call" {
			continue
		}
		if m, ok := idx[hopKey{"mattn-memory", "direct", k.gmp}]; ok {
			m.SetMetric("cgo-call-ns", a.Median)
		}
	}
}

// Check thresholds: two hops cost twice one, within ±25%.
const (
	hopTwoLow, hopTwoHigh = 1.5, 2.5
	hopMaxGoroutineSw     = 0.05 // goroutine hop at GOMAXPROCS=1: no OS switch
	hopMinThreadSw        = 1.5  // locked-thread hop: a sleeping thread woken each way
)

func hopChecks(arms []result.Arm) []result.Check {
	idx := hopIndex(arms)
	var out []result.Check
	for _, k := range hopSortedKeys(idx, "direct") {
		d := idx[k]
		if t, ok := idx[hopKey{k.op, "thread", k.gmp}]; ok {
			added := t.Median - d.Median
			out = append(out, result.Check{
				Name:  "one hop costs more than the operation itself (thread − direct > direct)",
				Holds: added > d.Median,
				Detail: fmt.Sprintf("%s at GOMAXPROCS=%d: the hop to a locked thread adds %s to a %s call",
					hopOpWords(k.op), k.gmp, result.FormatNs(added), result.FormatNs(d.Median)),
				Arms: []string{d.Name, t.Name},
			})
			if t2, ok := idx[hopKey{k.op, "thread-2hop", k.gmp}]; ok && added > 0 {
				r := (t2.Median - d.Median) / added
				out = append(out, result.Check{
					Name:  fmt.Sprintf("two hops ≈ twice one hop ((2 hops − direct) / (1 hop − direct) in %.1f..%.1f)", hopTwoLow, hopTwoHigh),
					Holds: r >= hopTwoLow && r <= hopTwoHigh,
					Detail: fmt.Sprintf("%s at GOMAXPROCS=%d: two hops add %s, one adds %s (%.2f×)",
						hopOpWords(k.op), k.gmp, result.FormatNs(t2.Median-d.Median), result.FormatNs(added), r),
					Arms: []string{d.Name, t.Name, t2.Name},
				})
			}
			if t.Switches != nil && k.op == hopRepresentative(idx, k.gmp) {
				out = append(out, result.Check{
					Name:   fmt.Sprintf("a hop to a locked-thread worker costs OS switches (≥ %.1f per call)", hopMinThreadSw),
					Holds:  t.Switches.Total() >= hopMinThreadSw,
					Detail: fmt.Sprintf("%s: %.2f switches per call", t.Name, t.Switches.Total()),
					Arms:   []string{t.Name},
				})
			}
		}
		if g, ok := idx[hopKey{k.op, "goroutine", k.gmp}]; ok && k.gmp == 1 && g.Switches != nil && k.op == hopRepresentative(idx, 1) {
			out = append(out, result.Check{
				Name:   fmt.Sprintf("a hop to a goroutine at GOMAXPROCS=1 causes no OS switch (< %.2f per call)", hopMaxGoroutineSw),
				Holds:  g.Switches.Total() < hopMaxGoroutineSw,
				Detail: fmt.Sprintf("%s: %.4f switches per call", g.Name, g.Switches.Total()),
				Arms:   []string{g.Name},
			})
		}
	}
	return out
}

// hopSortedKeys lists the keys of one way in the order of hopOps, then GOMAXPROCS.
func hopSortedKeys(idx map[hopKey]*result.Arm, way string) []hopKey {
	var out []hopKey
	for _, op := range slices.Concat(hopOps, hopPreparedOps, []string{"cgo-call"}) {
		var gs []int
		for k := range idx {
			if k.op == op && k.way == way {
				gs = append(gs, k.gmp)
			}
		}
		slices.Sort(gs)
		for _, g := range gs {
			out = append(out, hopKey{op, way, g})
		}
	}
	return out
}

// hopPreferred is the order in which ops stand for all in the switch
// checks and explanations: the SQLite lookup the issue is about first.
var hopPreferred = []string{"modernc-memory", "mattn-memory", "modernc-file", "mattn-file", "map"}

// hopRepresentative is the op whose arms stand for all in the switch
// checks and explanations: the first measured of hopPreferred.
func hopRepresentative(idx map[hopKey]*result.Arm, gmp int) string {
	for _, op := range hopPreferred {
		if _, ok := idx[hopKey{op, "direct", gmp}]; ok {
			return op
		}
	}
	return ""
}

func hopFindings(arms []result.Arm) []string {
	idx := hopIndex(arms)
	var out []string
	wayLabel := map[string]string{"goroutine": "goroutine hop", "thread": "thread hop", "thread-2hop": "2 thread hops", "pool": "pool"}
	for _, k := range hopSortedKeys(idx, "direct") {
		if k.op == "cgo-call" {
			continue
		}
		d := idx[k]
		parts := []string{"direct " + result.FormatNs(d.Median)}
		for _, w := range hopWays[1:] {
			a, ok := idx[hopKey{k.op, w, k.gmp}]
			if !ok {
				continue
			}
			label := wayLabel[w]
			if w == "pool" {
				label = fmt.Sprintf("pool of %s workers for %s callers", a.Params["pool"], a.Params["callers"])
			}
			parts = append(parts, fmt.Sprintf("%s %s (%.1f×)", label, result.FormatNs(a.Median), a.Median/d.Median))
		}
		if len(parts) > 1 {
			out = append(out, fmt.Sprintf("%s at GOMAXPROCS=%d: %s", hopOpWords(k.op), k.gmp, strings.Join(parts, " · ")))
		}
	}
	// Which effect made the goroutine hop cost what it did.
	var gmps []int
	for k := range idx {
		if k.way == "direct" && k.op != "cgo-call" && !containsInt(gmps, k.gmp) {
			gmps = append(gmps, k.gmp)
		}
	}
	slices.Sort(gmps)
	if len(gmps) >= 2 {
		lo, hi := gmps[0], gmps[len(gmps)-1]
		for _, op := range hopPreferred {
			d1, ok1 := idx[hopKey{op, "direct", lo}]
			g1, ok2 := idx[hopKey{op, "goroutine", lo}]
			dn, ok3 := idx[hopKey{op, "direct", hi}]
			gn, ok4 := idx[hopKey{op, "goroutine", hi}]
			if !(ok1 && ok2 && ok3 && ok4) {
				continue
			}
			a1, an := g1.Median-d1.Median, gn.Median-dn.Median
			sw := 0.0
			if gn.Switches != nil {
				sw = gn.Switches.Total()
			}
			if an > 1.5*a1 && an > 0 {
				out = append(out, fmt.Sprintf("seen: idle P wake-up and steal — over %s a goroutine hop adds %s at GOMAXPROCS=%d but %s at GOMAXPROCS=%d (%.2f OS switches per call): with a P idle, the request wakes another OS thread that steals the worker goroutine, so each hop crosses threads; at GOMAXPROCS=%d the worker simply runs next on the caller's thread",
					op, result.FormatNs(an), hi, result.FormatNs(a1), lo, sw, lo))
			} else {
				out = append(out, fmt.Sprintf("not seen: idle P wake-up and steal — over %s a goroutine hop adds %s at GOMAXPROCS=%d and %s at GOMAXPROCS=%d (%.2f OS switches per call): here the worker mostly ran on the caller's thread either way",
					op, result.FormatNs(an), hi, result.FormatNs(a1), lo, sw))
			}
			break
		}
	}
	for _, g := range gmps {
		op := hopRepresentative(idx, g)
		d, ok1 := idx[hopKey{op, "direct", g}]
		t, ok2 := idx[hopKey{op, "thread", g}]
		if !ok1 || !ok2 || t.Switches == nil {
			continue
		}
		out = append(out, fmt.Sprintf("locked-thread hop at GOMAXPROCS=%d over %s adds %s with %.2f OS switches per call: the worker may run only on its own OS thread, so each direction wakes a sleeping thread and puts another to sleep",
			g, op, result.FormatNs(t.Median-d.Median), t.Switches.Total()))
	}
	for _, g := range gmps {
		m, ok1 := idx[hopKey{"mattn-memory", "direct", g}]
		p, ok2 := idx[hopKey{"modernc-memory", "direct", g}]
		if !ok1 || !ok2 {
			continue
		}
		line := fmt.Sprintf("drivers at GOMAXPROCS=%d: a :memory: lookup through the cgo driver costs %s, through the pure-Go driver %s (%.2f×)",
			g, result.FormatNs(m.Median), result.FormatNs(p.Median), m.Median/p.Median)
		if c, ok := idx[hopKey{"cgo-call", "direct", g}]; ok {
			line += fmt.Sprintf("; one bare cgo call costs %s, and a lookup makes several (bind, step, column, reset)", result.FormatNs(c.Median))
		}
		out = append(out, line)
	}
	for _, g := range gmps {
		for _, drv := range []string{"modernc", "mattn"} {
			// file vs :memory: is hopStoreFindings' one line, Go's and CPython's side by side.
			for _, store := range []string{"file", "memory"} {
				q, ok1 := idx[hopKey{drv + "-" + store, "direct", g}]
				p, ok2 := idx[hopKey{drv + "-" + store + "-prepared", "direct", g}]
				if ok1 && ok2 {
					out = append(out, fmt.Sprintf("%s-%s fresh query vs prepared statement at GOMAXPROCS=%d: %s vs %s per lookup (%.1f×); a fresh query compiles the SQL each call (database/sql and the driver cache no statement; CPython's sqlite3 does)",
						drv, store, g, result.FormatNs(q.Median), result.FormatNs(p.Median), q.Median/p.Median))
				}
			}
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// hopMetrics declares the figures hop arms add beside the median.
var hopMetrics = []exp.Metric{
	{Name: "direct-ratio", Unit: "ratio", Better: exp.LowerIsBetter, Doc: "the call as a multiple of the direct call of the same operation at the same GOMAXPROCS"},
	{Name: "added-ns/op", Unit: "ns", Better: exp.LowerIsBetter, Doc: "what the hop adds to the direct call, per call"},
	{Name: "cgo-call-ns", Unit: "ns", Better: exp.LowerIsBetter, Doc: "the cgo driver's direct lookup (its cgo call cost included)"},
}

// The CPython lookups: the seed's sqlite3 lookup from an asyncio task, on
// a database file (the seed's, the unnamed default) and in :memory:
// ("/db=memory"), directly and through hops to executor threads or
// aiosqlite's own thread.
var (
	hopPyWays = []string{"direct", "executor", "two-hop", "aiosqlite"}
	hopPyDBs  = []string{"file", "memory"}
)

// hopPyName is the arm name of one CPython way on one database.
func hopPyName(how, db string) string {
	if db == "file" {
		return "hop/pytask/" + how
	}
	return "hop/pytask/" + how + "/db=" + db
}

// hopPyPlan is an sqlite3 lookup from asyncio, direct and through hops to
// executor threads (SPEC §5.9), on a file and in :memory:, each way's two
// arms side by side.
func hopPyPlan(p exp.Params) []pyArm {
	var out []pyArm
	// The user's query first (hopArms has refused a bad one already).
	if user, err := userOp(p); err == nil && user != nil {
		out = append(out, userPyArms(user, "hop", hopPyWays, func(how string) string { return "hop/pytask/user/" + how })...)
	}
	if call, err := userPyCall(p); err == nil && call != nil {
		out = append(out, pyCallArms(call, "pycall", []string{"direct", "to_thread", "executor", "two-hop"},
			func(how string) string { return "hop/pytask/py-call/" + how })...)
	}
	for _, how := range hopPyWays {
		for _, db := range hopPyDBs {
			out = append(out, pyArm{key: hopPyName(how, db), sub: "pytask", mech: how, op: "query", bench: "hop",
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
	for _, py := range pyTags(arms) {
		for _, db := range hopPyDBs {
			on := " (db=" + db + pySuffixText(py) + ")"
			pick := func(how string) (result.Arm, bool) { a, ok := by[withPy(hopPyName(how, db), py)]; return a, ok }
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
	for _, py := range pyTags(arms) {
		for _, db := range hopPyDBs {
			pick := func(how string) (result.Arm, bool) { a, ok := by[withPy(hopPyName(how, db), py)]; return a, ok }
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
				out = append(out, fmt.Sprintf("sqlite3 lookup on %s%s: %s", hopDBLabel[db], pySuffixText(py), strings.Join(parts, " · ")))
			}
		}
	}
	return append(out, hopPyRefs.findings(arms)...)
}

var hopDBLabel = map[string]string{"file": "a file", "memory": ":memory:"}

// hopStoreFindings is the one file vs :memory: line: the Go drivers'
// direct lookups on a file beside their :memory: ones (each at the highest
// GOMAXPROCS it ran at), and CPython's beside them, per interpreter.
func hopStoreFindings(arms []result.Arm) []string {
	native, py := splitCPython(arms)
	idx := hopIndex(native)
	var parts []string
	for _, drv := range []string{"modernc", "mattn"} {
		gmp := 0
		for k := range idx {
			if k.op == drv+"-file" && k.way == "direct" && k.gmp > gmp {
				gmp = k.gmp
			}
		}
		f, ok1 := idx[hopKey{drv + "-file", "direct", gmp}]
		m, ok2 := idx[hopKey{drv + "-memory", "direct", gmp}]
		if ok1 && ok2 && m.Median > 0 {
			parts = append(parts, fmt.Sprintf("Go %s (GOMAXPROCS=%d) %s vs %s (%.1f×)", drv, gmp, result.FormatNs(f.Median), result.FormatNs(m.Median), f.Median/m.Median))
		}
	}
	by := okArms(py)
	for _, tag := range pyTags(py) {
		f, ok1 := by[withPy(hopPyName("direct", "file"), tag)]
		m, ok2 := by[withPy(hopPyName("direct", "memory"), tag)]
		if ok1 && ok2 && m.Median > 0 {
			parts = append(parts, fmt.Sprintf("CPython sqlite3%s %s vs %s (%.1f×)", pySuffixText(tag), result.FormatNs(f.Median), result.FormatNs(m.Median), f.Median/m.Median))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{"the SQLite lookup on a file vs in :memory:, direct: " + strings.Join(parts, " · ") +
		"; on a file every read transaction takes and drops POSIX locks, looks for a hot journal and checks the file header: system calls that :memory: skips"}
}

// hopPyRefs are SPEC §8's figures for the CPython sqlite3 lookups, beside
// each arm: the seed measured on a file; the two-hop wrapper imitates
// aiosqlite, so its row is aiosqlite's.
var hopPyRefs = pyRefs{GIL: map[string]string{
	"hop/pytask/direct":              "8.4 µs",
	"hop/pytask/executor":            "30.4 µs (run_in_executor)",
	"hop/pytask/two-hop":             "58.8 µs (aiosqlite, which two-hop imitates)",
	"hop/pytask/aiosqlite":           "58.8 µs",
	"hop/pytask/direct/db=memory":    "8.4 µs (on a file)",
	"hop/pytask/executor/db=memory":  "30.4 µs (run_in_executor, on a file)",
	"hop/pytask/two-hop/db=memory":   "58.8 µs (aiosqlite on a file, which two-hop imitates)",
	"hop/pytask/aiosqlite/db=memory": "58.8 µs (on a file)",
}}

// hopRefs: SPEC §8's published hop, about the experiment as a whole.
var hopRefs = []exp.Reference{
	{Text: "CPython 3.14: SQLite lookup 8.4 µs direct, 30.4 µs via run_in_executor (3.6×), 58.8 µs via aiosqlite (7.0×)"},
}

// hopVerdict: what a thread hop adds to the operation, at up to two
// GOMAXPROCS (a line of what it adds, a line of the figures it comes
// from, a note of the goroutine hop and two thread hops), and what an
// executor hop adds to CPython's sqlite3 lookup.
func hopVerdict(v *exp.VerdictRun) []exp.VerdictSection {
	var lines, notes []string
	// The user's own operation leads, when one was measured.
	lines = append(lines, userVerdictLines(v)...)
	// The Go arms: the operation with a thread arm, at its GOMAXPROCS.
	threads := v.Where("hop", func(a result.Arm) bool { return a.Params["way"] == "thread" && a.Params["op"] != userOpName })
	if len(threads) == 0 {
		lines = append(lines, "  Go: not measured (run hop)")
	}
	for i, t := range threads {
		if i == 2 {
			break
		}
		same := func(way string) (result.Arm, bool) {
			as := v.Where("hop", func(a result.Arm) bool {
				return a.Params["op"] == t.Params["op"] && a.GOMAXPROCS == t.GOMAXPROCS && a.Params["way"] == way
			})
			if len(as) == 0 {
				return result.Arm{}, false
			}
			return as[0], true
		}
		d, ok := same("direct")
		if !ok {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s, GOMAXPROCS=%d: a thread hop adds %s", hopOpWords(t.Params["op"]), t.GOMAXPROCS, result.FormatNs(t.Median-d.Median)),
			"    direct "+exp.Figure(d)+" · thread hop "+exp.Figure(t))
		var more []string
		for _, w := range []struct{ way, label string }{{"goroutine", "a goroutine hop"}, {"thread-2hop", "two thread hops"}} {
			if a, ok := same(w.way); ok {
				more = append(more, w.label+" "+exp.Figure(a))
			}
		}
		if len(more) > 0 {
			notes = append(notes, fmt.Sprintf("  %s, GOMAXPROCS=%d: %s", hopOpWords(t.Params["op"]), t.GOMAXPROCS, strings.Join(more, " · ")))
		}
	}
	// The CPython arms: an sqlite3 lookup from asyncio, direct and through
	// executor hops, on a database file, or in :memory: when only those
	// measured (a run stored before the file arms has only those); a line
	// per interpreter, found by name without --python all's "/py=…".
	by := map[string]result.Arm{}
	for _, a := range v.Where("hop", isCPython) {
		by[a.Name] = a
	}
	for _, py := range pyTags(v.Where("hop", isCPython)) {
		pick := func(how, db string) (result.Arm, bool) { a, ok := by[withPy(hopPyName(how, db), py)]; return a, ok }
		for _, db := range hopPyDBs {
			d, ok1 := pick("direct", db)
			e, ok2 := pick("executor", db)
			if !ok1 || !ok2 {
				continue
			}
			on := map[string]string{"file": "database file", "memory": "in-memory database"}[db]
			if py != "" {
				on += ", " + py
			}
			lines = append(lines, fmt.Sprintf("  CPython sqlite3, %s: an executor hop adds %s", on, result.FormatNs(e.Median-d.Median)),
				"    direct "+exp.Figure(d)+" · executor hop "+exp.Figure(e))
			var more []string
			if t, ok := pick("two-hop", db); ok {
				more = append(more, "two hops "+exp.Figure(t))
			}
			if a, ok := pick("aiosqlite", db); ok {
				more = append(more, "aiosqlite "+exp.Figure(a))
			}
			if m, ok := pick("direct", "memory"); ok && db == "file" {
				more = append(more, "direct in :memory: "+exp.Figure(m))
			}
			if len(more) > 0 {
				notes = append(notes, "  CPython sqlite3: "+strings.Join(more, " · "))
			}
			break
		}
	}
	return []exp.VerdictSection{{Block: exp.BlockHop, Heading: "a thread hop over a microsecond operation", Lines: lines, Notes: notes,
		Foot: []string{"  published (CPython 3.14 sqlite3): direct 8.4 µs · run_in_executor 30.4 µs · aiosqlite 58.8 µs"}}}
}

// hopOpWords says what a hop operation is in words a user can look up:
// "pure-Go SQLite, in-memory database" for modernc-memory.
func hopOpWords(op string) string {
	base, prepared := strings.CutSuffix(op, "-prepared")
	drv, store, _ := strings.Cut(base, "-")
	words := map[string]string{"modernc": "pure-Go SQLite", "mattn": "cgo SQLite (mattn)"}[drv]
	switch {
	case op == "map":
		return "a Go map lookup"
	case op == "cgo-call":
		return "a bare cgo call"
	case op == userOpName:
		return "your query"
	case words == "":
		return op
	}
	switch store {
	case "memory":
		words += ", in-memory database"
	case "file":
		words += ", database file"
	}
	if prepared {
		words += ", prepared statement"
	}
	return words
}
