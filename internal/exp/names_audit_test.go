package exp_test

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// An arm's name is built and read by exp alone (ArmKey and armkey_read.go):
// everywhere else a name is a value to compare, print or look up, never
// text to cut. names_audit_test.go checks every non-test .go file of
// internal/ outside internal/exp, resolving every expression with go/types
// so an alias or a method value is seen for what it is. The rules, each
// narrow enough that what it flags is name handling:
//
//   - pyLiteral: a string literal of one word holding "/py=", the
//     interpreter segment's spelling (ArmKey.Interpreter, exp.Interpreter,
//     PlanName); prose that shows a name (a doc, a message) is not one.
//   - cutName: a call of a strings function that cuts, splits, searches or
//     trims (Cut, Split, Index, HasPrefix, TrimPrefix, Contains …) with an
//     arm name as an argument. An arm name is the Name field of a
//     result.Arm or exp.Arm (or a pointer to one), an Arm field of type
//     string of a struct of this module (exp.HarnessRef, result.HarnessRow,
//     compare.Row …), or an element of result.Check.Arms. Comparing a name
//     with ==, printing it, or using it as a map key is not flagged.
//   - joinName: a string concatenation of an arm name, or of an arm's
//     experiment (result.Arm.Experiment), with a literal that begins or
//     ends with '/'; or of anything with a literal that is the head of a
//     name (a registered experiment's and '/': "callchain/",
//     "hop/pytask/") or a segment ("/db=", "/same-cpu"): building a name
//     by hand. A path ("/proc/", "migrations/") or a unit ("/op") is not.
//   - formatName: a fmt.Sprintf (Errorf, Fprintf …) whose format builds
//     a name: a plain word, '/' and a verb ("ring/%s"), a %s or %v
//     followed by '/' and a verb or a segment ("%s/%s", "%s/user/"), or a
//     "/key=%" segment ("/c=%d"). A count ("%d/%d"), a rate ("%s/s") or a
//     path ("/proc/%d/stat") is not one.
//
// namesAllowed lists, by file (FILE) or by function (FILE:FUNC), what
// still breaks a rule, and why.
var namesAllowed = map[string]string{
	// Not name handling, though the rule cannot tell.
	"internal/experiments/ring_findings.go:ringFindings": "a growth finding's prose label (goroutine/chan same-cpu), the substrate and mechanism as the reader knows them, not an arm's name",
	"internal/cli/completion.go:completeArms":            "shell completion offers the names that begin with what was typed: a prefix of text, not a part of a name",
	"internal/cli/completion.go:completeSelector":        "shell completion offers the names that begin with what was typed: a prefix of text, not a part of a name",
}

const modPath = "github.com/ctxlab/ctxlab/"

// nameFinding is one expression that breaks a rule.
type nameFinding struct {
	pos, rule, what string
	file            string // relative to the module root
	fn              string // the enclosing top-level declaration
}

func TestNoArmNameHandlingOutsideExp(t *testing.T) {
	pkgs, _ := loadForAudit(t)
	used := map[string]bool{}
	files := 0
	for _, p := range pkgs {
		files += len(p.Syntax)
		for _, f := range auditNames(p) {
			if key := f.file + ":" + f.fn; namesAllowed[key] != "" {
				used[key] = true
				continue
			}
			if namesAllowed[f.file] != "" {
				used[f.file] = true
				continue
			}
			t.Errorf("%s: %s: %s; read or build the name with exp (ArmKey, ParseArmKey, ShortNameIn, …)", f.pos, f.rule, f.what)
		}
	}
	if files < 100 {
		t.Fatalf("audited %d files: is the tree where the test expects it?", files)
	}
	var stale []string
	for f := range namesAllowed {
		if !used[f] {
			stale = append(stale, f)
		}
	}
	sort.Strings(stale)
	for _, f := range stale {
		t.Errorf("namesAllowed lists %s, which breaks no rule any more: drop it", f)
	}
}

// The rules catch each way of handling a name by hand in
// testdata/namesaudit (its declarations named bad*), and none of the
// ways of using a name that are fine (fine*).
func TestNamesAuditCatchesEachRule(t *testing.T) {
	_, probe := loadForAudit(t)
	caught := map[string][]string{}
	for _, f := range auditNames(probe) {
		caught[f.fn] = append(caught[f.fn], f.rule)
	}
	n := 0
	for _, file := range probe.Syntax {
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			name := fd.Name.Name
			switch {
			case strings.HasPrefix(name, "bad"):
				n++
				if len(caught[name]) == 0 {
					t.Errorf("%s handles a name by hand, but no rule caught it", name)
				}
			case strings.HasPrefix(name, "fine"):
				if len(caught[name]) > 0 {
					t.Errorf("%s is fine, but the audit flags it: %v", name, caught[name])
				}
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d bad* cases in testdata/namesaudit", n)
	}
}

// audited is the one load both tests share: internal/ outside exp, and
// the rules' own cases.
var audited struct {
	once  sync.Once
	pkgs  []*packages.Package
	probe *packages.Package
	err   error
}

func loadForAudit(t *testing.T) ([]*packages.Package, *packages.Package) {
	t.Helper()
	if testing.Short() {
		t.Skip("type-checks every package of internal/")
	}
	audited.once.Do(func() {
		cfg := &packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
		pkgs, err := packages.Load(cfg, "../...", "./testdata/namesaudit")
		if err != nil {
			audited.err = err
			return
		}
		for _, p := range pkgs {
			if len(p.Errors) > 0 {
				audited.err = fmt.Errorf("%s: %v", p.PkgPath, p.Errors[0])
				return
			}
			switch {
			case strings.HasSuffix(p.PkgPath, "/testdata/namesaudit"):
				audited.probe = p
			case p.PkgPath == modPath+"internal/exp":
			default:
				audited.pkgs = append(audited.pkgs, p)
			}
		}
	})
	if audited.err != nil {
		t.Fatal(audited.err)
	}
	return audited.pkgs, audited.probe
}

// cutFuncs are the strings functions that take text apart.
var cutFuncs = map[string]bool{
	"Cut": true, "CutPrefix": true, "CutSuffix": true,
	"Split": true, "SplitN": true, "SplitAfter": true, "SplitAfterN": true, "SplitSeq": true, "Fields": true,
	"Index": true, "IndexByte": true, "IndexAny": true, "IndexRune": true,
	"LastIndex": true, "LastIndexByte": true, "LastIndexAny": true,
	"HasPrefix": true, "HasSuffix": true, "TrimPrefix": true, "TrimSuffix": true,
	"Contains": true, "ContainsAny": true, "ContainsRune": true, "Count": true,
}

// fmtFuncs are the fmt functions whose first (Sprintf, Errorf) or second
// (Fprintf) argument is a format.
var fmtFuncs = map[string]int{"Sprintf": 0, "Errorf": 0, "Printf": 0, "Fprintf": 1, "Appendf": 1}

// nameFormat matches a format that builds an arm name (see formatName):
// a word not after '/' (not a path, "/proc/%d"), '/' and a verb; a %s or
// %v, '/' and a verb, or a word and another '/' or '=' (not a rate,
// "%s/s"); a "/key=" before a verb.
var nameFormat = regexp.MustCompile(`(^|[^%\w/])[a-z][\w-]*/%|%[sv]/(%|[\w-]+[/=])|/[\w-]+=%`)

// auditNames applies the rules to every file of p.
func auditNames(p *packages.Package) []nameFinding {
	var out []nameFinding
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	for _, file := range p.Syntax {
		path := p.Fset.Position(file.Pos()).Filename
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, d := range file.Decls {
			fn := ""
			if fd, ok := d.(*ast.FuncDecl); ok {
				fn = fd.Name.Name
			}
			ast.Inspect(d, func(n ast.Node) bool {
				if rule, what := breaks(p.TypesInfo, n); rule != "" {
					out = append(out, nameFinding{pos: p.Fset.Position(n.Pos()).String(), rule: rule, what: what, file: rel, fn: fn})
				}
				return true
			})
		}
	}
	return out
}

// breaks is the rule node n breaks, and what it does, or "".
func breaks(info *types.Info, n ast.Node) (rule, what string) {
	switch n := n.(type) {
	case *ast.BasicLit:
		if n.Kind == token.STRING && strings.Contains(n.Value, "/py=") && !strings.ContainsAny(n.Value, " \n") {
			return "pyLiteral", fmt.Sprintf("the literal %s spells the interpreter segment", n.Value)
		}
	case *ast.CallExpr:
		pkg, name := calledFunc(info, n)
		switch {
		case pkg == "strings" && cutFuncs[name]:
			for _, a := range n.Args {
				if armName(info, a) {
					return "cutName", fmt.Sprintf("strings.%s on the arm name %s", name, exprString(a))
				}
			}
		case pkg == "fmt":
			if i, ok := fmtFuncs[name]; ok && i < len(n.Args) {
				if tv, ok := info.Types[n.Args[i]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
					if f := constant.StringVal(tv.Value); nameFormat.MatchString(f) {
						return "formatName", fmt.Sprintf("fmt.%s(%q, …) builds a name", name, f)
					}
				}
			}
		}
	case *ast.BinaryExpr:
		if n.Op == token.ADD {
			for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
				if (armName(info, pair[0]) || armExperiment(info, pair[0])) && slashEnded(info, pair[1]) {
					return "joinName", fmt.Sprintf("%s + %s builds a name", exprString(n.X), exprString(n.Y))
				}
				if lit, ok := ast.Unparen(pair[1]).(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil && isNamePart(v) {
						return "joinName", fmt.Sprintf("%s + %s builds a name", exprString(n.X), exprString(n.Y))
					}
				}
			}
		}
	}
	return "", ""
}

// calledFunc is the package path and name of the package-level function
// call calls, resolved through go/types ("strings", "Cut"), or "".
func calledFunc(info *types.Info, call *ast.CallExpr) (pkg, name string) {
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return "", ""
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Type().(*types.Signature).Recv() != nil {
		return "", ""
	}
	return fn.Pkg().Path(), fn.Name()
}

// armName says whether e is an arm's name (see cutName).
func armName(info *types.Info, e ast.Expr) bool {
	e = ast.Unparen(e)
	if ix, ok := e.(*ast.IndexExpr); ok { // c.Arms[i] of a result.Check
		if sel, ok := ast.Unparen(ix.X).(*ast.SelectorExpr); ok && sel.Sel.Name == "Arms" && isNamed(info.TypeOf(sel.X), "internal/result", "Check") {
			return true
		}
		return false
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	v, ok := info.Uses[sel.Sel].(*types.Var)
	if !ok || !v.IsField() {
		return false
	}
	recv := info.TypeOf(sel.X)
	switch sel.Sel.Name {
	case "Name":
		return isNamed(recv, "internal/result", "Arm") || isNamed(recv, "internal/exp", "Arm")
	case "Arm":
		return isString(v.Type()) && v.Pkg() != nil && strings.HasPrefix(v.Pkg().Path(), modPath)
	}
	return false
}

// armExperiment says whether e is an arm's experiment (result.Arm.Experiment).
func armExperiment(info *types.Info, e ast.Expr) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Experiment" && isNamed(info.TypeOf(sel.X), "internal/result", "Arm")
}

// isNamePart says whether a literal is the head of a name, a registered
// experiment's name and '/' ("callchain/", "hop/pytask/"), or a segment to
// append: a key and '=' ("/db=") or hyphenated words ("/same-cpu"). Not a
// path ("/proc/", "migrations/") or a unit ("/op", "ns/").
func isNamePart(s string) bool {
	if m := nameHead.FindStringSubmatch(s); m != nil {
		_, known := exp.Lookup(m[1])
		return known || m[1] == "python"
	}
	return nameSegment.MatchString(s)
}

var (
	nameHead    = regexp.MustCompile(`^([a-z][a-z0-9-]*)/([a-z][a-z0-9-]*/)*$`)
	nameSegment = regexp.MustCompile(`^/[a-z][a-z0-9_-]*=$|^/[a-z][a-z0-9]*(-[a-z0-9]+)+$`)
)

// slashEnded says whether e is a string constant that begins or ends
// with '/'.
func slashEnded(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
		return false
	}
	s := constant.StringVal(tv.Value)
	return strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/")
}

// isNamed says whether t is (a pointer to) the named type pkg.name of
// this module.
func isNamed(t types.Type, pkg, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == modPath+pkg && n.Obj().Name() == name
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.String
}

func exprString(e ast.Expr) string { return types.ExprString(e) }
