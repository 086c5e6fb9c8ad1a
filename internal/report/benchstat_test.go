package report

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/perf/benchunit"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The real benchstat (pinned in go.mod as a tool) reads two runs in the
// bench format: no table has a single sample (n=1), and every unit is one
// benchstat parses and tidies (sec/op, B/op or x/op).
func TestBenchstatOnTwoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchstat")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run the benchstat tool")
	}
	dir := t.TempDir()
	a := loadQuick(t)
	b := loadQuick(t)
	b.ID += "-b"
	for i := range b.Arms { // a second run, 5% slower throughout
		for j := range b.Arms[i].RepMeans {
			b.Arms[i].RepMeans[j] *= 1.05
		}
	}
	var files []string
	for i, r := range []*result.Run{a, b} {
		name := []string{"a.txt", "b.txt"}[i]
		var buf bytes.Buffer
		if err := Bench(&buf, r); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	cmd := exec.Command("go", append([]string{"tool", "benchstat", "-format", "csv"}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("benchstat: %v\n%s", err, stderr.String())
	}
	text := string(out)
	if strings.Contains(stderr.String(), "parsing") || strings.Contains(stderr.String(), "syntax") {
		t.Errorf("benchstat complained:\n%s", stderr.String())
	}
	if regexp.MustCompile(`\bn=1\b`).MatchString(text) {
		t.Errorf("a table has n=1:\n%s", text)
	}
	// In CSV every table has a header row ",unit,CI,unit,CI,vs base,P".
	units := regexp.MustCompile(`(?m)^,([^,\n]+),CI,`).FindAllStringSubmatch(text, -1)
	if len(units) == 0 {
		t.Fatalf("no unit header in benchstat's output:\n%s", text)
	}
	for _, u := range units {
		unit := strings.TrimSpace(u[1])
		if _, tidied := benchunit.Tidy(1, unit); tidied != unit || !strings.Contains(unit, "/op") {
			t.Errorf("unit %q is not a tidy x/op unit", unit)
		}
	}
	if !strings.Contains(text, "sec/op") {
		t.Errorf("no sec/op table:\n%s", text)
	}
}
