package experiments

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"
)

const (
	modPath   = "github.com/ctxlab/ctxlab/internal/"
	unixPath  = "golang.org/x/sys/unix"
	evadePath = modPath + "experiments/testdata/evade"
)

// measuring are the functions and methods, by their full go/types name
// (package path, receiver, name), that read a clock, rusage, schedstat,
// /proc's switch and CPU counts, the Go runtime's metrics or perf
// counters: only the runner (and measure's Sampler and B, which it hands
// to a bench) may use them while an arm runs. Any use counts — a call, a
// method value (root.ReadTask), or the function held in a variable
// (now := time.Now) — however the package or value is spelled.
var measuring = setOf(
	modPath+"measure.Now", modPath+"measure.MonoNow", modPath+"measure.ClockCost",
	modPath+"measure.SelfSwitches", modPath+"measure.ThreadSwitches",
	modPath+"measure.ProcessCPUNs", modPath+"measure.ChildrenUsage", modPath+"measure.ThreadCPUNs",
	modPath+"measure.OpenCounters", modPath+"measure.OpenEvent",
	modPath+"measure.OpenInherited", modPath+"measure.ReadCounter",
	"(*"+modPath+"measure.CounterSet).Begin", "(*"+modPath+"measure.CounterSet).End",
	"(*"+modPath+"measure.CounterSet).Values",
	"time.Now", "time.Since", "time.Until",
	unixPath+".Getrusage", unixPath+".ClockGettime", unixPath+".Gettimeofday", unixPath+".Time",
	"syscall.Getrusage", "syscall.Gettimeofday", "syscall.Time",
	unixPath+".Wait4", "syscall.Wait4", unixPath+".Times", "syscall.Times", unixPath+".PerfEventOpen",
	"(*os.ProcessState).SysUsage", "(*os.ProcessState).UserTime", "(*os.ProcessState).SystemTime",
	modPath+"measure.ProbeEvent", modPath+"measure.ParseGroupRead", modPath+"measure.ParseSingleRead",
	modPath+"measure.PerfSettleLeft",
	"runtime/metrics.Read",
	modPath+"procstat.ParseSched",
	"("+modPath+"procstat.Root).ReadTask", "("+modPath+"procstat.Root).ReadTasks",
	"("+modPath+"procstat.Root).ReadSched", "("+modPath+"procstat.Root).ReadProc",
	"("+modPath+"procstat.Root).Procs", "("+modPath+"procstat.Root).FindByName",
)

// describers are the packages outside the core that run inside an arm
// (the mechanisms, the child roles, the lookups, the spec, the analyses,
// the CPython driver's Go side): they describe, like the experiments, and
// the same check holds for them. Their places in notMeasuring are written
// "pkg/file.go:Func".
var describers = []string{"mech", "child", "sqlop", "exp", "quantum", "pydriver"}

// notMeasuring are the places in experiments (and the describers) that may
// use such a function, and why none of them is a figure the runner should
// have taken.
var notMeasuring = map[string]string{
	"sqlop/stale.go:stale":               "the age of a leftover temp directory from before PIDs named them, to sweep it; not a figure",
	"cachecost.go:openPairBench":         "sizes the slice arm's turn (~every ns of work) at set-up; the figures are the runner's",
	"interference.go:clientChild":        "the netpoll client is another process: it stamps when its request starts, and the runner's sampler reads the age of the stamp",
	"interference.go:starveChild":        "the starved Go runtime is another process: only it can see how late its own timer goroutine woke",
	"pydriver/pydriver.go:awaitProbe":    "how long an interpreter's probe is waited for, past its limit while it makes progress; not a figure",
	"pydriver/pydriver.go:probeProgress": "whether an interpreter's probe is runnable or still using CPU (a starved probe, not a hung one); not a figure",
	"spawn.go:GoroutineMemory":           "reads the runtime's starting stack size, a constant; the memory deltas it takes are outside what this test watches (the idle-memory gauge is read by the runner)",
}

// readsCounts says whether a string literal names a /proc file that holds
// a task's switch counts, CPU time or run-queue wait.
func readsCounts(path string) bool {
	for _, f := range []string{"/schedstat", "/sched", "/stat", "/status"} {
		if strings.HasSuffix(path, f) {
			return true
		}
	}
	return false
}

func setOf(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// loadChecked type-checks this package (without its tests) and the
// testdata package that tries to evade the check, in one go/packages load:
// dependencies come from the build cache's export data, so it costs a
// `go list`, not a compile.
func loadChecked(t *testing.T) (self, evade *packages.Package, others []*packages.Package) {
	t.Helper()
	loaded.once.Do(func() { loaded.self, loaded.evade, loaded.others, loaded.err = load() })
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.self, loaded.evade, loaded.others
}

// loaded is the one load both tests share.
var loaded struct {
	once        sync.Once
	self, evade *packages.Package
	others      []*packages.Package
	err         error
}

func load() (self, evade *packages.Package, others []*packages.Package, err error) {
	cfg := &packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Tests: false,
	}
	patterns := []string{".", "./testdata/evade"}
	for _, d := range describers {
		patterns = append(patterns, "../"+d)
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("go/packages: %w", err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			return nil, nil, nil, fmt.Errorf("%s: %v", p.PkgPath, e)
		}
		switch p.PkgPath {
		case modPath + "experiments":
			self = p
		case evadePath:
			evade = p
		default:
			others = append(others, p)
		}
	}
	if self == nil || evade == nil || len(others) != len(describers) {
		return nil, nil, nil, fmt.Errorf("loaded %d packages, want internal/experiments, its testdata/evade and %v", len(pkgs), describers)
	}
	return self, evade, others, nil
}

// finding is one use of a measuring function: where is "file.go:Func"
// (the top-level declaration that holds it), what says which and how.
type finding struct {
	pos   token.Position
	where string
	what  string
}

// measuringUses lists every use of a measuring function in p's files, and
// every string literal that names a schedstat file. A time.Now() whose
// result only sets a deadline (time.Now().Add/After/Before) is not a reading.
func measuringUses(p *packages.Package) []finding {
	var out []finding
	prefix := ""
	if p.PkgPath != modPath+"experiments" && p.PkgPath != evadePath {
		prefix = p.Name + "/"
	}
	for _, file := range p.Syntax {
		name := prefix + filepath.Base(p.Fset.Position(file.Pos()).Filename)
		for _, d := range file.Decls {
			where := name + ":" + declName(d)
			var stack []ast.Node
			ast.Inspect(d, func(n ast.Node) bool {
				if n == nil {
					stack = stack[:len(stack)-1]
					return true
				}
				stack = append(stack, n)
				switch x := n.(type) {
				case *ast.BasicLit:
					if x.Kind == token.STRING {
						if v, _ := strconv.Unquote(x.Value); readsCounts(v) {
							out = append(out, finding{p.Fset.Position(x.Pos()), where, "opens " + v})
						}
					}
				case *ast.Ident:
					fn, ok := p.TypesInfo.Uses[x].(*types.Func)
					if !ok {
						return true
					}
					full := fn.Origin().FullName()
					if !measuring[full] {
						return true
					}
					how := "calls"
					if !called(stack) {
						how = "takes"
					} else if full == "time.Now" && deadlineUse(stack) {
						return true
					}
					out = append(out, finding{p.Fset.Position(x.Pos()), where, how + " " + full})
				}
				return true
			})
		}
	}
	return out
}

// declName names a top-level declaration: a function or method by its
// name, a var/const/type block by its first name.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Name.Name
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				return s.Names[0].Name
			case *ast.TypeSpec:
				return s.Name.Name
			}
		}
	}
	return "?"
}

// expr is the expression the identifier on top of stack stands for: the
// identifier, or the selector x.Ident it is the Sel of; depth is its index.
func expr(stack []ast.Node) (ast.Expr, int) {
	i := len(stack) - 1
	id := stack[i].(*ast.Ident)
	if i > 0 {
		if sel, ok := stack[i-1].(*ast.SelectorExpr); ok && sel.Sel == id {
			return sel, i - 1
		}
	}
	return id, i
}

// called: the function on top of stack is called right there, f(...),
// not taken as a value.
func called(stack []ast.Node) bool {
	e, i := expr(stack)
	for i > 0 {
		if p, ok := stack[i-1].(*ast.ParenExpr); ok {
			e, i = p, i-1
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	call, ok := stack[i-1].(*ast.CallExpr)
	return ok && call.Fun == e
}

// deadlineUse: the time.Now() call on top of stack is the receiver of
// .Add, .After or .Before — a deadline, not a reading.
func deadlineUse(stack []ast.Node) bool {
	_, i := expr(stack)
	if i < 2 {
		return false
	}
	call := stack[i-1]
	sel, ok := stack[i-2].(*ast.SelectorExpr)
	if !ok || sel.X != call {
		return false
	}
	switch sel.Sel.Name {
	case "Add", "After", "Before":
		return true
	}
	return false
}

// TestExperimentsDoNotMeasure fails when code in internal/experiments, or
// in a describer package (above), reads a clock, rusage, schedstat, runtime metrics or perf counters
// outside the places listed in notMeasuring: one core measures,
// experiments describe. Every identifier is resolved with go/types, so an
// alias (root := procstat.DefaultRoot), a method value or a function held
// in a variable is seen as what it is.
func TestExperimentsDoNotMeasure(t *testing.T) {
	self, _, others := loadChecked(t)
	if len(self.Syntax) < 10 {
		t.Fatalf("checked %d files; run from internal/experiments", len(self.Syntax))
	}
	used := map[string]bool{}
	var found []finding
	for _, p := range append([]*packages.Package{self}, others...) {
		found = append(found, measuringUses(p)...)
	}
	for _, f := range found {
		if _, ok := notMeasuring[f.where]; ok {
			used[f.where] = true
			continue
		}
		t.Errorf("%s: %s %s: only the runner measures; take the figure from the record (exp.Analyzer) or the sampler", f.pos, f.where, f.what)
	}
	var stale []string
	for k := range notMeasuring {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("%s is allowed to measure but no longer does: drop it from notMeasuring", k)
	}
}

// TestMeasuringCheckSeesThroughAliases runs the same check over
// testdata/evade, whose declarations named evade* each hide one measuring use
// behind an alias, a method value, a variable or a renamed import, and
// whose functions named fine* use the same packages without measuring.
// Every evade* must be caught, and no fine*.
func TestMeasuringCheckSeesThroughAliases(t *testing.T) {
	_, evade, _ := loadChecked(t)
	caught := map[string][]string{}
	for _, f := range measuringUses(evade) {
		caught[f.where] = append(caught[f.where], f.what)
		t.Logf("caught %s: %s", f.where, f.what)
	}
	n := 0
	for _, file := range evade.Syntax {
		for _, d := range file.Decls {
			name := declName(d)
			where := filepath.Base(evade.Fset.Position(d.Pos()).Filename) + ":" + name
			switch {
			case strings.HasPrefix(name, "evade"):
				n++
				if len(caught[where]) == 0 {
					t.Errorf("%s measures but the check missed it", where)
				}
			case strings.HasPrefix(name, "fine"):
				if len(caught[where]) > 0 {
					t.Errorf("%s does not measure but the check says it %s", where, strings.Join(caught[where], ", "))
				}
			}
		}
	}
	if n < 8 {
		t.Fatalf("testdata/evade has %d evade* declarations, want at least 8", n)
	}
}
