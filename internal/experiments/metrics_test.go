package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/store"
)

// Every experiment's metric declarations follow the one naming convention.
func TestMetricDeclarations(t *testing.T) {
	for _, s := range exp.All() {
		if err := s.CheckMetrics(); err != nil {
			t.Error(err)
		}
	}
	for _, m := range exp.CounterMetrics {
		if !exp.ValidMetricName(m.Name) {
			t.Errorf("counter metric %q does not follow the convention", m.Name)
		}
	}
}

// Every metric name an experiment's source sets — a string key assigned
// into Metrics (or into a map[string]float64 literal) — is declared by
// that experiment's spec.
func TestEveryMetricSetIsDeclared(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		if f == "cpython.go" {
			// The CPython substrate's figures: every experiment with
			// CPython arms declares them.
			checked += cpythonMetricsDeclared(t, metricKeysSet(t, f))
			continue
		}
		spec := specOfFile(f)
		if spec == nil {
			continue
		}
		for _, name := range metricKeysSet(t, f) {
			checked++
			if _, ok := spec.DeclaredMetric(name); !ok {
				t.Errorf("%s sets metric %q, which %s does not declare", f, name, spec.Name)
			}
		}
	}
	if checked < 20 {
		t.Errorf("found only %d metric keys set in the sources; the scan is broken", checked)
	}
}

// cpythonMetricsDeclared checks that every experiment with CPython arms
// declares the metric names the substrate sets.
func cpythonMetricsDeclared(t *testing.T, names []string) int {
	t.Helper()
	t.Setenv("PATH", t.TempDir()) // the arms are listed, skipped, without an interpreter
	arms, err := pythonArms(pyParams(exp.SuiteFull))
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]bool{}
	for _, a := range arms {
		first, _, _ := strings.Cut(a.Name, "/")
		hosts[first] = true
	}
	if len(hosts) < 6 {
		t.Errorf("CPython arms in %d experiments, want 6: %v", len(hosts), hosts)
	}
	n := 0
	for h := range hosts {
		spec, _ := exp.Lookup(h)
		for _, name := range names {
			n++
			if _, ok := spec.DeclaredMetric(name); !ok {
				t.Errorf("cpython.go sets metric %q, which %s (it has CPython arms) does not declare", name, h)
			}
		}
	}
	return n
}

// Every metric two real quick-suite runs emitted is declared: one stored
// before the renaming (read maps the old names), one after.
func TestQuickRunMetricsAreDeclared(t *testing.T) {
	for _, name := range []string{"quick.json", "quick2.json"} {
		quickRunMetricsDeclared(t, name)
	}
}

func quickRunMetricsDeclared(t *testing.T, name string) {
	f, err := os.Open(filepath.Join("..", "report", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := store.ReadRun(f) // older ctxlab's names mapped to today's
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range run.Arms {
		spec, ok := exp.Lookup(a.Experiment)
		if !ok {
			t.Fatalf("%s: experiment %q not registered", a.Name, a.Experiment)
		}
		n += len(a.Metrics)
		if u := spec.Undeclared(a.Metrics); len(u) > 0 {
			t.Errorf("%s emits undeclared metrics %v", a.Name, u)
		}
	}
	if n == 0 {
		t.Fatal("the fixture has no metrics")
	}
}

// specOfFile is the experiment a source file belongs to: the registered
// name its file name starts with (interference_checks.go → interference).
func specOfFile(f string) *exp.Spec {
	base := strings.TrimSuffix(f, ".go")
	var best *exp.Spec
	for _, s := range exp.All() {
		if strings.HasPrefix(base, s.Name) && (best == nil || len(s.Name) > len(best.Name)) {
			best = s
		}
	}
	return best
}

// metricKeysSet finds string keys assigned into a .Metrics map and keys of
// map[string]float64 composite literals in file f.
func metricKeysSet(t *testing.T, f string) []string {
	fs := token.NewFileSet()
	file, err := parser.ParseFile(fs, f, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	lit := func(e ast.Expr) {
		if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				out = append(out, s)
			}
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if ix, ok := l.(*ast.IndexExpr); ok {
					if sel, ok := ix.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Metrics" {
						lit(ix.Index)
					}
				}
			}
		case *ast.CompositeLit:
			if mt, ok := n.Type.(*ast.MapType); ok {
				if k, ok := mt.Key.(*ast.Ident); ok && k.Name == "string" {
					if v, ok := mt.Value.(*ast.Ident); ok && v.Name == "float64" {
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								lit(kv.Key)
							}
						}
					}
				}
			}
		}
		return true
	})
	return out
}
