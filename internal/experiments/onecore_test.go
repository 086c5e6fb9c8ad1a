package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// measuring are the calls that read a clock, rusage, schedstat or the Go
// runtime's metrics: only the runner (and measure's Sampler and B, which
// it hands to a bench) may make them while an arm runs.
var measuring = map[string]bool{
	"measure.Now": true, "measure.MonoNow": true, "measure.ClockCost": true,
	"measure.SelfSwitches": true, "measure.ThreadSwitches": true,
	"measure.ProcessCPUNs": true, "measure.ChildrenUsage": true,
	"time.Now": true, "time.Since": true,
	"unix.Getrusage": true, "syscall.Getrusage": true, "unix.ClockGettime": true, "unix.Gettimeofday": true,
	"metrics.Read": true, "procstat.ReadTask": true, "procstat.ReadTasks": true, "procstat.ReadSched": true,
	"procstat.ParseSched": true, "procstat.ReadProc": true,
}

// notMeasuring are the places in experiments that may make such a call,
// and why none of them is a figure the runner should have taken.
var notMeasuring = map[string]string{
	"cachecost.go:openPairBench":  "sizes the slice arm's turn (~every ns of work) at set-up; the figures are the runner's",
	"interference.go:clientChild": "the netpoll client is another process: it stamps when its request starts, and the runner's sampler reads the age of the stamp",
	"interference.go:starveChild": "the starved Go runtime is another process: only it can see how late its own timer goroutine woke",
	"spawn.go:GoroutineMemory":    "reads the runtime's starting stack size, a constant, not a measurement",
}

// TestExperimentsDoNotMeasure fails when code in internal/experiments
// reads a clock, rusage, schedstat or runtime metrics outside the places
// listed above: one core measures, experiments describe. A time.Now used
// only for a deadline (time.Now().Add/After/Before) is not a reading.
func TestExperimentsDoNotMeasure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	used := map[string]bool{}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			where := f + ":" + fn.Name.Name
			var stack []ast.Node
			ast.Inspect(fn, func(n ast.Node) bool {
				if n == nil {
					stack = stack[:len(stack)-1]
					return true
				}
				stack = append(stack, n)
				switch x := n.(type) {
				case *ast.BasicLit:
					if x.Kind == token.STRING {
						if v, _ := strconv.Unquote(x.Value); strings.HasSuffix(v, "/schedstat") {
							report(t, fset, x, where, "opens schedstat", used)
						}
					}
				case *ast.CallExpr:
					sel, ok := x.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					pkg, ok := sel.X.(*ast.Ident)
					if v, isVar := sel.X.(*ast.SelectorExpr); isVar {
						// a method of a package-level value: procstat.DefaultRoot.ReadTask
						pkg, ok = v.X.(*ast.Ident)
					}
					if !ok || !measuring[pkg.Name+"."+sel.Sel.Name] {
						return true
					}
					name := pkg.Name + "." + sel.Sel.Name
					if name == "time.Now" && deadlineUse(stack) {
						return true
					}
					report(t, fset, x, where, "calls "+name, used)
				}
				return true
			})
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files; run from internal/experiments", checked)
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

func report(t *testing.T, fset *token.FileSet, n ast.Node, where, what string, used map[string]bool) {
	t.Helper()
	if _, ok := notMeasuring[where]; ok {
		used[where] = true
		return
	}
	t.Errorf("%s: %s %s: only the runner measures; take the figure from the record (exp.Analyzer) or the sampler", fset.Position(n.Pos()), where, what)
}

// deadlineUse: the time.Now() call at the top of stack is the receiver of
// .Add, .After or .Before — a deadline, not a reading.
func deadlineUse(stack []ast.Node) bool {
	if len(stack) < 2 {
		return false
	}
	call := stack[len(stack)-1]
	sel, ok := stack[len(stack)-2].(*ast.SelectorExpr)
	if !ok || sel.X != call {
		return false
	}
	switch sel.Sel.Name {
	case "Add", "After", "Before":
		return true
	}
	return false
}
