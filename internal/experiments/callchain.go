package experiments

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// callchain: the per-call and per-task floor (SPEC §5.7). A 3-level chain
// of calls made plainly, through interfaces, through closures and with
// every level a goroutine; and tiny items processed inline, one goroutine
// per item, or one goroutine per batch.
func init() {
	exp.Register(&callchainExp{exp.Spec{
		Name:       "callchain",
		Order:      70,
		References: callchainRefs,
		Summary:    "the per-call and per-task floor: a 3-level call chain plain, dynamic and as goroutines; a goroutine per item vs per batch",
		Op:         "chain (3 nested calls) or item",
		OpLabels:   []exp.OpLabel{{Label: "levelcall", Has: "pythread"}, {Label: "levelcall", Has: "coroutine"}, {Label: "task", Has: "create-task"}, {Label: "chain", Has: "plain"}, {Label: "chain", Has: "inlined"}, {Label: "chain", Has: "interface"}, {Label: "chain", Has: "closure"}, {Label: "chain", Has: "goroutine"}, {Label: "item"}},
		Doc: `Chain arms (op = one chain of 3 nested calls, each doing one arithmetic step):
plain (each level marked //go:noinline, so the three calls really happen),
inlined (the same code left to the compiler, which folds it into the loop),
interface (each level calls the next through an interface method),
closure (each level calls the next through a func value it captured),
goroutine (every level starts the next as a goroutine and waits for its
result over a channel — "async all the way down").
Item arms (op = one tiny item of callchain.items, default 100 000):
items-inline (a plain loop), task-per-item (go + WaitGroup per item, all
started, then all awaited), task-per-batch-B (one goroutine per batch of
callchain.batch items, default 100).
CPython: the same chain as plain functions in a thread (pythread/plain) and
as coroutines awaited in turn (pytask/coroutine); pytask/create-task is one
asyncio task per item (op = task), with the memory each task takes.
` + cpythonDoc,
		Arms:     withCPython(callchainArms, callchainPyPlan),
		Checks:   cpythonChecks(callchainChecks, nil),
		Findings: cpythonFindings(callchainFindings, callchainPyRefs.findings),
		Metrics: append(append(append([]exp.Metric(nil), callchainMetrics...), cpythonMetrics...),
			exp.Metric{Name: "task-bytes", Unit: "bytes", Better: exp.LowerIsBetter, Doc: "memory per asyncio task (tracemalloc)"}),
	}})
	exp.RegisterOption(ccItemsOpt)
	exp.RegisterOption(ccBatchOpt)
}

// callchainExp is callchain with its hooks: the figures derived against
// the plain chain, and the selfcheck reference of the CPython chain.
type callchainExp struct{ exp.Spec }

var _ interface {
	exp.Deriver
	exp.Harnessed
} = (*callchainExp)(nil)

func (*callchainExp) Derive(arms []result.Arm) { nativeDerive(callchainDerive)(arms) }

func (*callchainExp) Harness() []exp.HarnessRef {
	return []exp.HarnessRef{{Arm: ccKey(exp.Seg("pythread"), exp.Seg("plain")).String(), Reference: exp.RefPyChain}}
}

// callchain's --set options; batch's ceiling, the items, is checked
// with them (callchainArms).
var (
	ccItemsOpt = exp.IntOption("callchain.items", "callchain: items per round of the item arms, 1..10000000 (default 100000)", 1, ccMaxItems)
	ccBatchOpt = exp.IntOption("callchain.batch", "callchain: items per goroutine of task-per-batch, 1..items (default 100)", 1, ccMaxItems)
)

const (
	ccDefaultItems = 100000
	ccDefaultBatch = 100
	ccMaxItems     = 10000000
)

// ccKey is a callchain arm's key: callchain/plain, callchain/goroutine/gomaxprocs=all.
func ccKey(segs ...exp.Segment) exp.ArmKey { return exp.Key("callchain", segs...) }

// quickCallchain are the quick suite's arms (task-per-batch at any batch).
var quickCallchain = keysOf(
	ccKey(exp.Seg("plain")), ccKey(exp.Seg("interface")), ccKey(exp.Seg("goroutine"), exp.KV("gomaxprocs", "all")),
	ccKey(exp.Seg("items-inline")), ccKey(exp.Seg("task-per-item"), exp.KV("gomaxprocs", "all")),
	ccKey(exp.Seg("task-per-batch"), exp.KV("gomaxprocs", "all")),
)

func callchainArms(p exp.Params) ([]exp.Arm, error) {
	items, batch := ccItemsOpt.Or(p, ccDefaultItems), ccBatchOpt.Or(p, ccDefaultBatch)
	if batch > items {
		return nil, fmt.Errorf("--set callchain.batch=%d: must be in 1..%d", batch, items)
	}
	gmps, gmpNames := gomaxprocsSweep(p)
	unp := exp.Unpinned(p)
	var arms []exp.Arm
	for _, kind := range []string{"plain", "inlined", "interface", "closure"} {
		key := ccKey(exp.Seg(kind))
		arms = append(arms, exp.Arm{
			Name: key.String(), Substrate: "caller", Mechanism: kind, Op: "chain",
			Params: map[string]string{"kind": kind, "levels": "3"}, Placement: unp.Name, CPUs: unp.Process,
			Quick: quickCallchain.has(key),
			Open:  func(context.Context) (exp.Bench, error) { return newChainBench(kind), nil },
		})
	}
	for i, g := range gmps {
		key := ccKey(exp.Seg("goroutine"), exp.KV("gomaxprocs", gmpNames[i]))
		arms = append(arms, exp.Arm{
			Name: key.String(), Substrate: "goroutine", Mechanism: "chan", Op: "chain",
			Params:     map[string]string{"kind": "goroutine", "levels": "3", "gomaxprocs": strconv.Itoa(g)},
			GOMAXPROCS: g, Placement: unp.Name, CPUs: unp.Process, Quick: quickCallchain.has(key),
			Open: func(context.Context) (exp.Bench, error) { return newChainBench("goroutine"), nil },
		})
	}
	// An item arm is named for its mode (task-per-batch-B for a batch of
	// B); quick is the key the quick suite knows it by.
	itemArm := func(mode string, name, quick exp.ArmKey, g int) exp.Arm {
		params := map[string]string{"kind": mode, "items": strconv.Itoa(items)}
		if mode == "task-per-batch" {
			params["batch"] = strconv.Itoa(batch)
		}
		if g > 0 {
			params["gomaxprocs"] = strconv.Itoa(g)
		}
		sub := "goroutine"
		if mode == "items-inline" {
			sub = "caller"
		}
		return exp.Arm{
			Name: name.String(), Substrate: sub, Mechanism: "go+waitgroup", Op: "item",
			Params: params, GOMAXPROCS: g, Placement: unp.Name, CPUs: unp.Process, Quick: quickCallchain.has(quick),
			Open: func(context.Context) (exp.Bench, error) { return newTaskBench(mode, items, batch), nil },
		}
	}
	inline := ccKey(exp.Seg("items-inline"))
	arms = append(arms, itemArm("items-inline", inline, inline, 0))
	for i, g := range gmps {
		gmp := exp.KV("gomaxprocs", gmpNames[i])
		perItem := ccKey(exp.Seg("task-per-item"), gmp)
		arms = append(arms, itemArm("task-per-item", perItem, perItem, g))
		arms = append(arms, itemArm("task-per-batch", ccKey(exp.Seg("task-per-batch-"+strconv.Itoa(batch)), gmp),
			ccKey(exp.Seg("task-per-batch"), gmp), g))
	}
	return arms, nil
}

// The chain's levels: each does one arithmetic step around the next call.
// ccPlain* are kept out of line (//go:noinline) so the chain measures three
// real calls; ccInl* are the same code, which the compiler inlines.

//go:noinline
func ccPlain1(x int64) int64 { return ccPlain2(x+1) * 3 }

//go:noinline
func ccPlain2(x int64) int64 { return ccPlain3(x^5) + 1 }

//go:noinline
func ccPlain3(x int64) int64 { return x + 7 }

func ccInl1(x int64) int64 { return ccInl2(x+1) * 3 }
func ccInl2(x int64) int64 { return ccInl3(x^5) + 1 }
func ccInl3(x int64) int64 { return x + 7 }

// Interface levels: the next level's type is only known at run time.
type ccLevel interface{ call(x int64) int64 }

type ccI1 struct{ next ccLevel }
type ccI2 struct{ next ccLevel }
type ccI3 struct{}

func (l *ccI1) call(x int64) int64 { return l.next.call(x+1) * 3 }
func (l *ccI2) call(x int64) int64 { return l.next.call(x^5) + 1 }
func (*ccI3) call(x int64) int64   { return x + 7 }

// ccClosures builds the chain from func values that capture the next level
// (as middleware does); kept out of line so the compiler cannot see which
// function each captured value is and inline it.
//
//go:noinline
func ccClosures() func(int64) int64 {
	f3 := ccWrap(nil, 3)
	f2 := ccWrap(f3, 2)
	return ccWrap(f2, 1)
}

//go:noinline
func ccWrap(next func(int64) int64, level int) func(int64) int64 {
	switch level {
	case 1:
		return func(x int64) int64 { return next(x+1) * 3 }
	case 2:
		return func(x int64) int64 { return next(x^5) + 1 }
	}
	return func(x int64) int64 { return x + 7 }
}

// ccAsync runs every level as a goroutine that sends its result back on a
// channel (buffered, reused: one chain runs at a time).
type ccAsync struct{ ch [3]chan int64 }

func (c *ccAsync) level1(x int64) {
	go c.level2(x + 1)
	c.ch[0] <- (<-c.ch[1]) * 3
}

func (c *ccAsync) level2(x int64) {
	go c.level3(x ^ 5)
	c.ch[1] <- (<-c.ch[2]) + 1
}

func (c *ccAsync) level3(x int64) { c.ch[2] <- x + 7 }

func (c *ccAsync) call(x int64) int64 {
	go c.level1(x)
	return <-c.ch[0]
}

// A chain arm is one small type per kind, each with its own loop (a call
// through a func value in a shared loop would add a call of its own to
// every chain). chain is what they share: the kind, and the check that
// the last result is the plain chain's, so the work provably ran. The
// call-only kinds are not sampled per op: a chain of a few ns is below
// the clock's resolution, and the sampler's own bookkeeping would cost
// more than the chain.
type chain struct {
	kind string
	sink int64
}

// done ends a batch of n chains whose results summed to sum, the last
// one being last for input x.
func (c *chain) done(b *measure.B, n int, sum, last, x int64) error {
	b.StopTimer()
	c.sink = sum
	if n > 0 && last != ccPlain1(x) {
		return fmt.Errorf("%s chain of %d returned %d, want %d", c.kind, x, last, ccPlain1(x))
	}
	return nil
}

// Participants: plain calls and goroutines alike run on the Go
// runtime's threads, so the whole process takes part.
func (c *chain) Participants() exp.Participants { return exp.WholeProcess() }

func (c *chain) Close() error { return nil }

func newChainBench(kind string) exp.Loop {
	c := chain{kind: kind}
	switch kind {
	case "plain":
		return &plainChain{c}
	case "inlined":
		return &inlinedChain{c}
	case "interface":
		return &ifaceChain{c, &ccI1{next: &ccI2{next: &ccI3{}}}}
	case "closure":
		return &closureChain{c, ccClosures()}
	case "goroutine":
		a := &asyncChain{chain: c, async: &ccAsync{}}
		for i := range a.async.ch {
			a.async.ch[i] = make(chan int64, 1)
		}
		return a
	}
	return &unknownChain{c}
}

// plainChain: three calls kept out of line.
type plainChain struct{ chain }

func (c *plainChain) Run(b *measure.B) error {
	var sum, last, x int64
	for i := 0; i < b.N; i++ {
		x = int64(i)
		last = ccPlain1(x)
		sum += last
	}
	return c.done(b, b.N, sum, last, x)
}

// inlinedChain: the same code, which the compiler folds into the loop.
type inlinedChain struct{ chain }

func (c *inlinedChain) Run(b *measure.B) error {
	var sum, last, x int64
	for i := 0; i < b.N; i++ {
		x = int64(i)
		last = ccInl1(x)
		sum += last
	}
	return c.done(b, b.N, sum, last, x)
}

// ifaceChain: each level calls the next through an interface.
type ifaceChain struct {
	chain
	first ccLevel
}

func (c *ifaceChain) Run(b *measure.B) error {
	var sum, last, x int64
	for i := 0; i < b.N; i++ {
		x = int64(i)
		last = c.first.call(x)
		sum += last
	}
	return c.done(b, b.N, sum, last, x)
}

// closureChain: each level calls the next through a func value.
type closureChain struct {
	chain
	first func(int64) int64
}

func (c *closureChain) Run(b *measure.B) error {
	var sum, last, x int64
	for i := 0; i < b.N; i++ {
		x = int64(i)
		last = c.first(x)
		sum += last
	}
	return c.done(b, b.N, sum, last, x)
}

// asyncChain: every level a goroutine; sampled per op, and stopped by
// Close between chains.
type asyncChain struct {
	chain
	async  *ccAsync
	closed atomic.Bool
}

func (c *asyncChain) Run(b *measure.B) error {
	var sum, last, x int64
	s := b.S
	for i := 0; i < b.N; i++ {
		if i&1023 == 0 && c.closed.Load() {
			return errHopClosed
		}
		x = int64(i)
		t := s.Start(i)
		last = c.async.call(x)
		s.Stop(t)
		sum += last
	}
	return c.done(b, b.N, sum, last, x)
}

func (c *asyncChain) Close() error { c.closed.Store(true); return nil }

// unknownChain is a kind no plan has.
type unknownChain struct{ chain }

func (c *unknownChain) Run(*measure.B) error { return fmt.Errorf("unknown chain kind %q", c.kind) }

// ccItem is one tiny item's work.
func ccItem(i int, round int64) int64 { return int64(i)*int64(i) + round + 1 }

// taskBench processes b.N items in rounds of `items` as its mode says
// (itemRounds): inline, one goroutine per item or one per batch, all
// started and then awaited. Items are not sampled one by one: an item's
// cost only exists as a share of its round.
type taskBench struct {
	mode   string
	items  int
	res    []int64
	round  int64
	closed atomic.Bool
	how    itemRounds
}

// itemRounds is how a mode processes a round of n items into res.
type itemRounds interface {
	process(res []int64, n int, round int64)
}

func newTaskBench(mode string, items, batch int) exp.Loop {
	t := &taskBench{mode: mode, items: items, res: make([]int64, items)}
	switch mode {
	case "items-inline":
		t.how = inlineItems{}
	case "task-per-item":
		t.how = &taskPerItem{}
	case "task-per-batch":
		t.how = &taskPerBatch{batch: batch}
	}
	return t
}

func (t *taskBench) Run(b *measure.B) error {
	if t.how == nil {
		return fmt.Errorf("unknown task mode %q", t.mode)
	}
	res := t.res
	var n int
	for done := 0; done < b.N; done += n {
		if t.closed.Load() {
			return errHopClosed
		}
		n = min(t.items, b.N-done)
		t.round++
		t.how.process(res, n, t.round)
	}
	b.StopTimer()
	for i := 0; i < n; i++ {
		if res[i] != ccItem(i, t.round) {
			return fmt.Errorf("%s: item %d of round %d holds %d, want %d", t.mode, i, t.round, res[i], ccItem(i, t.round))
		}
	}
	return nil
}

// Participants: the whole process (the tasks are goroutines).
func (t *taskBench) Participants() exp.Participants { return exp.WholeProcess() }

func (t *taskBench) Close() error { t.closed.Store(true); return nil }

// inlineItems: a plain loop.
type inlineItems struct{}

func (inlineItems) process(res []int64, n int, round int64) {
	for i := 0; i < n; i++ {
		res[i] = ccItem(i, round)
	}
}

// taskPerItem: a goroutine per item, all started, then all awaited.
type taskPerItem struct{ wg sync.WaitGroup }

func (t *taskPerItem) process(res []int64, n int, round int64) {
	t.wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			res[i] = ccItem(i, round)
			t.wg.Done()
		}()
	}
	t.wg.Wait()
}

// taskPerBatch: a goroutine per batch of items.
type taskPerBatch struct {
	batch int
	wg    sync.WaitGroup
}

func (t *taskPerBatch) process(res []int64, n int, round int64) {
	t.wg.Add((n + t.batch - 1) / t.batch)
	for lo := 0; lo < n; lo += t.batch {
		hi := min(lo+t.batch, n)
		go func() {
			for i := lo; i < hi; i++ {
				res[i] = ccItem(i, round)
			}
			t.wg.Done()
		}()
	}
	t.wg.Wait()
}
