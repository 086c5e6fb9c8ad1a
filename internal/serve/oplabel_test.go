package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// TestOpLabelsOfEveryArm pins the "op" label of every arm the registered
// experiments plan for the full suite (testdata/oplabels.golden, one
// "arm<TAB>label" per line): a Prometheus label is part of every query and
// alert written against it, so no rewording of an op's description, and no
// refactoring, may rename one. go test -update rewrites the file.
func TestOpLabelsOfEveryArm(t *testing.T) {
	if len(exp.All()) == 0 {
		t.Skip("no experiments linked into this test binary")
	}
	p := exp.Params{Suite: exp.SuiteFull, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}
	var b bytes.Buffer
	n := 0
	for _, s := range exp.All() {
		arms, err := s.Arms(p)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		for _, a := range arms {
			op := a.Op
			if op == "" {
				op = s.Op
			}
			r := result.Arm{Name: a.Name, Experiment: s.Name, Substrate: a.Substrate, Mechanism: a.Mechanism, Op: op}
			v := latencyValues(&r)
			fmt.Fprintf(&b, "%s\t%s\n", a.Name, v[len(v)-1])
			n++
		}
	}
	if n < 300 {
		t.Fatalf("only %d arms planned: is the registry complete?", n)
	}
	path := filepath.Join("testdata", "oplabels.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("op labels differ from %s (go test -update rewrites it):\n%s", path, lineDiff(string(want), b.String()))
	}
}
