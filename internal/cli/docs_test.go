package cli

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// TestDocumentedCommands runs every `ctxlab …` command that README.md and
// docs/*.md show, so a documented command cannot fail unnoticed. A command
// is taken from fenced or indented code blocks and from inline code that
// starts with "ctxlab "; `#` comments, `> file` redirections and the parts
// of `&&` and `|` chains that are not ctxlab are dropped. A fenced block
// marked ```text is a screen capture, what ctxlab printed: it holds no
// commands. The rules:
//
//   - A synopsis (a line with placeholders: PID, RUN, [EXPERIMENT], …, a|b),
//     or inline code naming a bare command (`ctxlab watch`), must name a
//     real command, and each --flag must be one of its flags. A synopsis
//     is inline code (the README's table of them), never a line of a code
//     block: a reader pastes those, and a placeholder fails.
//   - `ctxlab` and `ctxlab run …` are parsed and validated as run would
//     (exit-2 checks, and the selection must hold at least one arm). Those
//     selecting at most execArms arms also run, with --benchtime 1ms --reps 1
//     --no-store. Larger selections (the suites) take minutes even so, and
//     the arms of fixedWork experiments do a set amount of work that
//     --benchtime does not shorten (MiB working sets, thousands of workers,
//     an interpreter start per arm): those are parsed and selected only;
//     their own packages' tests run them small.
//   - `watch` runs against a process the test starts: a PID (or $$) in the
//     example becomes that process's, --name matches it, and --interval 100ms
//     --count 2 bound it.
//   - `diagnose -- CMD` runs with CMD replaced by `sleep 0.2` (the documented
//     commands are stress loads or the reader's own server).
//   - `diagnose --vary … -- CMD` runs with --reps 2, --settle 0s and
//     --price=false, stored in a history of their own, which `compare`,
//     `show` and `report` examples naming a value (RUN:NAME=V) read; a CMD
//     of `ctxlab workload` runs as documented but small (--ws 256KiB,
//     --elements 2000000), any other CMD is `sleep 0.05`.
//   - `serve` is parsed only (it is a server; internal/serve tests it).
//   - Every other command (list, env, history, show, compare, report,
//     budget, export, import, completion) runs for real, against a history
//     seeded with two tiny runs and the report fixture, in a temp dir.
//
// Each must exit 0. The README's commands are what a newcomer runs first:
// they run on a pseudo-terminal 80 columns wide, the run commands among
// them small even where they select many arms or fixed work (all but the
// few readmeNotRun names, with why), and their screens must keep their
// word (screenProblems: no line over 80 columns, no placeholder for a
// figure, no negative cost).
func TestDocumentedCommands(t *testing.T) {
	examples := docExamples(t)
	if len(examples) < 40 {
		t.Fatalf("found only %d documented commands; is the extraction broken?", len(examples))
	}
	dir := t.TempDir()
	env := append(os.Environ(), "CTXLAB_TEST_AS_MAIN=1", "XDG_DATA_HOME="+filepath.Join(dir, "data"), "HOME="+dir)
	sh := func(args ...string) (string, error) { return runExample(t, dir, env, args) }

	// The history the examples read: two tiny runs, then a real quick run
	// of pingpong, ring and interference (so ring:param exists).
	for i := 0; i < 2; i++ {
		if out, err := sh("run", "pingpong/goroutine/chan/*", "--benchtime", "1ms", "--reps", "2"); err != nil {
			t.Fatalf("seeding the history: %v\n%s", err, out)
		}
	}
	if out, err := sh("import", filepath.Join(mustAbs(t, "../report/testdata"), "browser-run.json")); err != nil {
		t.Fatalf("seeding the history: %v\n%s", err, out)
	}

	userFixtures(t, dir)
	t.Chdir(dir) // the examples' relative paths (shop.db, ./src), parsed here too

	victim := exec.Command("sleep", "3600") // outlives the examples, however long a loaded machine makes them; killed below
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()

	varyDB := filepath.Join(dir, "vary.db") // where the --vary examples store their runs
	seen := map[string]bool{}
	for _, ex := range examples {
		key := fmt.Sprint(ex.synopsis, ex.args)
		if seen[key] {
			continue // the same command, documented twice, runs once
		}
		seen[key] = true
		t.Run(ex.where, func(t *testing.T) {
			args := ex.args
			switch {
			case ex.synopsis:
				if ex.block {
					t.Errorf("%s: ctxlab %s is a synopsis in a code block, where a reader pastes commands; put it in inline code", ex.where, strings.Join(args, " "))
				}
				checkSynopsis(t, args)
				return
			case len(args) == 0 || args[0] == "run" || strings.HasPrefix(args[0], "-"):
				n, exps := checkPlan(t, args)
				big := n > execArms || slices.ContainsFunc(exps, func(e string) bool { return fixedWork[e] })
				if readme(ex) && big && !testing.Short() { // the README's word is on the screen: run it, small
					if why, skip := readmeNotRun[strings.Join(args, " ")]; skip {
						t.Logf("%s: ctxlab %s: parsed, not run: %s", ex.where, strings.Join(args, " "), why)
						return
					}
					big = false
				}
				if big || testing.Short() {
					return
				}
				args = append(args, "--benchtime", "1ms", "--reps", "1", "--no-store", "--timeout", "30s")
			case args[0] == "watch":
				args = watchForm(args, victim.Process.Pid)
			case args[0] == "diagnose" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--vary") }):
				args = varyForm(args, varyDB)
			case (args[0] == "compare" || args[0] == "show" || args[0] == "report") && slices.ContainsFunc(args, valueRef.MatchString):
				args = append(args, "--db", varyDB) // RUN:NAME=V: a value of the runs the --vary examples stored
			case args[0] == "diagnose":
				// --no-store: a stored diagnosis would be the "last" run the
				// report and show examples read.
				i := indexOf(args, "--")
				args = append(append(args[:i:i], "--no-store", "--"), "sleep", "0.2")
			case args[0] == "serve":
				parseOnly(t, args)
				return
			case args[0] == "selfcheck":
				if testing.Short() {
					parseOnly(t, args)
					return
				}
				// --no-store: a stored check would be the "last" run the
				// report and show examples read.
				args = append(dropFlags(args, "--rounds", "--reps", "--benchtime", "--settle"),
					"--rounds", "1", "--reps", "1", "--benchtime", "1ms", "--settle", "0", "--no-store")
			}
			run := runExample
			if readme(ex) { // as the newcomer reads it: on a terminal 80 columns wide
				run = func(t *testing.T, dir string, env, args []string) (string, error) {
					return runExampleTTY(t, dir, env, args, screenWidth)
				}
			}
			out, err := run(t, dir, env, args)
			if err != nil {
				t.Errorf("%s: ctxlab %s: %v\n%s", ex.where, strings.Join(args, " "), err, tail(out, 1500))
			}
			if readme(ex) {
				checkScreen(t, ex.where, args, out)
			}
		})
	}
}

// readme says the example is the README's: the newcomer's first screens,
// whose output checkScreen holds to its word.
func readme(ex docExample) bool { return strings.HasPrefix(ex.where, "README.md:") }

// readmeNotRun are the README's run commands that take too long for a
// test even with --benchtime 1ms --reps 1, and why; every other README
// run command runs, the quick suite (bare ctxlab) included.
var readmeNotRun = map[string]string{
	"run --full":                    "every arm of every experiment with longer repetitions: minutes",
	"run --format json -o run.json": "the default suite (every default arm), written as JSON: no screen to check",
	"run python --python all":       "every python3.N and python3.Nt found (pyenv puts nine here): the CPython arms once per interpreter",
	"run ring yield spawn":          "fixed work --benchtime does not shorten (rings of 10 000 goroutines, 1 000 threads, 100 processes): ~40 s on a loaded 2-vCPU VM; internal/experiments runs them small",
	"run cachecost":                 "the full sweep to 128 MiB working sets, fixed work; run cachecost --quick runs",
}

// screenWidth is the terminal width the README's commands run in, and
// their screens must fit.
const screenWidth = 80

// screenFaults are what a screen must never print: a placeholder left for
// a figure ("(X ms nominal)", "X ≥ 1 ms"), a fmt error, a figure in
// exponent form, a negative cost ("adds -1.86e+04 ns").
var screenFaults = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(^|[^\pL\pN_])[XNY] ?(ns|µs|ms|s|≥|%)([^\pL]|$)`), "a placeholder where a figure belongs"},
	{regexp.MustCompile(`%!`), "a fmt error"},
	{regexp.MustCompile(`\d(\.\d+)?e[+-]\d+`), "a figure in exponent form"},
	{regexp.MustCompile(`\badds? *[-−]\s*\d`), `a negative "adds" figure`},
}

// checkScreen holds a README command's output to its word
// (screenProblems).
func checkScreen(t *testing.T, where string, args []string, out string) {
	t.Helper()
	for _, p := range screenProblems(args, out) {
		t.Errorf("%s: ctxlab %s, %s", where, strings.Join(args, " "), p)
	}
}

// screenProblems are the lines of a command's output that break its word:
// wider than screenWidth, a placeholder, a negative cost. Lines of machine
// formats are exempt from the width: JSON (watch's and diagnose's
// redirected output, export, --format json), a shell completion script,
// markdown, CSV and bench.
func screenProblems(args []string, out string) []string {
	machine := slices.Contains(args, "completion") || slices.Contains(args, "export")
	for i, a := range args {
		if a == "--format" && i+1 < len(args) && args[i+1] != "table" {
			machine = true
		}
	}
	var bad []string
	for n, l := range strings.Split(out, "\n") {
		for _, f := range screenFaults {
			if f.re.MatchString(l) {
				bad = append(bad, fmt.Sprintf("line %d: %s: %q", n+1, f.what, l))
			}
		}
		if machine || strings.HasPrefix(strings.TrimSpace(l), "{") {
			continue
		}
		if w := utf8.RuneCountInString(l); w > screenWidth {
			bad = append(bad, fmt.Sprintf("line %d is %d columns wide, over %d: %q", n+1, w, screenWidth, l))
		}
	}
	return bad
}

// The screen check catches what the newcomer of issue 50 met, and passes
// what ctxlab prints.
func TestScreenProblems(t *testing.T) {
	for _, l := range []string{
		"  timer lag (X ms nominal)",
		"  the lag is X ≥ 1 ms",
		"  the hop adds -1.86e+04 ns to a 78 µs call",
		"  a thread hop adds −18.6 µs",
		"  %!d(string=5)",
		strings.Repeat("w", 81),
	} {
		if len(screenProblems([]string{"run"}, l)) == 0 {
			t.Errorf("not caught: %q", l)
		}
	}
	for _, l := range []string{
		"  a thread hop adds 18.2 µs · X11 apps · max 5 ms · p50 88.9 µs → 19.3 ms",
		"  pingpong/thread/futex/same-cpu: 2.00 switches; 35% of a core; N=2…10000",
		"  the hop adds nothing measurable (18.6 µs below direct)",
		`{"kind":"thread","name":"` + strings.Repeat("w", 100) + `"}`,
		strings.Repeat("w", 80),
	} {
		if p := screenProblems([]string{"run"}, l); len(p) > 0 {
			t.Errorf("a good line caught: %v", p)
		}
	}
	if p := screenProblems([]string{"show", "last", "--format", "markdown"}, strings.Repeat("|", 120)); len(p) > 0 {
		t.Errorf("markdown held to the width: %v", p)
	}
}

// userFixtures makes the user's files the README's examples name: shop.db
// (an orders table of 5 000 rows), src/pricing.py (quote) and ids.txt.
func userFixtures(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"create table orders (order_id integer primary key, customer text, total real)",
		"with recursive n(i) as (select 1 union all select i + 1 from n where i < 5000) insert into orders select i, 'c' || (i % 17), i * 1.5 from n",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"src/pricing.py": "def quote(k):\n    return k * 3\n", "ids.txt": "1\n2\n3\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// execArms: run examples selecting at most this many arms really run.
const execArms = 12

// fixedWork: experiments whose arms take seconds whatever --benchtime says
// ("python": any CPython arm, in whichever experiment).
var fixedWork = map[string]bool{"cachecost": true, "python": true, "ring": true, "spawn": true, "yield": true}

type docExample struct {
	where    string   // file:line
	args     []string // after "ctxlab"
	synopsis bool
	block    bool // a line of a code block, not inline code
}

var (
	inlineCtxlab = regexp.MustCompile("`(ctxlab(?: [^`]*)?)`")
	placeholder  = regexp.MustCompile(`^\[|\]$|…|\\\||^[A-Z][A-Z0-9_]*(\.json)?$`)
)

// docExamples extracts the ctxlab commands of README.md and docs/*.md.
func docExamples(t *testing.T) []docExample {
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	var out []docExample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fenced, capture := false, false
		for i, line := range strings.Split(string(b), "\n") {
			if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
				fenced = !fenced
				capture = fenced && fence == "text" // a screen capture: output, not commands
				continue
			}
			if capture {
				continue
			}
			var cands []string
			inline := !fenced && !strings.HasPrefix(line, "    ")
			if c := strings.TrimPrefix(strings.TrimSpace(line), "$ "); !inline && (c == "ctxlab" || strings.HasPrefix(c, "ctxlab ")) {
				cands = append(cands, c)
			}
			if inline {
				for _, m := range inlineCtxlab.FindAllStringSubmatch(line, -1) {
					cands = append(cands, m[1])
				}
			}
			for _, c := range cands {
				words, err := shellWords(c)
				if err != nil {
					t.Errorf("%s:%d: %v", f, i+1, err)
					continue
				}
				for _, cmd := range commands(words) {
					ex := docExample{where: fmt.Sprintf("%s:%d", filepath.Base(f), i+1), args: cmd, block: !inline}
					// Inline `ctxlab watch` names a command; it is no example.
					ex.synopsis = inline && len(cmd) <= 1
					for _, w := range cmd {
						ex.synopsis = ex.synopsis || placeholder.MatchString(w)
					}
					out = append(out, ex)
				}
			}
		}
	}
	return out
}

// shellWords splits a command line as sh would for the simple lines docs
// hold: quotes, backslashes, an unquoted # comment. Operators (&&, |, >)
// come back as words of their own.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return words, nil
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed quote in %q", s)
	}
	flush()
	return words, nil
}

// commands cuts words at && and | and keeps the ctxlab commands, without
// "ctxlab" and without redirections.
func commands(words []string) [][]string {
	var out [][]string
	var cur []string
	end := func() {
		if len(cur) > 0 && cur[0] == "ctxlab" {
			out = append(out, cur[1:])
		}
		cur = nil
	}
	for i := 0; i < len(words); i++ {
		switch w := words[i]; {
		case w == "&&" || w == "|" || w == ";":
			end()
		case w == ">" || w == "2>" || w == "<" || w == ">>":
			i++ // and its file
		case strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>"):
		default:
			cur = append(cur, w)
		}
	}
	end()
	return out
}

// checkSynopsis: the command exists and knows every --flag named.
func checkSynopsis(t *testing.T, args []string) {
	t.Helper()
	root := newRoot(nil, io.Discard, io.Discard)
	cmd, _, err := root.Find(args)
	if err != nil {
		t.Fatalf("ctxlab %s: %v", strings.Join(args, " "), err)
	}
	for _, w := range args {
		if w == "--" {
			break
		}
		if name, ok := strings.CutPrefix(strings.Trim(w, "[]"), "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if cmd.Flags().Lookup(name) == nil {
				t.Errorf("ctxlab %s: %s has no flag --%s", strings.Join(args, " "), cmd.CommandPath(), name)
			}
		}
	}
}

// checkPlan parses a run (or bare ctxlab) command with run's own flags and
// validates it as run would; it returns how many arms it selects, and of
// which experiments.
func checkPlan(t *testing.T, args []string) (int, []string) {
	t.Helper()
	a := args
	bare := len(a) == 0 || a[0] != "run"
	if !bare {
		a = a[1:]
	}
	o := &RunOptions{Stdout: io.Discard, Stderr: io.Discard}
	var pl *plan
	c := &cobra.Command{Use: "run", SilenceErrors: true, SilenceUsage: true, RunE: func(cmd *cobra.Command, rest []string) error {
		if bare && !o.Full {
			o.Quick = true // as bare ctxlab does
		}
		var err error
		pl, err = validate(o, rest, sysinfo.Detect())
		return err
	}}
	addRunFlags(c, o)
	c.SetArgs(a)
	c.SetOut(io.Discard)
	c.SetErr(io.Discard)
	if err := c.Execute(); err != nil {
		t.Fatalf("ctxlab %s: %v", strings.Join(args, " "), err)
	}
	if pl == nil {
		t.Fatalf("ctxlab %s plans nothing (a help flag?)", strings.Join(args, " "))
	}
	n := 0
	var exps []string
	for _, s := range pl.sel {
		n += len(s.Arms)
		exps = append(exps, s.Spec.Name)
		for _, a := range s.Arms {
			if strings.HasPrefix(a.Substrate, "py") {
				exps = append(exps, "python") // CPython arms: an interpreter each
				break
			}
		}
	}
	if n == 0 {
		t.Fatalf("ctxlab %s selects no arm", strings.Join(args, " "))
	}
	return n, exps
}

// parseOnly: the command exists and its flags and arguments parse.
func parseOnly(t *testing.T, args []string) {
	t.Helper()
	root := newRoot(nil, io.Discard, io.Discard)
	cmd, rest, err := root.Find(args)
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if errors.Is(err, pflag.ErrHelp) {
		return // --help parses
	}
	if err == nil {
		err = cmd.ValidateArgs(cmd.Flags().Args())
	}
	if err != nil {
		t.Fatalf("ctxlab %s: %v", strings.Join(args, " "), err)
	}
}

// varyForm makes a diagnose --vary example quick: two runs per value, no
// pause, no calibration, its workload small, stored in db.
func varyForm(args []string, db string) []string {
	i := indexOf(args, "--")
	var out []string
	set := map[string]string{"--reps": "2", "--settle": "0s"}
	for j := 0; j < i; j++ {
		w := args[j]
		if v, ok := set[w]; ok && j+1 < i {
			out = append(out, w, v)
			delete(set, w)
			j++
			continue
		}
		if w == "--no-store" || strings.HasPrefix(w, "--price") {
			continue
		}
		if w == "--db" {
			j++
			continue
		}
		out = append(out, w)
	}
	for _, f := range []string{"--reps", "--settle"} {
		if v, ok := set[f]; ok {
			out = append(out, f, v)
		}
	}
	out = append(out, "--db", db, "--price=false", "--")
	cmd := args[i+1:]
	if len(cmd) < 2 || cmd[0] != "ctxlab" || cmd[1] != "workload" {
		return append(out, "sleep", "0.05")
	}
	out = append(out, os.Args[0])
	small := map[string]string{"--ws": "256KiB", "--elements": "2000000"}
	for j := 1; j < len(cmd); j++ {
		if v, ok := small[cmd[j]]; ok && j+1 < len(cmd) {
			out = append(out, cmd[j], v)
			delete(small, cmd[j])
			j++
			continue
		}
		out = append(out, cmd[j])
	}
	for _, f := range []string{"--ws", "--elements"} {
		if v, ok := small[f]; ok {
			out = append(out, f, v)
		}
	}
	return out
}

// watchForm points a watch example at pid and bounds it.
func watchForm(args []string, pid int) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--name":
			out = append(out, w, "^sleep$")
			i++
		case w == "--interval" || w == "--count":
			i++
		case (w == "$$" || regexp.MustCompile(`^[0-9]+$`).MatchString(w)) && i > 0 && !strings.HasPrefix(args[i-1], "--"):
			out = append(out, strconv.Itoa(pid))
		default:
			out = append(out, w)
		}
	}
	return append(out, "--interval", "100ms", "--count", "2")
}

// runExample runs this test binary as ctxlab in dir, in its own process
// group, and kills that group when it returns.
func runExample(t *testing.T, dir string, env, args []string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	err := cmd.Wait()
	return out.String(), err
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return len(xs) - 1
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// dropFlags removes each named flag and its value (--f v or --f=v) from args.
func dropFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, eq := strings.Cut(args[i], "=")
		if slices.Contains(names, name) {
			if !eq {
				i++
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// The README is a user's guide that fits in 300 lines; measurement
// histories belong in docs/.
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md is %d lines: a user's guide fits in 300; move histories and figures to docs/", n)
	}
}
