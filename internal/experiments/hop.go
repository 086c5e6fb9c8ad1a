package experiments

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// hop: one fast local operation called directly and through wrappers that
// hop to another worker; op = one call (SPEC §5.6).
func init() {
	exp.Register(&hopExp{exp.Spec{
		Name:       "hop",
		Order:      60,
		References: hopRefs,
		Summary:    "a fast local operation (SQLite lookup, map lookup) called directly vs through hops to worker goroutines and threads",
		Op:         "call",
		OpLabels:   []exp.OpLabel{{Label: "op", Has: "user"}, {Label: "op", Has: "user-immutable"}, {Label: "op", Has: "py-call"}, {Label: "query", Has: "pytask"}, {Label: "call"}},
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
		Checks: cpythonChecks(hopChecks, hopPyChecks),
		Findings: func(arms []result.Arm) []string {
			out := append(userReadings(arms), cpythonFindings(hopFindings, hopPyFindings)(arms)...)
			return append(out, hopStoreFindings(arms)...)
		},
		Metrics: append(append([]exp.Metric(nil), hopMetrics...), cpythonMetrics...),
	}})
	exp.RegisterOption(hopCallersOpt)
	exp.RegisterOption(hopPoolOpt)
}

// hopExp is hop with its hooks: the figures derived against the direct
// call, its verdict lines, the pairs measured side by side and the
// selfcheck references.
type hopExp struct{ exp.Spec }

var _ interface {
	exp.Deriver
	exp.Verdicter
	exp.Pairer
	exp.Harnessed
} = (*hopExp)(nil)

func (*hopExp) Derive(arms []result.Arm) { nativeDerive(hopDerive)(arms) }

func (*hopExp) Verdict(v *exp.VerdictRun) []exp.VerdictSection { return hopVerdict(v) }

func (*hopExp) Pairs() []exp.Pair { return hopPairs }

func (*hopExp) Harness() []exp.HarnessRef {
	return []exp.HarnessRef{{Arm: hopPyKey("direct", "file").String(), Reference: exp.RefPyLookup},
		{Arm: hopPyUserKey("direct").String(), Reference: exp.RefPyUserApp},
		{Arm: hopPyUserImmutableKey("direct").String(), Reference: exp.RefPyUserImmutable}}
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

// hopKeyOf is a Go arm's key: its op, way (pool-cC-nN for the pool) and
// GOMAXPROCS ("1", "all" or a number): hop/modernc-memory/thread/gomaxprocs=all.
func hopKeyOf(op, way, gomaxprocs string) exp.ArmKey {
	return exp.Key("hop", exp.Seg(op), exp.Seg(way), exp.KV("gomaxprocs", gomaxprocs))
}

// hopPairs are the hops the verdict prices, each against the direct call,
// measured side by side (runner: pairs).
var hopPairs = []exp.Pair{
	{Label: "Go thread hop vs direct", A: hopKeyOf("modernc-memory", "thread", "all").String(), B: hopKeyOf("modernc-memory", "direct", "all").String()},
	{Label: "CPython executor hop vs direct", A: hopPyKey("executor", "file").String(), B: hopPyKey("direct", "file").String()},
	{Label: "CPython executor hop vs direct (in-memory)", A: hopPyKey("executor", "memory").String(), B: hopPyKey("direct", "memory").String()},
}

// quickHop are the arms of the quick suite (the pool at any size).
var quickHop = keysOf(
	hopKeyOf("modernc-memory", "direct", "all"), hopKeyOf("modernc-memory", "goroutine", "all"), hopKeyOf("modernc-memory", "thread", "all"),
	hopKeyOf("modernc-memory", "thread-2hop", "all"), hopKeyOf("modernc-memory", "pool", "all"),
	hopKeyOf("modernc-memory", "direct", "1"), hopKeyOf("modernc-memory", "goroutine", "1"),
	hopKeyOf("mattn-memory", "direct", "all"), hopKeyOf("map", "direct", "1"), hopKeyOf("map", "goroutine", "1"),
	hopKeyOf("modernc-file", "direct", "all"), hopKeyOf("mattn-file", "direct", "all"),
)

func hopArms(p exp.Params) ([]exp.Arm, error) {
	callers, pool := hopCallersOpt.Or(p, hopDefaultCallers), hopPoolOpt.Or(p, hopDefaultPool)
	user, _, err := userOps(p)
	if err != nil {
		return nil, err
	}
	pl := hopPlan{callers: callers, pool: pool, user: user, unp: exp.Unpinned(p)}
	gmps, gmpNames := gomaxprocsSweep(p)
	// Every op at each GOMAXPROCS, but the ones a suite leaves out at 1.
	each := func(op, way string, skipOne bool) {
		for i, g := range gmps {
			if !skipOne || gmpNames[i] != "1" {
				pl.add(op, way, g, gmpNames[i])
			}
		}
	}
	more := p.Suite == exp.SuiteFull || p.GOMAXPROCS != nil
	// The user's query first, every way but the pool, beside the built-in rows.
	if user != nil {
		for _, way := range []string{"direct", "goroutine", "thread", "thread-2hop"} {
			each(userOpName, way, !more)
		}
		each(userImmutableOpName, "direct", !more) // what no locks and change checks would save
	}
	for _, op := range hopOps {
		for _, way := range hopWays {
			// The default suite shows the file stores at all CPUs only.
			each(op, way, !more && strings.HasSuffix(op, "-file"))
		}
	}
	// A statement prepared once, next to the fresh query's direct lookup.
	for _, op := range hopPreparedOps {
		each(op, "direct", !more)
	}
	// The cgo crossing alone, next to the cgo driver's direct lookup.
	each("cgo-call", "direct", p.Suite != exp.SuiteFull)
	return pl.arms, nil
}

// hopPlan builds hop's Go arms: each op, way and GOMAXPROCS.
type hopPlan struct {
	callers, pool int
	user          *sqlop.UserOp
	unp           exp.Placement
	arms          []exp.Arm
}

func (pl *hopPlan) add(op, way string, g int, gname string) {
	wayName := way
	if way == "pool" {
		wayName = "pool-c" + strconv.Itoa(pl.callers) + "-n" + strconv.Itoa(pl.pool)
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
		params["callers"], params["pool"] = strconv.Itoa(pl.callers), strconv.Itoa(pl.pool)
	}
	cfg := hopConfig{op: op, way: way, callers: pl.callers, pool: pl.pool}
	a := exp.Arm{
		Name: hopKeyOf(op, wayName, gname).String(), Substrate: sub, Mechanism: mechanism,
		Params: params, GOMAXPROCS: g, Placement: pl.unp.Name, CPUs: pl.unp.Process,
		Quick: quickHop.has(hopKeyOf(op, way, gname)),
	}
	if op == userOpName || op == userImmutableOpName {
		cfg.user, a.Quick, a.Op = pl.user, true, userOpText(pl.user, userConn(op))
		userParams(params, pl.user, userConn(op))
	} else {
		a.Unsupported = sqlop.Unsupported(op)
	}
	a.Open = func(ctx context.Context) (exp.Bench, error) { return openHop(ctx, cfg) }
	pl.arms = append(pl.arms, a)
}

// hopConfig is what one hop arm opens.
type hopConfig struct {
	op, way       string
	callers, pool int
	user          *sqlop.UserOp // op "user": the user's query
}

// openHop opens one of hop's ways: the call on the caller's goroutine,
// one or two hops to a worker goroutine or locked thread, or a pool of
// worker goroutines shared by callers.
func openHop(ctx context.Context, cfg hopConfig) (exp.Loop, error) {
	src, err := hopSource(cfg.op, cfg.user)
	if err != nil {
		return nil, err
	}
	switch cfg.way {
	case "direct":
		return openDirect(src)
	case "goroutine":
		return openHops(ctx, src, 1, false)
	case "thread":
		return openHops(ctx, src, 1, true)
	case "thread-2hop":
		return openHops(ctx, src, 2, true)
	case "pool":
		return openPool(ctx, src, cfg.callers, cfg.pool, false)
	}
	src.Close()
	return nil, fmt.Errorf("unknown way %q", cfg.way)
}
