package experiments

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// concurrency: the hop experiment's SQLite lookup at concurrency C, through
// goroutines limited by a semaphore vs a fixed pool of locked-thread
// workers; op = one lookup, plus the total for 10 000 lookups.
func init() {
	exp.Register(&concurrencyExp{exp.Spec{
		Name:    "concurrency",
		Order:   80,
		Summary: "a microsecond SQLite lookup at concurrency 1, 10, 50: goroutines under a semaphore vs a pool of locked threads; CPython tasks under a Semaphore hopping to threads vs ThreadPoolExecutor.map",
		Op:      "lookup",
		Doc: `One op is one SQLite primary-key lookup (as in hop); the figure is wall time
per lookup with C lookups in flight, and the metric elapsed-ms/10000-lookups is the
total for 10 000. sem/c=C: one goroutine per lookup, at most C at a time —
the semaphore is a channel of C connections, which a goroutine takes before
its lookup and gives back after (what database/sql's pool does with
SetMaxOpenConns(C)). threadpool-nN/c=C: C caller goroutines send their
lookups to N workers locked to their own OS threads, each with its own
connection (the shape of a thread-backed async wrapper's executor).
concurrency.levels or --workers sets C (default 1,10,50), concurrency.pool sets N
(default: CPUs + 4, at most 32, as Python's ThreadPoolExecutor).
CPython, as the published compare(op_async, op_sync, n, C): the same lookup on a
database file (each thread its own connection), and a dict lookup, as
asyncio.gather under asyncio.Semaphore(C) with each call through
asyncio.to_thread (pytask/OP/to_thread/c=C) or loop.run_in_executor
(pytask/OP/run_in_executor/c=C, full suite) on the loop's default executor
(min(32, CPUs + 4) threads, whatever C is), against
ThreadPoolExecutor(C).map of the plain call (pythread/OP/pool-map/c=C).
` + cpythonDoc,
		OpLabels: []exp.OpLabel{{Label: "op", Has: "user"}, {Label: "op", Has: "py-call"}, {Label: "lookup"}},
		Arms:     withCPython(concurrencyArms, concurrencyPyPlan),
		Checks:   cpythonChecks(concurrencyChecks, concurrencyPyChecks),
		Findings: cpythonFindings(concurrencyFindings, concurrencyPyFindings),
		Metrics:  append(append([]exp.Metric(nil), concurrencyMetrics...), cpythonMetrics...),
	}})
	exp.RegisterOption(concLevelsOpt)
	exp.RegisterOption(concPoolOpt)
}

// concurrencyExp is concurrency with its hook: the total for 10 000
// lookups, derived.
type concurrencyExp struct{ exp.Spec }

var _ exp.Deriver = (*concurrencyExp)(nil)

func (*concurrencyExp) Derive(arms []result.Arm) { concurrencyDerive(arms) }

// concurrency's --set options.
var (
	concLevelsOpt = exp.IntListOption("concurrency.levels", "concurrency: lookups in flight C, a list like 1,10,50, each 1..1000 (or --workers)", 1, concMaxLevel)
	concPoolOpt   = exp.IntOption("concurrency.pool", "concurrency: locked-thread workers N, 1..256 (default CPUs+4, at most 32)", 1, concMaxPool)
)

const (
	concMaxLevel = 1000 // each in-flight lookup holds its own connection
	concMaxPool  = 256  // OS threads
	concTotal    = 10000
)

// concKeyOf is a Go arm's key: its op, way (threadpool-nN for the pool)
// and C, lookups in flight: concurrency/modernc-file/sem/c=10.
func concKeyOf(op, way string, c int) exp.ArmKey {
	return exp.Key("concurrency", exp.Seg(op), exp.Seg(way), exp.KV("c", c))
}

var (
	concDefaultLevels = []int{1, 10, 50}
	// quickConcurrency are the quick suite's arms (the pool at any size).
	quickConcurrency = keysOf(concKeyOf("modernc-file", "sem", 10), concKeyOf("modernc-file", "threadpool", 10))
)

// concInFlight is C, the lookups in flight: --set concurrency.levels, or
// --workers (the run's worker counts, as ring and yield take them), or
// 1, 10, 50. Both at once must agree, so that neither is silently dropped.
func concInFlight(p exp.Params) ([]int, error) {
	levels, set := concLevelsOpt.Get(p)
	if !set {
		levels = concDefaultLevels
	}
	if p.Workers == nil {
		return levels, nil
	}
	if text, _ := p.Options.Text(concLevelsOpt.Key); set && !slices.Equal(levels, p.Workers) {
		return nil, fmt.Errorf("concurrency: --workers %s and --set concurrency.levels=%s disagree; give one of them", intsText(p.Workers), text)
	}
	for _, c := range p.Workers {
		if c > concMaxLevel {
			return nil, fmt.Errorf("concurrency: --workers %d: lookups in flight must be in 1..%d (each holds its own connection)", c, concMaxLevel)
		}
	}
	return p.Workers, nil
}

func concurrencyArms(p exp.Params) ([]exp.Arm, error) {
	levels, err := concInFlight(p)
	if err != nil {
		return nil, err
	}
	pool := concPoolOpt.Or(p, min(len(p.CPUs)+4, 32))
	user, _, err := userOps(p)
	if err != nil {
		return nil, err
	}
	ops := []string{"modernc-file"}
	if user != nil {
		ops = []string{userOpName, "modernc-file"} // the user's query first
	}
	if p.Suite == exp.SuiteFull {
		ops = append(ops, "modernc-memory", "mattn-file")
	}
	gmps := []int{len(p.CPUs)}
	if p.GOMAXPROCS != nil {
		gmps = p.GOMAXPROCS
	}
	unp := exp.Unpinned(p)
	var arms []exp.Arm
	for _, op := range ops {
		for _, way := range []string{"sem", "threadpool"} {
			for _, c := range levels {
				for _, g := range gmps {
					wayName := way
					sub := "goroutine"
					if way == "threadpool" {
						wayName = "threadpool-n" + strconv.Itoa(pool)
						sub = "thread"
					}
					name := concKeyOf(op, wayName, c)
					if p.GOMAXPROCS != nil {
						name = name.With(exp.KV("gomaxprocs", g))
					}
					params := map[string]string{"op": op, "way": way, "c": strconv.Itoa(c)}
					if way == "threadpool" {
						params["pool"] = strconv.Itoa(pool)
					}
					a := exp.Arm{
						Name: name.String(), Substrate: sub, Mechanism: "chan", Params: params,
						GOMAXPROCS: g, Placement: unp.Name, CPUs: unp.Process,
						Quick: quickConcurrency.has(concKeyOf(op, way, c)),
						Open: func(ctx context.Context) (exp.Bench, error) {
							if way == "sem" {
								return openConcSem(ctx, op, user, c)
							}
							return openConcPool(ctx, op, user, c, pool)
						},
					}
					if op == userOpName {
						a.Quick, a.Op = true, user.Op()
						userParams(params, user, sqlop.ConnApp)
					} else {
						a.Unsupported = sqlop.Unsupported(op)
					}
					arms = append(arms, a)
				}
			}
		}
	}
	return arms, nil
}

// concSem runs one goroutine per lookup; a goroutine must first take one
// of the c connections from conns (the semaphore) and gives it back after.
type concSem struct {
	sqlBench
	handles []sqlop.Handle
	conns   chan sqlop.Handle
	errMu   sync.Mutex
	runErr  error
}

func openConcSem(ctx context.Context, op string, user *sqlop.UserOp, c int) (_ *concSem, err error) {
	src, err := hopSource(op, user)
	if err != nil {
		return nil, err
	}
	s := &concSem{sqlBench: sqlBench{src: src}, conns: make(chan sqlop.Handle, c)}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for i := 0; i < c; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := src.Open()
		if err != nil {
			return nil, err
		}
		s.handles = append(s.handles, h)
		s.conns <- h
	}
	return s, nil
}

func (s *concSem) fail(err error) {
	s.errMu.Lock()
	if s.runErr == nil {
		s.runErr = err
	}
	s.errMu.Unlock()
}

func (s *concSem) Run(b *measure.B) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	var wg sync.WaitGroup
	for i := 0; i < b.N; i++ {
		if i&63 == 0 && s.closed.Load() {
			s.fail(errHopClosed)
			break
		}
		h := <-s.conns
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := sqlop.Key(i)
			v, err := h.Lookup(id)
			if err == nil {
				err = s.src.Check(id, v)
			}
			if err != nil {
				s.fail(err)
			}
			s.conns <- h
		}()
	}
	wg.Wait()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.runErr
}

// Close closes every connection and the source.
func (s *concSem) Close() error {
	return s.close(func() []error {
		var errs []error
		for _, h := range s.handles {
			errs = append(errs, h.Close())
		}
		return errs
	})
}

// openConcPool opens the threadpool way: c callers hand their lookups to
// pool workers locked to their own OS threads.
func openConcPool(ctx context.Context, op string, user *sqlop.UserOp, c, pool int) (*poolBench, error) {
	src, err := hopSource(op, user)
	if err != nil {
		return nil, err
	}
	return openPool(ctx, src, c, pool, true)
}

// concurrencyDerive adds the total for 10 000 lookups.
func concurrencyDerive(arms []result.Arm) {
	for i := range arms {
		a := &arms[i]
		if a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		a.SetMetric("elapsed-ms/10000-lookups", a.Median*concTotal/1e6)
	}
}

type concKey struct {
	op, way string
	py      string // CPython arms: the interpreter under --python all ("" otherwise)
	c, gmp  int
}

// concIndex finds the measured arms, Go's and CPython's, by op, way, C,
// interpreter and GOMAXPROCS; a CPython arm's is 0 (the interpreter's
// threads do not heed it).
func concIndex(arms []result.Arm) map[concKey]result.Arm {
	out := map[concKey]result.Arm{}
	for _, a := range arms {
		if a.Status != result.StatusOK || a.Median <= 0 {
			continue
		}
		c, err := strconv.Atoi(a.Params["c"])
		if err != nil {
			continue
		}
		k := concKey{op: a.Params["op"], way: a.Params["way"], c: c, gmp: a.GOMAXPROCS}
		if isCPython(a) {
			k.py = exp.Interpreter(a.Name)
			k.gmp = 0
		}
		out[k] = a
	}
	return out
}

// concLevels are the measured levels of k's op, way, interpreter and
// GOMAXPROCS (whatever k.c), ascending.
func concLevels(idx map[concKey]result.Arm, k concKey) []int {
	var cs []int
	for x := range idx {
		if x.op == k.op && x.way == k.way && x.py == k.py && x.gmp == k.gmp {
			cs = append(cs, x.c)
		}
	}
	slices.Sort(cs)
	return cs
}

// at is k at level c.
func (k concKey) at(c int) concKey { k.c = c; return k }

// concMinGain: beyond the CPU count, more lookups in flight should not
// make the total drop below this fraction.
const concMinGain = 0.8

func concurrencyChecks(arms []result.Arm) []result.Check {
	idx := concIndex(arms)
	var out []result.Check
	for k, s := range idx {
		if k.way != "sem" || k.c != 1 {
			continue
		}
		if t, ok := idx[concKey{op: k.op, way: "threadpool", c: 1, gmp: k.gmp}]; ok {
			out = append(out, result.Check{
				Name:  "at C=1, a goroutine per lookup beats handing the lookup to a locked-thread pool",
				Holds: s.Median < t.Median,
				Detail: fmt.Sprintf("%s: %s per lookup with a goroutine vs %s through the thread pool",
					k.op, result.FormatNs(s.Median), result.FormatNs(t.Median)),
				Arms: []string{s.Name, t.Name},
			})
		}
	}
	for k, a := range idx {
		if k.way != "sem" {
			continue
		}
		cs := concLevels(idx, k)
		// compare the largest level with the next smaller one at or above the CPU count
		if len(cs) < 2 || k.c != cs[len(cs)-1] {
			continue
		}
		prev := idx[k.at(cs[len(cs)-2])]
		if cs[len(cs)-2] < k.gmp {
			continue
		}
		out = append(out, result.Check{
			Name:  fmt.Sprintf("beyond the CPU count, more lookups in flight buy little (time at the highest C ≥ %.1f× the next)", concMinGain),
			Holds: a.Median >= concMinGain*prev.Median,
			Detail: fmt.Sprintf("%s at GOMAXPROCS=%d: C=%d %s per lookup vs C=%d %s",
				k.op, k.gmp, k.c, result.FormatNs(a.Median), cs[len(cs)-2], result.FormatNs(prev.Median)),
			Arms: []string{prev.Name, a.Name},
		})
	}
	slices.SortFunc(out, func(a, b result.Check) int { return strings.Compare(a.Name+a.Detail, b.Name+b.Detail) })
	return out
}

func concurrencyFindings(arms []result.Arm) []string {
	idx := concIndex(arms)
	var out []string
	seen := map[concKey]bool{}
	for _, a := range arms {
		k := concKey{op: a.Params["op"], way: a.Params["way"], gmp: a.GOMAXPROCS}
		if seen[k] || a.Status != result.StatusOK {
			continue
		}
		seen[k] = true
		cs := concLevels(idx, k)
		if len(cs) == 0 {
			continue
		}
		base := idx[k.at(cs[0])]
		var parts []string
		for i, c := range cs {
			x := idx[k.at(c)]
			part := fmt.Sprintf("C=%d %.1f ms", c, x.Median*concTotal/1e6)
			if i > 0 {
				part += fmt.Sprintf(" (speed-up %.2f× over C=%d)", base.Median/x.Median, cs[0])
			}
			parts = append(parts, part)
		}
		label := "goroutines under a semaphore"
		if k.way == "threadpool" {
			label = "a pool of " + a.Params["pool"] + " locked threads"
		}
		out = append(out, fmt.Sprintf("10 000 %s lookups through %s at GOMAXPROCS=%d: %s", k.op, label, k.gmp, strings.Join(parts, " · ")))
	}
	return out
}

// concurrencyMetrics declares the figures concurrency arms add beside the median.
var concurrencyMetrics = []exp.Metric{
	{Name: "elapsed-ms/10000-lookups", Unit: "ms", Better: exp.LowerIsBetter, Doc: "wall time for 10 000 lookups at this concurrency"},
}
