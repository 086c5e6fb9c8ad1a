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

// compare, budget, report and export need runs of the experiments: after
// a diagnose (a real one, as a user runs it) and a selfcheck were stored,
// their "last" passes over those to the experiments' runs and says which
// run it took; show still takes the latest run of any kind.
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
	s.Close()
	if code, _, errs := run(t, "diagnose", "--db", db, "--price=false", "--format", "table", "--", "true"); code != 0 || !strings.Contains(errs, "stored as run") {
		t.Fatalf("diagnose: exit %d\n%s", code, errs)
	}
	if s, err = store.Open(db); err != nil {
		t.Fatal(err)
	}
	sc := &result.Run{Schema: result.SchemaVersion, ID: "20991206T100001-ssssss", Time: time.Now().UTC(), Suite: result.SuiteSelfcheck}
	if err := s.Save(ctx, sc, store.SourceRun); err != nil {
		t.Fatal(err)
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
		{[]string{"export", "--db", db}, `"id": "` + ids[1] + `"`},
	} {
		code, out, errs := run(t, c.args...)
		if code != 0 || !strings.Contains(errs, note) || !strings.Contains(errs, ids[1]) || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 0, the run it took (%s) named, and %q in:\n%s", c.args, code, errs, ids[1], c.want, out)
		}
	}
	if code, out, _ := run(t, "show", "--db", db, "--format", "json"); code != 0 || !strings.Contains(out, sc.ID) {
		t.Errorf("show: exit %d; want the latest run of any kind, the selfcheck", code)
	}
	if code, out, _ := run(t, "export", sc.ID, "--db", db); code != 0 || !strings.Contains(out, sc.ID) {
		t.Errorf("export ID: exit %d; want the run named, whatever its kind", code)
	}
}
