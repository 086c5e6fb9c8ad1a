package exp_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is how long a function of internal/ may be: past it, a
// function does several things, and its parts want names (issue 31).
const maxFuncLines = 80

// longFuncsAllowed are functions that are tables (one literal a line),
// allowed past maxFuncLines by name ("FILE:FUNC"), each with why.
var longFuncsAllowed = map[string]string{}

func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := "internal/" + filepath.ToSlash(strings.TrimPrefix(path, "../")) + ":" + fd.Name.Name
			if n > maxFuncLines && longFuncsAllowed[key] == "" {
				t.Errorf("%s is %d lines (at most %d): cut it into named steps", key, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
