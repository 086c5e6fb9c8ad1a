package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/store"
)

// compare, budget and report need runs of the experiments: after a
// diagnose --vary and a selfcheck were stored, their "last" passes over
// those to the experiments' runs and says which run it took; show and
// export still take the latest run of any kind.
func TestLastCountsTheKindACommandNeeds(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "h.db")
	s, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"quick.json", "quick2.json"} {
		f, err := os.Open(filepath.Join("..", "report", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		run, err := store.ReadRun(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, run, store.SourceRun); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	now := time.Now().UTC()
	for _, r := range []struct{ id, suite string }{{"20261206T100000-dddddd", result.SuiteDiagnose}, {"20261206T100001-ssssss", result.SuiteSelfcheck}} {
		run := &result.Run{Schema: result.SchemaVersion, ID: r.id, Time: now, Suite: r.suite}
		if err := s.Save(ctx, run, store.SourceRun); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	note := "counting each run of the experiments only"
	for _, c := range []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"compare", "--db", db}, ""},
		{[]string{"budget", "--rate", "10000/s", "--db", db}, ids[1]},
		{[]string{"report", "--db", db, "-o", filepath.Join(t.TempDir(), "r.html")}, ""},
	} {
		code, out, errs := run(t, c.args...)
		if code != 0 || !strings.Contains(errs, note) || !strings.Contains(errs, ids[1]) || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 0, the run it took (%s) named, and %q in:\n%s", c.args, code, errs, ids[1], c.want, out)
		}
	}
	if code, out, _ := run(t, "export", "--db", db); code != 0 || !strings.Contains(out, "20261206T100001-ssssss") {
		t.Errorf("export: exit %d; want the latest run of any kind, the selfcheck", code)
	}
}
