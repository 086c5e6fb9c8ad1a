package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// fileExperiment is the experiment whose files a file is one of
// (ring_links.go is ring's), "" for a file several share (pairs.go).
func fileExperiment(name string) string {
	base := strings.TrimSuffix(name, ".go")
	base, _, _ = strings.Cut(base, "_")
	if _, ok := exp.Lookup(base); ok {
		return base
	}
	return ""
}

// No experiment type-asserts another's types: what two experiments share
// lives in a shared file behind a small interface (interference once
// asserted pingpong's *threadPair). Every type assertion and type switch
// case naming a type of this package is held to where the type is
// declared.
func TestNoExperimentAssertsAnothersTypes(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{} // type name -> file
	parsed := map[string]*ast.File{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[name] = f
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					declared[s.(*ast.TypeSpec).Name.Name] = name
				}
			}
		}
	}
	typeName := func(e ast.Expr) string {
		if s, ok := e.(*ast.StarExpr); ok {
			e = s.X
		}
		if id, ok := e.(*ast.Ident); ok {
			return id.Name
		}
		return ""
	}
	asserted := 0
	for name, f := range parsed {
		mine := fileExperiment(name)
		check := func(e ast.Expr) {
			tn := typeName(e)
			in, ok := declared[tn]
			if !ok {
				return
			}
			asserted++
			if theirs := fileExperiment(in); mine != "" && theirs != "" && theirs != mine {
				t.Errorf("%s: %s (an experiment's file) asserts %s, declared in %s's %s: share it through an interface in a shared file",
					fset.Position(e.Pos()), name, tn, theirs, in)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.TypeAssertExpr:
				if x.Type != nil {
					check(x.Type)
				}
			case *ast.TypeSwitchStmt:
				for _, c := range x.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						check(e)
					}
				}
			}
			return true
		})
	}
	if asserted == 0 {
		t.Error("no type assertion of this package's types found: the check sees nothing")
	}
}
