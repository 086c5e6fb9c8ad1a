package pydriver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/sqlop"
)

// The driver's hop and concurrency lookup is the seed's, as Go's is: the
// same statement text as sqlop.Query, a 1 000-row table, and one search of
// the integer primary key (EXPLAIN QUERY PLAN), run by the interpreter.
func TestDriverLookupIsTheSeeds(t *testing.T) {
	in := realPython(t)
	script := filepath.Join(t.TempDir(), "driver.py")
	if err := os.WriteFile(script, []byte(Source), 0o600); err != nil {
		t.Fatal(err)
	}
	check := `import runpy, sqlite3, sys
g = runpy.run_path(sys.argv[1], run_name="ctxlab_driver")
c = sqlite3.connect(":memory:")
g["make_db"](c)
print(g["SQL"])
print(c.execute("select count(*) from t").fetchone()[0])
print(len(c.execute("select name from sqlite_master where type = 'index'").fetchall()))
for row in c.execute("explain query plan " + g["SQL"], (1,)):
    print(row[-1])
op = g["LookupOp"]("sqlite-file")
print(op.lookup(1000)[0])
op.close()
`
	out, err := exec.Command(in.Path, "-c", check, script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{sqlop.Query, "1000", "0", "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)", "value 1000"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("driver's lookup:\n%s\nwant (statement, rows, indexes, plan, row 1000):\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
