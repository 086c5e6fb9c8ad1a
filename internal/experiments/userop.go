package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// The user's own operation in hop and concurrency: their SQLite file, a
// read-only query and its arguments (--set db=PATH --set query='…?'
// --set args=range:1..1000), measured every way the built-in lookup is,
// beside it. It is checked when the arms are built, before anything runs.

// userOpName is the op (the middle of the arm name) of the user's query on
// the connection an application makes; userImmutableOpName the same query
// on an immutable connection, measured directly only: what skipping the
// locks and change checks would save.
const (
	userOpName          = "user"
	userImmutableOpName = "user-immutable"
)

// userConn is the connection an op of the user's query is measured on.
func userConn(op string) sqlop.Conn {
	if op == userImmutableOpName {
		return sqlop.ConnImmutable
	}
	return sqlop.ConnApp
}

func init() {
	applies := func(a exp.Arm) bool {
		e := exp.ExperimentOf(a.Name)
		return e == "hop" || e == "concurrency"
	}
	for _, o := range []exp.Declared{userDBOpt, userQueryOpt, userPyCallOpt, userPyPathOpt, userArgsOpt, userShmOpt} {
		exp.RegisterArmOption(o, applies)
	}
}

// The user's --set options. Each value is checked alone here; how they
// go together (db with query, py-path with py-call) and what the file
// and query are is checked when the arms are built (userOp, userPyCall).
var (
	userDBOpt  = exp.StringOption("db", "hop, concurrency: your SQLite database file, opened as an application opens it but read-only (never written); with query and args")
	userShmOpt = &exp.Option[string]{Key: "db-shm", Doc: "hop, concurrency: a WAL database's -wal and -shm: read-only (default: both must exist, nothing beside db is written) or write (SQLite may create and update them, as every application's connection does)",
		Parse: func(v string) (string, error) {
			if !slices.Contains(sqlop.ShmModes, v) {
				return "", fmt.Errorf("--set db-shm=%s: want one of %s", v, strings.Join(sqlop.ShmModes, ", "))
			}
			return v, nil
		}}
	userQueryOpt  = exp.StringOption("query", "hop, concurrency: your read-only query (SELECT or WITH) with one ? per call, run on db")
	userPyCallOpt = &exp.Option[string]{Key: "py-call", Doc: "hop, concurrency: your Python function module:function, called with no arguments or with each of args",
		Parse: func(fn string) (string, error) {
			mod, name, found := strings.Cut(fn, ":")
			if !found || !pyModuleRe.MatchString(mod) || !pyNameRe.MatchString(name) {
				return "", fmt.Errorf("--set py-call=%s: want module:function (e.g. mylib.pricing:quote)", fn)
			}
			return fn, nil
		}}
	userPyPathOpt = &exp.Option[string]{Key: "py-path", Doc: "hop, concurrency: a directory put first on sys.path for py-call",
		Parse: func(dir string) (string, error) {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return "", fmt.Errorf("--set py-path=%s: %v", dir, err)
			}
			if st, err := os.Stat(abs); err != nil || !st.IsDir() {
				return "", fmt.Errorf("--set py-path=%s: not a directory", dir)
			}
			return abs, nil
		}}
	userArgsOpt = &exp.Option[[]any]{Key: "args", Doc: "hop, concurrency: the query's arguments, range:A..B or file:PATH (one value per line), one per call in turn",
		Parse: func(a string) ([]any, error) {
			args, err := sqlop.ParseArgs(a)
			if err != nil {
				return nil, fmt.Errorf("--set args=%s: %v", a, err)
			}
			return args, nil
		}}
)

// userOp is the user's operation of the run, nil when none was given; an
// error (bad file, query or args) is a usage error: nothing has started.
func userOp(p exp.Params) (*sqlop.UserOp, error) {
	db, dbOK := userDBOpt.Get(p)
	q, qOK := userQueryOpt.Get(p)
	a, aOK := p.Options.Text(userArgsOpt.Key) // CheckUser reads them with the query
	shm, shmOK := userShmOpt.Get(p)
	if !dbOK && !qOK {
		if shmOK {
			return nil, fmt.Errorf("--set db-shm=%s needs --set db=PATH and query", shm)
		}
		if _, call := userPyCallOpt.Get(p); call || !aOK {
			return nil, nil // args alone are py-call's
		}
	}
	return sqlop.CheckUser(db, q, a, shm)
}

// userOps reads both of the user's operations, the query and the
// function: an error in either refuses the run.
func userOps(p exp.Params) (*sqlop.UserOp, *pyCall, error) {
	u, err := userOp(p)
	if err != nil {
		return nil, nil, err
	}
	c, err := userPyCall(p)
	return u, c, err
}

// userParams marks an arm's params as the user's query on connection c:
// query=user, conn (app or immutable), the file's base name and size, and
// how many arguments it cycles through.
func userParams(params map[string]string, u *sqlop.UserOp, c sqlop.Conn) {
	params["query"] = "user"
	params["conn"] = c.Name()
	if w := u.WALMode(); w != "" {
		params["db-wal"] = w
	}
	params["db-file"] = u.Base()
	params["db-bytes"] = strconv.FormatInt(u.Size, 10)
	params["args"] = strconv.Itoa(len(u.Args))
}

// userPyArms are the CPython arms of the user's query on connection c for
// bench: one per way (how), named by name(how). The driver gets the file's
// URI (the one Go opens for c), the query and the arguments (as JSON); the
// stored params say only query=user, the connection, the file's name and
// size. A query without parameters has no CPython arms that run: the
// driver binds one argument per call.
func userPyArms(u *sqlop.UserOp, c sqlop.Conn, bench string, hows []string, name func(string) exp.ArmKey) []pyArm {
	args, _ := json.Marshal(u.Args)
	var out []pyArm
	for _, how := range hows {
		params := map[string]string{"how": how, "db": "user"}
		userParams(params, u, c)
		pa := pyArm{key: name(how), sub: "pytask", mech: how, op: userOpText(u, c), bench: bench, params: params,
			driverOnly: map[string]string{"uri": u.DSN(c), "query": u.Query, "args": string(args)},
			place:      "unpinned", quick: true}
		if u.Args == nil {
			pa.unsup = "the CPython arms bind one argument per call: give the query a ? and --set args"
		}
		out = append(out, pa)
	}
	return out
}

// userOpText is the op a row of the user's query shows: the query, the
// file, and, on the immutable connection, that it is.
func userOpText(u *sqlop.UserOp, c sqlop.Conn) string {
	if c == sqlop.ConnImmutable {
		return u.Op() + ", immutable"
	}
	return u.Op()
}

// pyCall is the user's own Python function (--set py-call=module:function,
// --set py-path=DIR), called with the args source's values (or none).
type pyCall struct {
	fn, path string
	args     []any
	once     sync.Once
	err      error
}

var (
	pyModuleRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	pyNameRe   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// userPyCall reads py-call, py-path and args; nil when py-call is not
// given. What needs Python (the import) is checked later, by check.
func userPyCall(p exp.Params) (*pyCall, error) {
	fn, ok := userPyCallOpt.Get(p)
	dir, dirOK := userPyPathOpt.Get(p)
	if !ok {
		if dirOK {
			given, _ := p.Options.Text(userPyPathOpt.Key)
			return nil, fmt.Errorf("--set py-path=%s needs --set py-call=module:function", given)
		}
		return nil, nil
	}
	c := &pyCall{fn: fn, path: dir}
	c.args, _ = userArgsOpt.Get(p)
	return c, nil
}

// pyCallCheck imports the module on the run's interpreter and finds the
// function callable; a failure names the last line of the traceback.
const pyCallCheck = `import importlib, sys
mod, _, name = sys.argv[1].partition(":")
if sys.argv[2]:
    sys.path.insert(0, sys.argv[2])
f = getattr(importlib.import_module(mod), name)
if not callable(f):
    raise TypeError("%s is %s, not a function" % (sys.argv[1], type(f).__name__))
`

func (c *pyCall) check(ctx context.Context, in *pydriver.Interpreter) error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// The user's module runs: through launch, so nothing it starts
		// outlives ctxlab.
		stdout, stderr, err := launch.Output(ctx, launch.Spec{Path: in.Path, Args: []string{in.Path, "-c", pyCallCheck, c.fn, c.path}})
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("stopped: %v (30 s at most)", err)
			}
			last := strings.TrimSpace(string(stdout) + string(stderr))
			if i := strings.LastIndexByte(last, '\n'); i >= 0 {
				last = last[i+1:]
			}
			if last == "" {
				last = err.Error()
			}
			c.err = fmt.Errorf("--set py-call=%s: %s (with %s)", c.fn, last, in.Path)
		}
	})
	return c.err
}

// pyCallArms are the CPython arms of the user's function for bench, one
// per way (how), named by name(how).
func pyCallArms(c *pyCall, bench string, hows []string, name func(string) exp.ArmKey) []pyArm {
	args, _ := json.Marshal(c.args)
	if c.args == nil {
		args = []byte("[]")
	}
	var out []pyArm
	for _, how := range hows {
		params := map[string]string{"how": how, "op": "py-call", "py-call": c.fn, "args": strconv.Itoa(len(c.args))}
		out = append(out, pyArm{key: name(how), sub: "pytask", mech: how, op: "your function " + c.fn + "()",
			bench: bench, params: params, place: "unpinned", quick: true, check: c.check,
			driverOnly: map[string]string{"func": c.fn, "path": c.path, "args": string(args)}})
	}
	return out
}

// userVerdictLines lead hop's verdict with the user's own operation
// (userReadings, indented as the verdict's lines are).
func userVerdictLines(v *exp.VerdictRun) []string {
	var out []string
	for _, l := range userReadings(v.Where("hop", func(result.Arm) bool { return true })) {
		out = append(out, "  "+l)
	}
	return out
}

// userReadings say, for the user's own operation among hop's measured
// arms, its direct figure and its slowest wrapper's, and which of the two
// is the workload ("your query: direct 12 µs; through aiosqlite 240 µs
// (20×): the hops are the workload"). They lead hop's readings.
func userReadings(arms []result.Arm) []string {
	var out []string
	pick := func(test func(result.Arm) bool) (result.Arm, bool) {
		for _, a := range arms {
			if a.Status == result.StatusOK && a.Median > 0 && test(a) {
				return a, true
			}
		}
		return result.Arm{}, false
	}
	measured := indexArms(arms, func(a result.Arm) bool { return a.Status == result.StatusOK && a.Median > 0 })
	line := func(what string, d, w result.Arm, through string) {
		r := w.Median / d.Median
		reading := "the hops are the workload"
		switch {
		case w.Median <= d.Median:
			reading = "the hops measured no cost above the direct call here (within the noise)"
		case w.Median-d.Median < d.Median:
			reading = "your operation is the workload; the hops add " + result.FormatNs(w.Median-d.Median)
		}
		times := fmt.Sprintf("%.0f×", r)
		if r < 1.5 {
			times = fmt.Sprintf("%.2f×", r)
		}
		out = append(out, fmt.Sprintf("%s: direct %s; through %s %s (%s): %s", what, result.FormatNs(d.Median), through, result.FormatNs(w.Median), times, reading))
	}
	// CPython: the query (aiosqlite, else the two-hop wrapper, else one
	// executor hop) and the function (to_thread, else run_in_executor,
	// else the two-hop wrapper).
	for _, c := range []struct {
		what string
		key  func(how string) exp.ArmKey
		ways []struct{ how, label string }
	}{
		{"your query (CPython)", hopPyUserKey, []struct{ how, label string }{{"aiosqlite", "aiosqlite"}, {"two-hop", "a two-hop wrapper"}, {"executor", "run_in_executor"}}},
		{"your function (CPython)", hopPyCallKey, []struct{ how, label string }{{"to_thread", "asyncio.to_thread"}, {"executor", "run_in_executor"}, {"two-hop", "a two-hop wrapper"}}},
	} {
		d, ok := measured.get(c.key("direct"))
		if !ok {
			continue
		}
		for _, w := range c.ways {
			if a, ok := measured.get(c.key(w.how)); ok {
				line(c.what, d, a, w.label)
				break
			}
		}
	}
	out = append(out, userConnReadings(arms, measured)...)
	// Go: the query through a hop to a locked thread, at the last GOMAXPROCS measured.
	var t result.Arm
	for _, a := range arms {
		if a.Status == result.StatusOK && a.Params["op"] == userOpName && a.Params["way"] == "thread" && !isCPython(a) {
			t = a
		}
	}
	goDirect := func(op string, g int) (result.Arm, bool) {
		return pick(func(a result.Arm) bool {
			return a.Params["op"] == op && a.Params["way"] == "direct" && a.GOMAXPROCS == g && !isCPython(a)
		})
	}
	if t.Name != "" {
		what := fmt.Sprintf("your query (Go, GOMAXPROCS=%d)", t.GOMAXPROCS)
		if d, ok := goDirect(userOpName, t.GOMAXPROCS); ok {
			line(what, d, t, "a thread hop")
			if i, ok := goDirect(userImmutableOpName, t.GOMAXPROCS); ok {
				out = append(out, immutableReading(what, d, i))
			}
		}
	}
	return out
}

// userConnReadings name the connection the user's query was measured on,
// once, and set CPython's direct call on it beside the immutable one.
func userConnReadings(arms []result.Arm, measured armIndex) []string {
	var out []string
	for _, a := range arms {
		if a.Params["query"] == "user" && a.Params["conn"] == "app" {
			out = append(out, "your query's connection: "+sqlop.ConnAbout(sqlop.ConnApp, a.Params["db-wal"]))
			break
		}
	}
	if d, ok := measured.get(hopPyUserKey("direct")); ok {
		if i, ok := measured.get(hopPyUserImmutableKey("direct")); ok {
			out = append(out, immutableReading("your query (CPython)", d, i))
		}
	}
	return out
}

// immutableReading sets the user's query on the application's connection
// beside the same query on an immutable one: the share of each query that
// SQLite's locks and change checks take.
func immutableReading(what string, app, imm result.Arm) string {
	saved := app.Median - imm.Median
	if saved <= 0 {
		return fmt.Sprintf("%s: as an application connects %s a query; immutable %s: the locks and change checks cost nothing measurable here",
			what, result.FormatNs(app.Median), result.FormatNs(imm.Median))
	}
	return fmt.Sprintf("%s: as an application connects %s a query; immutable %s: SQLite's locks and change checks are %s (%.0f%%) of each query, "+
		"what an immutable connection (or one read transaction across queries) would save",
		what, result.FormatNs(app.Median), result.FormatNs(imm.Median), result.FormatNs(saved), 100*saved/app.Median)
}
