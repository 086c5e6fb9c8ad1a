package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"10000/s": 1e4, "10k/s": 1e4, "2.5M/s": 2.5e6, "1_000/s": 1000, " 7/s": 7} {
		got, err := parseRate(in)
		if err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10000", "0/s", "-1/s", "NaN/s", "Inf/s", "2e9/s", "k/s", "10/min"} {
		_, err := parseRate(in)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("parseRate(%q): %v, want a usage error", in, err)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10000/s", "10k/s", "1M/s", "x/s", "0/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRate(s)
		if err == nil && !(v > 0 && v <= maxRate) {
			t.Fatalf("parseRate(%q) = %v without error", s, v)
		}
	})
}

// budget prices CPU time, not wall time: a cross-CPU round trip of 200 µs
// that spends 20 µs on a CPU costs 20% of a core at 10 000/s, not 200%.
func TestBudgetUsesCPUTime(t *testing.T) {
	cpu := 20000.0
	run := &result.Run{Schema: 1, ID: "r1", Arms: []result.Arm{
		{Name: "pingpong/thread/futex/cross-cpu", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: result.StatusOK, Unit: "ns/op", Median: 200000, CPUNsPerOp: &cpu},
		{Name: "pingpong/thread/futex/same-cpu", Experiment: "pingpong", Substrate: "thread", Op: "round trip", Status: result.StatusOK, Unit: "ns/op", Median: 7000},
	}}
	var b bytes.Buffer
	if err := writeBudget(&b, run, 10000, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"pingpong/thread/futex/cross-cpu  20 µs", "20%", "CPU time of all participants", "thread 20% (thread/futex/cross-cpu)", "not priced: 1 matching arms"} {
		if !strings.Contains(out, want) {
			t.Errorf("budget output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "200%") {
		t.Errorf("budget priced wall time:\n%s", out)
	}
	// Without any CPU time the wall-time fallback says so.
	b.Reset()
	run.Arms = run.Arms[1:]
	if err := writeBudget(&b, run, 10000, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "priced by WALL time") {
		t.Errorf("wall-time fallback not said:\n%s", b.String())
	}
}
