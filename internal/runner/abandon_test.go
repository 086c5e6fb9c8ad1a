package runner

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Work that answers is waited for, and never stopped.
func TestAwaitAnswers(t *testing.T) {
	stops := 0
	got, gone := await(context.Background(), func() int { return 7 }, func() { stops++ }, time.Hour, nil)
	if got != 7 || gone || stops != 0 {
		t.Fatalf("answer %d, abandoned %v, stopped %d times; want 7, false, 0", got, gone, stops)
	}
}

// Work that blocks until it is stopped is stopped once when ctx ends, and
// its answer is kept.
func TestAwaitStopUnblocks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	var stops atomic.Int32
	cancel()
	got, gone := await(ctx, func() string { <-release; return "stopped" },
		func() { stops.Add(1); close(release) }, time.Hour, func(string) { t.Error("late called for work that answered") })
	if got != "stopped" || gone || stops.Load() != 1 {
		t.Fatalf("answer %q, abandoned %v, stopped %d times; want stopped, false, 1", got, gone, stops.Load())
	}
}

// Work that does not stop is abandoned after the grace, and what it
// answers later goes to late.
func TestAwaitAbandons(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	release := make(chan struct{})
	late := make(chan int, 1)
	got, gone := await(ctx, func() int { <-release; return 3 }, func() {}, time.Millisecond, func(v int) { late <- v })
	if !gone || got != 0 {
		t.Fatalf("answer %d, abandoned %v; want 0, true", got, gone)
	}
	close(release)
	if v := <-late; v != 3 {
		t.Fatalf("late got %d, want the work's 3", v)
	}
}

// hung never returns from its work until the test ends, whatever Close
// or ctx say. hungLoop, hungSelf and hungGauge are it as each kind of bench.
type hung struct{ release, entered chan struct{} }

// enter says the work has begun (once is enough), then blocks.
func (h hung) enter() {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
}

func (h hung) Close() error                   { return nil }
func (h hung) Participants() exp.Participants { return exp.Participants{} }

type (
	hungLoop  struct{ hung }
	hungSelf  struct{ hung }
	hungGauge struct{ hung }
)

func (h hungLoop) Run(*measure.B) error                          { h.enter(); return nil }
func (h hungSelf) Start(context.Context) (exp.SelfTiming, error) { return exp.SelfTiming{}, nil }
func (h hungSelf) Batch(context.Context, int) (int, int64, error) {
	h.enter()
	return 0, 0, nil
}
func (h hungSelf) Measure(context.Context, exp.DirectRequest) (*exp.DirectResult, error) {
	h.enter()
	return nil, nil
}
func (h hungGauge) Read(context.Context) (exp.Reading, error) { h.enter(); return exp.Reading{}, nil }

// Every kind of bench that will not stop ends the same way: timed out at
// its limit (or interrupted), and abandoned, with one reason.
func TestEveryBenchKindIsAbandonedAlike(t *testing.T) {
	saved := abandonAfter
	abandonAfter = 50 * time.Millisecond
	defer func() { abandonAfter = saved }()
	h := hung{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer close(h.release)
	var (
		_ exp.Loop      = hungLoop{}
		_ exp.SelfTimed = hungSelf{}
		_ exp.Gauge     = hungGauge{}
	)
	for name, b := range map[string]exp.Bench{"loop": hungLoop{h}, "self-timed": hungSelf{h}, "gauge": hungGauge{h}} {
		c := cfg()
		c.Timeout = 100 * time.Millisecond
		r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/" + name, Open: func(context.Context) (exp.Bench, error) { return b, nil }})
		if want := "did not finish within 100ms; " + errAbandoned.Error(); r.Status != result.StatusTimedOut || r.Reason != want {
			t.Errorf("%s: %s (%s); want timed out (%s)", name, r.Status, r.Reason, want)
		}
		time.Sleep(measure.PerfSettleLeft())
		ctx, cancel := context.WithCancel(context.Background())
		select {
		case <-h.entered: // the timed-out run's
		default:
		}
		go func() { <-h.entered; cancel() }() // once the work has begun: on a loaded machine a timer may fire before it does
		c.Timeout = time.Minute
		r = Arm(ctx, c, spec, exp.Arm{Name: "fake/" + name, Open: func(context.Context) (exp.Bench, error) { return b, nil }})
		if want := "interrupted; " + errAbandoned.Error(); r.Status != result.StatusInterrupted || r.Reason != want {
			t.Errorf("%s, interrupted: %s (%s); want interrupted (%s)", name, r.Status, r.Reason, want)
		}
		cancel()
	}
}

// TestOneAbandonPath keeps await the one way to abandon work: the
// abandon wait is only ever handed to await, and only abandoned says a
// worker was abandoned.
func TestOneAbandonPath(t *testing.T) {
	fset := token.NewFileSet()
	names, _ := filepath.Glob("*.go")
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	if len(files) < 5 {
		t.Fatalf("parsed %d files; run from internal/runner", len(files))
	}
	for name, f := range files {
		var stack []ast.Node
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			stack = append(stack, n)
			id, ok := n.(*ast.Ident)
			if !ok || len(stack) < 2 {
				return true
			}
			switch id.Name {
			case "abandonAfter":
				call, ok := stack[len(stack)-2].(*ast.CallExpr)
				if vs, isDecl := stack[len(stack)-2].(*ast.ValueSpec); isDecl && slices.Contains(vs.Names, id) {
					return true // its declaration
				}
				if fn, _ := astFunName(call); !ok || fn != "await" {
					t.Errorf("%s: abandonAfter used outside a call of await", fset.Position(id.Pos()))
				}
			case "errAbandoned":
				if filepath.Base(name) != "abandon.go" {
					t.Errorf("%s: errAbandoned used outside abandon.go", fset.Position(id.Pos()))
				}
			}
			return true
		})
	}
}

func astFunName(call *ast.CallExpr) (string, bool) {
	if call == nil {
		return "", false
	}
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name, true
	case *ast.IndexExpr:
		if id, ok := f.X.(*ast.Ident); ok {
			return id.Name, true
		}
	}
	return "", false
}
