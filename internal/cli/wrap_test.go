package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctxlab/ctxlab/internal/report"
	"github.com/ctxlab/ctxlab/internal/result"
)

// longRun has a check and a finding far wider than a terminal.
func longRun() *result.Run {
	detail := strings.Repeat("pingpong/thread/futex/unpinned: 2.00 switches per round trip (1.25 voluntary, 0.75 involuntary) ", 3)
	return &result.Run{Schema: result.SchemaVersion, ID: "20261201T000000-wrap", Time: time.Now().UTC(), Suite: "custom",
		Arms: []result.Arm{{Name: "pingpong/thread/futex/unpinned", Experiment: "pingpong", Substrate: "thread", Mechanism: "futex",
			Op: "round trip", Unit: "ns/op", Placement: "unpinned", Status: result.StatusOK, Ops: 1000, RepMeans: []float64{6000, 6100, 6050},
			Median: 6050, Min: 6000, Max: 6100}},
		Experiments: []result.Experiment{{Name: "pingpong", Op: "round trip",
			Checks:   []result.Check{{Name: "a blocking handoff between OS threads costs about 2 OS switches per round trip (≥ 1.5)", Holds: true, Detail: detail}},
			Findings: []string{"a goroutine channel round trip (408 ns) is 77× cheaper than an OS thread futex round trip (31.2 µs) here, " + detail}}},
	}
}

// On a terminal the tables' long lines wrap at spaces within its width,
// losing no word; off a terminal, and in other formats, nothing changes.
func TestReportWrapsToTerminal(t *testing.T) {
	run := longRun()
	var plain, wrapped bytes.Buffer
	if err := report.Write(&plain, run, "table"); err != nil {
		t.Fatal(err)
	}
	if err := writeReportWidth(&wrapped, run, "table", 80); err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, l := range strings.Split(plain.String(), "\n") {
		if utf8.RuneCountInString(l) > 80 {
			long++
		}
	}
	if long < 2 {
		t.Fatalf("the fixture has %d lines over 80 columns, want the check and the finding", long)
	}
	for _, l := range strings.Split(strings.TrimSuffix(wrapped.String(), "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	if p, w := strings.Join(strings.Fields(plain.String()), " "), strings.Join(strings.Fields(wrapped.String()), " "); p != w {
		t.Fatalf("wrapping changed the words:\n%s\n---\n%s", p, w)
	}
	for _, tc := range []struct {
		format string
		width  int
	}{{"table", 0}, {"json", 80}, {"markdown", 80}} {
		var want, got bytes.Buffer
		report.Write(&want, run, tc.format)
		if err := writeReportWidth(&got, run, tc.format, tc.width); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s at width %d: output changed", tc.format, tc.width)
		}
	}
}
