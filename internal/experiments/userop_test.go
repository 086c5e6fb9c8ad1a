package experiments

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// shopDB is a user's database made by the test (never shipped): 2 000
// orders keyed by order_id.
func shopDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"create table orders (order_id integer primary key, customer text, total real)",
		"with recursive n(i) as (select 1 union all select i + 1 from n where i < 2000) insert into orders select i, 'c' || (i % 17), i * 1.5 from n",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

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
	path := shopDB(t)
	before, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)
	want := map[string]bool{
		"hop/user/direct/gomaxprocs=all": true, "hop/user/goroutine/gomaxprocs=all": true,
		"hop/user/thread/gomaxprocs=all": true, "hop/user/thread-2hop/gomaxprocs=all": true,
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
			if !strings.Contains(a.Name, "/user/") || a.Substrate == "pytask" || a.Substrate == "pythread" {
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
			r := runner.Arm(context.Background(), cfg, spec, a)
			if r.Status != result.StatusOK {
				t.Errorf("%s: %s (%s)", a.Name, r.Status, r.Reason)
			}
		}
	}
	for n := range want {
		t.Errorf("no arm %s", n)
	}
	after, _ := os.ReadFile(path)
	st1, _ := os.Stat(path)
	if !bytes.Equal(before, after) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Errorf("the user's database changed: %d → %d bytes, mtime %v → %v", len(before), len(after), st0.ModTime(), st1.ModTime())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("files beside the user's database after the run: %v", ents)
	}
}

// A bad user operation refuses the arms of hop and concurrency: a usage
// error, before anything opens.
func TestUserQueryRefused(t *testing.T) {
	path := shopDB(t)
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
	const py = "/usr/bin/python3"
	if _, err := pydriver.Resolve(py); err != nil {
		t.Skipf("no usable %s: %v", py, err)
	}
	defer pydriver.CloseAll()
	path := shopDB(t)
	before, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)
	cfg := runner.ForSuite(exp.SuiteQuick)
	cfg.Host = sysinfo.Detect()
	cfg.Reps, cfg.BenchTime, cfg.WarmUp = 1, 20*time.Millisecond, 10*time.Millisecond
	ran := 0
	for _, name := range []string{"hop", "concurrency"} {
		spec, _ := exp.Lookup(name)
		p := pyParams(exp.SuiteDefault)
		p.Python, p.Extra = py, userExtra(path)
		arms, err := spec.Arms(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arms {
			if !strings.Contains(a.Name, "/user/") || (a.Substrate != "pytask" && a.Substrate != "pythread") {
				continue
			}
			r := runner.Arm(context.Background(), cfg, spec, a)
			if r.Status == result.StatusUnsupported && strings.HasSuffix(a.Name, "/aiosqlite") {
				t.Logf("%s: %s", a.Name, r.Reason)
				continue
			}
			if r.Status != result.StatusOK || r.Params["query"] != "user" || r.Params["path"] != "" {
				t.Errorf("%s: %s (%s), params %v; want ok, query=user and no path stored", a.Name, r.Status, r.Reason, r.Params)
			}
			ran++
		}
	}
	if ran < 3+6 {
		t.Errorf("%d CPython arms of the user's query ran; want direct, executor, two-hop and 6 concurrency arms at least", ran)
	}
	after, _ := os.ReadFile(path)
	st1, _ := os.Stat(path)
	if !bytes.Equal(before, after) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Errorf("the user's database changed: %d → %d bytes, mtime %v → %v", len(before), len(after), st0.ModTime(), st1.ModTime())
	}
}
