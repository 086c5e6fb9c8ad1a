package experiments

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sqlop"
	"github.com/ctxlab/ctxlab/internal/sqlop/sqloptest"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/testload"
)

func userExtra(path string) map[string]string {
	return map[string]string{"db": path, "query": "select customer, total from orders where order_id = ?", "args": "range:1..2000"}
}

// The user's query runs through every way hop and concurrency measure (Go
// arms here; CPython's in TestUserQueryCPython), each arm says it is the
// user's query, and the file is byte-identical, mtime too, afterwards.
func TestUserQueryEveryWayReadOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the runner over 10 arms")
	}
	path := sqloptest.ShopDB(t, 2000)
	before := sqloptest.Snapshot(path)
	want := map[string]bool{
		"hop/user/direct/gomaxprocs=all": true, "hop/user/goroutine/gomaxprocs=all": true,
		"hop/user/thread/gomaxprocs=all": true, "hop/user/thread-2hop/gomaxprocs=all": true, "hop/user-immutable/direct/gomaxprocs=all": true,
		"concurrency/user/sem/c=1": true, "concurrency/user/sem/c=10": true, "concurrency/user/sem/c=50": true,
		"concurrency/user/threadpool-n6/c=1": true, "concurrency/user/threadpool-n6/c=10": true, "concurrency/user/threadpool-n6/c=50": true,
	}
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.BenchTime, cfg.Reps, cfg.Timeout = 20*time.Millisecond, 1, 30*time.Second
	for _, name := range []string{"hop", "concurrency"} {
		spec, _ := exp.Lookup(name)
		p := hopParams(exp.SuiteQuick, userExtra(path))
		p.Python = "/nonexistent/python3" // the Go arms only
		arms, err := spec.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			if !isUserArm(a.Name) || a.Substrate == "pytask" || a.Substrate == "pythread" {
				continue
			}
			if !want[a.Name] {
				t.Errorf("unexpected arm %s", a.Name)
				continue
			}
			delete(want, a.Name)
			if !a.Quick || a.Params["query"] != "user" || a.Params["db-file"] != "shop.db" || !strings.Contains(a.Op, "select customer, total") || !strings.Contains(a.Op, "KiB") {
				t.Errorf("%s: quick %v, params %v, op %q; want the user's query named, shortened, with the file's size", a.Name, a.Quick, a.Params, a.Op)
			}
			if imm := strings.Contains(a.Name, "/user-immutable/"); imm != (a.Params["conn"] == "immutable") || imm != strings.HasSuffix(a.Op, ", immutable") {
				t.Errorf("%s: conn=%q, op %q; want the connection named", a.Name, a.Params["conn"], a.Op)
			}
			w := testload.Start()
			r := runner.Arm(context.Background(), cfg, spec, a)
			if r.Status == result.StatusTooFewOps {
				if starved, why := w.Starved(); starved {
					t.Logf("%s: too few ops on a busy machine, not counted: %s (%s)", a.Name, r.Reason, why)
					continue
				}
			}
			if r.Status != result.StatusOK {
				t.Errorf("%s: %s (%s)", a.Name, r.Status, r.Reason)
			}
		}
	}
	for n := range want {
		t.Errorf("no arm %s", n)
	}
	sqloptest.Same(t, "the user's database", before, sqloptest.Snapshot(path))
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("files beside the user's database after the run: %v", ents)
	}
}

// debianPython is /usr/bin/python3 (where aiosqlite is Debian's package),
// skipping the test without it, and a runner config of short repetitions;
// the interpreter's driver is closed when the test ends.
func debianPython(t *testing.T) (string, runner.Config) {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := pydriver.Resolve(py); err != nil {
		t.Skipf("no usable %s: %v", py, err)
	}
	t.Cleanup(pydriver.CloseAll)
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	cfg.Reps, cfg.BenchTime, cfg.WarmUp = 1, 20*time.Millisecond, 10*time.Millisecond
	return py, cfg
}

func isUserArm(name string) bool {
	return strings.Contains(name, "/user/") || strings.Contains(name, "/user-immutable/")
}

// The driver is handed the connection each CPython arm of the user's query
// names: the application's (mode=ro, no immutable) for every way, the
// immutable one for hop/pytask/user-immutable/direct alone.
func TestUserPyArmsConnections(t *testing.T) {
	path := sqloptest.ShopDB(t, 2000)
	p := pyParams(exp.SuiteDefault)
	p.Options = settings(userExtra(path))
	n := 0
	for _, pa := range hopPyPlan(p) {
		if pa.params["query"] != "user" {
			continue
		}
		n++
		uri := pa.driverOnly["uri"]
		imm := pa.key.String() == hopPyUserImmutableKey("direct").String()
		if !strings.HasPrefix(uri, "file:") || !strings.Contains(uri, "?mode=ro") || strings.Contains(uri, "immutable=1") != imm || (pa.params["conn"] == "immutable") != imm {
			t.Errorf("%s: uri %q, conn %q", pa.key, uri, pa.params["conn"])
		}
	}
	if n != len(hopPyWays)+1 {
		t.Errorf("%d CPython arms of the user's query; want %d ways and the immutable direct one", n, len(hopPyWays)+1)
	}
}

// A bad user operation refuses the arms of hop and concurrency: a usage
// error, before anything opens.
func TestUserQueryRefused(t *testing.T) {
	path := sqloptest.ShopDB(t, 2000)
	for _, name := range []string{"hop", "concurrency"} {
		spec, _ := exp.Lookup(name)
		extra := userExtra(path)
		extra["query"] = "delete from orders where order_id = ?"
		if _, err := spec.Arms(hopParams(exp.SuiteQuick, extra)); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s with a delete: %v; want it refused as not read-only", name, err)
		}
	}
}

// The user's query through CPython's every way (direct, run_in_executor,
// the two-hop wrapper, aiosqlite when importable; ThreadPoolExecutor.map
// and a semaphore with to_thread at each C), end to end through the runner
// on /usr/bin/python3; the file is byte-identical afterwards.
func TestUserQueryCPython(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CPython arms")
	}
	py, cfg := debianPython(t)
	path := sqloptest.ShopDB(t, 2000)
	before := sqloptest.Snapshot(path)
	ran := 0
	for _, name := range []string{"hop", "concurrency"} {
		spec, _ := exp.Lookup(name)
		p := pyParams(exp.SuiteDefault)
		p.Python, p.Options = py, settings(userExtra(path))
		arms, err := spec.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			if !isUserArm(a.Name) || (a.Substrate != "pytask" && a.Substrate != "pythread") {
				continue
			}
			r := runner.Arm(context.Background(), cfg, spec, a)
			if r.Status == result.StatusUnsupported && strings.HasSuffix(a.Name, "/aiosqlite") {
				t.Logf("%s: %s", a.Name, r.Reason)
				continue
			}
			if r.Status != result.StatusOK || r.Params["query"] != "user" || r.Params["uri"] != "" {
				t.Errorf("%s: %s (%s), params %v; want ok, query=user and no URI stored", a.Name, r.Status, r.Reason, r.Params)
			}
			ran++
		}
	}
	if ran < 4+6 {
		t.Errorf("%d CPython arms of the user's query ran; want direct, immutable direct, executor, two-hop and 6 concurrency arms at least", ran)
	}
	sqloptest.Same(t, "the user's database", before, sqloptest.Snapshot(path))
}

// The user's Python function runs every way (direct, to_thread,
// run_in_executor, two-hop; to_thread under a semaphore and
// ThreadPoolExecutor.map at each C); an exception fails the arm with the
// traceback's last line; a module that does not import is refused when
// the interpreter is resolved, before any arm opens.
func TestUserPyCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CPython arms")
	}
	py, cfg := debianPython(t)
	dir := t.TempDir()
	src := "def quote(k):\n    return k * 3\n\ndef boom(k):\n    if k == 7:\n        raise ValueError('no price for item %d' % k)\n    return k\n\ndef hello():\n    return 1\n"
	if err := os.WriteFile(filepath.Join(dir, "pricing.py"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	arms := func(name string, extra map[string]string) []exp.Arm {
		spec, _ := exp.Lookup(name)
		p := pyParams(exp.SuiteDefault)
		p.Python, p.Options = py, settings(extra)
		as, err := spec.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		var out []exp.Arm
		for _, a := range as {
			if strings.Contains(a.Name, "/py-call/") {
				out = append(out, a)
			}
		}
		return out
	}
	for _, c := range []struct {
		name  string
		extra map[string]string
		want  int
	}{
		{"hop", map[string]string{"py-call": "pricing:quote", "py-path": dir, "args": "range:1..100"}, 4},
		{"concurrency", map[string]string{"py-call": "pricing:quote", "py-path": dir, "args": "range:1..100"}, 6},
		{"hop", map[string]string{"py-call": "pricing:hello", "py-path": dir}, 4},
	} {
		spec, _ := exp.Lookup(c.name)
		as := arms(c.name, c.extra)
		if len(as) != c.want {
			t.Errorf("%s %v: %d py-call arms, want %d", c.name, c.extra, len(as), c.want)
		}
		for _, a := range as {
			if err := a.Resolve(context.Background()); err != nil {
				t.Fatalf("%s: resolve: %v", a.Name, err)
			}
			w := testload.Start()
			r := runner.Arm(context.Background(), cfg, spec, a)
			if r.Status == result.StatusTooFewOps {
				if starved, why := w.Starved(); starved {
					t.Logf("%s: too few ops on a busy machine, not counted: %s (%s)", a.Name, r.Reason, why)
					continue
				}
			}
			if r.Status != result.StatusOK || r.Params["py-call"] != c.extra["py-call"] || !strings.Contains(r.Op, c.extra["py-call"]) {
				t.Errorf("%s: %s (%s), params %v, op %q", a.Name, r.Status, r.Reason, r.Params, r.Op)
			}
		}
	}
	spec, _ := exp.Lookup("hop")
	for _, a := range arms("hop", map[string]string{"py-call": "pricing:boom", "py-path": dir, "args": "range:1..100"}) {
		r := runner.Arm(context.Background(), cfg, spec, a)
		if r.Status != result.StatusFailed || !strings.Contains(r.Reason, "ValueError: no price for item 7") {
			t.Errorf("%s over a function that raises: %s (%s); want failed with the traceback's last line", a.Name, r.Status, r.Reason)
		}
	}
	for fn, want := range map[string]string{"nosuch_mod_xyz:f": "ModuleNotFoundError", "pricing:nope": "AttributeError", "pricing:__name__": "not a function"} {
		as := arms("hop", map[string]string{"py-call": fn, "py-path": dir})
		if err := as[0].Resolve(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("py-call=%s: resolve %v; want an error naming %s", fn, err, want)
		}
	}
}

// hop's readings lead with the user's operation: direct against its
// slowest wrapper, and which is the workload.
func TestUserReadingsLead(t *testing.T) {
	arm := func(name, op, way string, ns float64) result.Arm {
		sub := "caller"
		if strings.Contains(name, "pytask") {
			sub = "pytask"
		}
		return result.Arm{Name: name, Experiment: "hop", Substrate: sub, Status: result.StatusOK, Median: ns, GOMAXPROCS: 2,
			Params: map[string]string{"op": op, "way": way}}
	}
	arms := []result.Arm{
		arm("hop/modernc-file/direct/gomaxprocs=all", "modernc-file", "direct", 5000),
		arm("hop/pytask/user/direct", "", "", 12000),
		arm("hop/pytask/user/executor", "", "", 100000),
		arm("hop/pytask/user/aiosqlite", "", "", 240000),
		arm("hop/pytask/py-call/direct", "", "", 900000),
		arm("hop/pytask/py-call/to_thread", "", "", 1000000),
		arm("hop/user/direct/gomaxprocs=all", "user", "direct", 5000),
		arm("hop/user/thread/gomaxprocs=all", "user", "thread", 60000),
	}
	spec, _ := exp.Lookup("hop")
	got := spec.Findings(arms)
	want := []string{
		"your query (CPython): direct 12 µs; through aiosqlite 240 µs (20×): the hops are the workload",
		"your function (CPython): direct 900 µs; through asyncio.to_thread 1 ms (1.11×): your operation is the workload; the hops add 100 µs",
		"your query (Go, GOMAXPROCS=2): direct 5 µs; through a thread hop 60 µs (12×): the hops are the workload",
	}
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("hop's readings start:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The verdict's hop section leads with the same lines.
	sec := hopVerdict(exp.NewVerdictRun(&result.Run{Arms: arms}))[0]
	if len(sec.Lines) < 3 || sec.Lines[0] != "  "+want[0] || sec.Lines[2] != "  "+want[2] {
		t.Errorf("hop's verdict lines:\n%s\nwant them led by:\n%s", strings.Join(sec.Lines, "\n"), strings.Join(want, "\n"))
	}
	// A wrapper that read cheaper than the direct call is noise, not a
	// negative cost; the immutable row reads as what it saves.
	arms[7].Median = 4000
	arms = append(arms, arm("hop/user-immutable/direct/gomaxprocs=all", "user-immutable", "direct", 1000),
		arm("hop/pytask/user-immutable/direct", "", "", 3000))
	arms[1].Params = map[string]string{"query": "user", "conn": "app", "db-wal": "read-only"}
	got = spec.Findings(arms)
	for _, w := range []string{
		"your query's connection: " + sqlop.ConnAbout(sqlop.ConnApp, "read-only"),
		"your query (Go, GOMAXPROCS=2): direct 5 µs; through a thread hop 4 µs (0.80×): the hops measured no cost above the direct call here (within the noise)",
		"your query (Go, GOMAXPROCS=2): as an application connects 5 µs a query; immutable 1 µs: SQLite's locks and change checks are 4 µs (80%) of each query, what an immutable connection (or one read transaction across queries) would save",
		"your query (CPython): as an application connects 12 µs a query; immutable 3 µs: SQLite's locks and change checks are 9 µs (75%) of each query, what an immutable connection (or one read transaction across queries) would save",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("hop's readings lack %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if got := spec.Findings(arms[:1]); len(got) > 0 && strings.HasPrefix(got[0], "your") {
		t.Errorf("a run without the user's operation reads %q", got[0])
	}
}

// walWriter is an application that has a WAL database open: a CPython
// process that commits row 2001 to the -wal only, says ready, and holds
// the database open until its standard input closes.
const walWriter = `import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("pragma journal_mode=wal"); c.execute("pragma wal_autocheckpoint=0"); c.execute("pragma wal_checkpoint(truncate)")
c.execute("insert into orders values (2001, 'only in the wal', 1.0)")
print("ready", flush=True)
sys.stdin.read()
`

// The CPython arms read a WAL database with its WAL while the application
// that wrote it has it open: the query, which fails (malformed JSON) where
// row 2001 is missing, runs on the application's connection and fails on
// the immutable one, which reads the database file alone; the database,
// -wal and -shm are byte-identical afterwards, mtimes too.
func TestUserQueryCPythonWAL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs CPython arms")
	}
	py, cfg := debianPython(t)
	path := sqloptest.ShopDB(t, 2000)
	w := exec.Command(py, "-c", walWriter, path)
	stdin, _ := w.StdinPipe()
	out, _ := w.StdoutPipe()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); w.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the writer: %q, %v", line, err)
	}
	files := []string{path, path + "-wal", path + "-shm"}
	before := sqloptest.Snapshot(files...)
	spec, _ := exp.Lookup("hop")
	p := pyParams(exp.SuiteDefault)
	p.Python = py
	p.Options = settings(map[string]string{"db": path, "args": "range:2001..2001",
		"query": "select json(coalesce((select '1' from orders where order_id = ?), '{bad'))"})
	arms, err := spec.Arms(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{hopPyUserKey("direct").String(): result.StatusOK, hopPyUserImmutableKey("direct").String(): result.StatusFailed}
	for _, a := range arms {
		st, ok := want[a.Name]
		if !ok {
			continue
		}
		delete(want, a.Name)
		r := runner.Arm(context.Background(), cfg, spec, a)
		if r.Status != st || (st == result.StatusFailed && !strings.Contains(r.Reason, "malformed JSON")) {
			t.Errorf("%s: %s (%s); want %s", a.Name, r.Status, r.Reason, st)
		}
	}
	if len(want) > 0 {
		t.Errorf("no arms %v", want)
	}
	sqloptest.Same(t, "the WAL database", before, sqloptest.Snapshot(files...))
}
