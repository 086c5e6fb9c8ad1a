package serve

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func TestParseCPUStat(t *testing.T) {
	for _, tc := range []struct {
		file string
		want CPUStat
	}{
		{"testdata/cgroup/v1/cpu.stat", CPUStat{NrPeriods: 1200, NrThrottled: 37, ThrottledSeconds: 4.5}},
		{"testdata/cgroup/v2/cpu.stat", CPUStat{NrPeriods: 800, NrThrottled: 12, ThrottledSeconds: 0.25}},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseCPUStat(b); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.file, got, tc.want)
		}
	}
	if got := parseCPUStat([]byte("garbage\nnr_periods x\n\n")); got != (CPUStat{}) {
		t.Errorf("garbage parsed as %+v", got)
	}
}

func TestQuota(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"max 100000", 0, false}, {"50000 100000", 0.5, true}, {"150000", 1.5, true}, {"", 0, false}, {"x 1", 0, false}, {"NaN 100000", 0, false}, {"Inf 100000", 0, false}} {
		got, ok := parseCPUMax([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if q, ok := readQuota("testdata/cgroup/v2", 2); !ok || q != 1.5 {
		t.Errorf("v2 quota = %v, %v; want 1.5", q, ok)
	}
	if q, ok := readQuota("testdata/cgroup/v1", 1); !ok || q != 0.5 {
		t.Errorf("v1 quota = %v, %v; want 0.5", q, ok)
	}
}

func TestHostCollectorUnsupported(t *testing.T) {
	h := NewHostCollector("testdata/proc", "", 0, nil)
	if h.Unsupported["cgroup_throttling"] == "" || h.Unsupported["migrations"] == "" {
		t.Errorf("want reasons for the missing cgroup and migrations, got %v", h.Unsupported)
	}
	if _, bad := h.Unsupported["stat"]; bad {
		t.Errorf("stat fixture reported unsupported: %v", h.Unsupported["stat"])
	}
}

func TestBudgetShrinksGrowsAndSpreads(t *testing.T) {
	// 1% of one core over 60 s, two probes: 0.27 CPU-s each.
	b := newBudget(0.01, time.Minute, []string{"a", "b"})
	now := time.Unix(1000, 0)
	b.now, b.start = func() time.Time { return now }, now
	if got, want := b.perCycle, probeShare*0.6; abs(got-want) > 1e-12 {
		t.Fatalf("perCycle = %v, want %v", got, want)
	}
	if abs(b.share-b.perCycle/2) > 1e-12 {
		t.Fatalf("share = %v, want half of %v", b.share, b.perCycle)
	}
	a := b.probes["a"]
	start := a.benchTime
	if start < minBenchTime || start > maxBenchTime {
		t.Fatalf("first size %v outside [%v, %v]", start, minBenchTime, maxBenchTime)
	}
	// Over its share: shrinks, and says so.
	if !b.observe("a", 2*b.share) {
		t.Error("a run at twice the share was not reported over budget")
	}
	if a.benchTime >= start {
		t.Errorf("over budget: size %v did not shrink from %v", a.benchTime, start)
	}
	// Far under: grows, at most 2×.
	prev := a.benchTime
	if b.observe("a", b.share/100) {
		t.Error("a cheap run was reported over budget")
	}
	if a.benchTime <= prev || a.benchTime > 2*prev {
		t.Errorf("under budget: size %v, want in (%v, %v]", a.benchTime, prev, 2*prev)
	}
	// At the smallest size and still 3× over: it runs every 3rd cycle.
	a.benchTime = minBenchTime
	b.observe("a", 3*b.share)
	if a.every != 3 {
		t.Fatalf("every = %d, want 3", a.every)
	}
	var ran int
	for i := 0; i < 6; i++ {
		now = now.Add(10 * time.Minute) // the running account is not what this test is about
		if b.due("a") {
			ran++
			b.observe("a", 3*b.share)
		}
	}
	if ran != 2 {
		t.Errorf("ran %d of 6 cycles, want 2 (every 3rd)", ran)
	}
	// Once it fits again it runs every cycle.
	b.observe("a", b.share/2)
	if a.every != 1 || !b.due("a") {
		t.Errorf("after a cheap run: every = %d, due = false", a.every)
	}
	// The other probe is untouched by all this.
	if b.probes["b"].benchTime != start || !b.due("b") {
		t.Error("probe b was resized by probe a's runs")
	}
}

func TestBudgetRunningAccount(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBudget(0.01, time.Minute, []string{"a", "b"})
	b.now = func() time.Time { return now }
	b.start = now
	if !b.due("a") || !b.due("b") {
		t.Fatal("first runs not due")
	}
	// A noisy run of a costs 3 shares: 1.5 cycles' allowance, overdrawn.
	b.observe("a", 3*b.share)
	if b.due("b") {
		t.Error("b due although the account is overdrawn")
	}
	// One interval later the allowance is 4 shares: b (no cost known) fits,
	// a (3 shares more) does not.
	now = now.Add(time.Minute)
	if b.allowance() != 2*b.perCycle {
		t.Errorf("allowance after one interval = %v, want %v", b.allowance(), 2*b.perCycle)
	}
	b.probes["a"].wait = 0
	if b.due("a") {
		t.Error("a due although its last cost would overdraw the account")
	}
	if !b.due("b") {
		t.Error("b not due although the allowance covers it")
	}
	// Another interval: 6 shares, a fits again.
	now = now.Add(time.Minute)
	if !b.due("a") {
		t.Error("a not due once the allowance covers it")
	}
}

func TestCPUSeconds(t *testing.T) {
	c0 := cpuSeconds()
	if c0 <= 0 {
		t.Fatalf("cpuSeconds = %v; a running test has used some CPU", c0)
	}
	if c1 := cpuSeconds(); c1 < c0 {
		t.Errorf("CPU time went backwards: %v → %v", c0, c1)
	}
}

// fakeSpec is an experiment whose arms follow the given names; Open is never
// called by Resolve.
func fakeSpec(name string, arms ...exp.Arm) *exp.Spec {
	return &exp.Spec{Name: name, Op: "round trip", Arms: func(p exp.Params) ([]exp.Arm, error) { return arms, nil }}
}

func fakeLookup(specs ...*exp.Spec) Lookup {
	return func(name string) (*exp.Spec, bool) {
		for _, s := range specs {
			if s.Name == name {
				return s, true
			}
		}
		return nil, false
	}
}

func pingpongFake() *exp.Spec {
	var arms []exp.Arm
	for _, n := range append(DefaultProbes, "pingpong/thread/futex/unpinned") {
		arms = append(arms, exp.Arm{Name: n, Open: func(context.Context) (exp.Bench, error) { return nil, nil }})
	}
	return fakeSpec("pingpong", arms...)
}

var testParams = exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}

func TestResolveDefaultsWithoutInterference(t *testing.T) {
	probes, notes, err := Resolve(nil, testParams, fakeLookup(pingpongFake()))
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != len(DefaultProbes) {
		t.Errorf("%d probes, want the %d defaults", len(probes), len(DefaultProbes))
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "no interference experiment") {
		t.Errorf("notes = %q; want one saying the interference probe is left out", notes)
	}
}

func TestResolveDefaultsWithInterference(t *testing.T) {
	inter := fakeSpec("interference",
		exp.Arm{Name: "interference/thread/futex/hogs=0", Params: map[string]string{"hogs": "0"}},
		exp.Arm{Name: "interference/thread/futex/hogs=1/stream", Params: map[string]string{"hogs": "1", "kind": "stream"}},
		exp.Arm{Name: "interference/thread/futex/hogs=1/spin", Params: map[string]string{"hogs": "1", "kind": "spin"}},
	)
	probes, notes, err := Resolve(nil, testParams, fakeLookup(pingpongFake(), inter))
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %q, want none", notes)
	}
	last := probes[len(probes)-1]
	if last.Name() != "interference/thread/futex/hogs=1/spin" {
		t.Errorf("interference probe = %s, want the one-hog spin arm", last.Name())
	}
}

func TestResolvePatterns(t *testing.T) {
	look := fakeLookup(pingpongFake())
	probes, _, err := Resolve([]string{"pingpong/thread/futex/*", "pingpong/thread/futex/same-cpu"}, testParams, look)
	if err != nil {
		t.Fatal(err)
	}
	if len(probes) != 3 {
		t.Errorf("%d probes, want 3 futex arms, each once", len(probes))
	}
	for _, tc := range []struct{ pat, want string }{
		{"nosuch/x", `unknown experiment "nosuch"`},
		{"pingpong", "name arms, not a whole experiment"},
		{"pingpong/zzz", "matches no arm"},
		{"pingpong/[", "bad glob"},
		{" ", "empty arm name"},
	} {
		_, _, err := Resolve([]string{tc.pat}, testParams, look)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Resolve(%q) error = %v, want it to say %q", tc.pat, err, tc.want)
		}
	}
}

func TestResolveLimitsAndUnsupported(t *testing.T) {
	var many []exp.Arm
	for i := 0; i < MaxProbes+1; i++ {
		many = append(many, exp.Arm{Name: "big/" + string(rune('a'+i))})
	}
	_, _, err := Resolve([]string{"big/*"}, testParams, fakeLookup(fakeSpec("big", many...)))
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many probes: error = %v", err)
	}
	un := fakeSpec("u", exp.Arm{Name: "u/cross", Unsupported: "needs two CPUs"})
	_, notes, err := Resolve([]string{"u/*"}, testParams, fakeLookup(un))
	if err != ErrNoProbes || len(notes) != 1 || !strings.Contains(notes[0], "needs two CPUs") {
		t.Errorf("only unsupported arms: err = %v, notes = %q", err, notes)
	}
}

func FuzzParseCgroupFiles(f *testing.F) {
	for _, file := range []string{"testdata/cgroup/v1/cpu.stat", "testdata/cgroup/v2/cpu.stat", "testdata/cgroup/v2/cpu.max"} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := parseCPUStat(b)
		if s.ThrottledSeconds < 0 {
			t.Errorf("negative throttled time %v", s.ThrottledSeconds)
		}
		if q, ok := parseCPUMax(b); ok && !(q > 0) {
			t.Errorf("quota %v reported ok", q)
		}
	})
}
