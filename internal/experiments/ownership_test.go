package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// namedElsewhere are the string literals outside internal/experiments
// that may equal an experiment's name or begin with one and "/", and why
// none of them is knowledge of that experiment.
var namedElsewhere = map[string]string{
	"internal/store/legacy.go:hop/half-rt": "a legacy metric name that stored runs may carry, renamed on reading; not an arm",
	"internal/store/legacy.go:hop":         "the experiment of stored legacy CPython arm names (python/hop/pytask/…) whose lookups ran in :memory:, renamed on reading",
}

// TestNoPackageNamesAnExperiment fails when production code outside
// internal/experiments names an experiment in a string literal (its name,
// or an arm name that begins with it): what an experiment is — its order,
// references, verdict rows, the arms price and serve read — is declared in
// its own spec (exp.Spec), so a new experiment edits no other package.
// Comments and tests may name experiments.
func TestNoPackageNamesAnExperiment(t *testing.T) {
	var names []string
	for _, s := range exp.All() {
		names = append(names, s.Name)
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	allowed := map[string]bool{}
	checked := 0
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "internal/experiments" || d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, name := range names {
					if s != name && !strings.HasPrefix(s, name+"/") {
						continue
					}
					if key := rel + ":" + s; namedElsewhere[key] != "" {
						allowed[key] = true
						continue
					}
					p := fset.Position(lit.Pos())
					t.Errorf("%s:%d: %q names experiment %s; declare what the package needs in the experiment's spec (exp.Spec) instead", rel, p.Line, s, name)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d files checked: is the tree where the test expects it?", checked)
	}
	for key, why := range namedElsewhere {
		lit := key[strings.LastIndex(key, ":")+1:]
		if _, registered := exp.Lookup(strings.Split(lit, "/")[0]); registered && !allowed[key] {
			t.Errorf("namedElsewhere lists %s (%s), but no such literal remains: drop it", key, why)
		}
	}
}

// Each experiment declares its own place in listings and suites; two
// experiments never claim the same one, and exp.All follows them.
func TestExperimentsDeclareTheirOrder(t *testing.T) {
	seen := map[int]string{}
	last := 0
	for _, s := range exp.All() {
		if s.Order <= 0 {
			t.Errorf("%s declares no order (exp.Spec.Order)", s.Name)
		}
		if other, dup := seen[s.Order]; dup {
			t.Errorf("%s and %s both declare order %d", other, s.Name, s.Order)
		}
		seen[s.Order] = s.Name
		if s.Order < last {
			t.Errorf("exp.All puts %s (order %d) after order %d", s.Name, s.Order, last)
		}
		last = s.Order
	}
}

// serve exports a cost per switch only for arms without CPU hogs: the
// interference arms say which of theirs run one.
func TestInterferenceDeclaresItsHoggedArms(t *testing.T) {
	s, ok := exp.Lookup("interference")
	if !ok || hoggedOf(s) == nil {
		t.Fatal("interference declares no Hogged")
	}
	for params, want := range map[string]bool{"hogs=0": false, "hogs=1": true, "busy=0": false, "busy=1": true, "": false} {
		a := result.Arm{Params: map[string]string{}}
		if k, v, ok := strings.Cut(params, "="); ok {
			a.Params[k] = v
		}
		if got := hoggedOf(s)(a); got != want {
			t.Errorf("%q: hogged %v, want %v", params, got, want)
		}
	}
}
