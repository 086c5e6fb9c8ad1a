package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/cgroup"
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func TestCgroupCollectorUnsupported(t *testing.T) {
	if c := NewCgroupCollector(cgroup.Dir{}); c.Unsupported == "" {
		t.Error("no cgroup directory: want a reason")
	}
	if c := NewCgroupCollector(cgroup.Dir{Version: 2, Path: "testdata/cgroup/v2"}); c.Unsupported != "" {
		t.Errorf("v2 fixture reported unsupported: %s", c.Unsupported)
	}
}

func TestBudgetShrinksGrowsAndSpreads(t *testing.T) {
	// 1% of one core over 60 s, two probes: 0.27 CPU-s each.
	b := newBudget(0.01, time.Minute, []string{"a", "b"})
	now := time.Unix(1000, 0)
	b.now, b.start = func() time.Time { return now }, now
	if got, want := b.perCycle, 0.6; abs(got-want) > 1e-12 {
		t.Fatalf("perCycle = %v, want %v", got, want)
	}
	if abs(b.share-probeShare*b.perCycle/2) > 1e-12 {
		t.Fatalf("share = %v, want half the probes' part of %v", b.share, b.perCycle)
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

// TestBudgetRunningAccount: the account holds the exporter's whole CPU
// (not only what probes report) to the allowance; each probe's first run
// is free of it, so the page is complete after the first cycle.
func TestBudgetRunningAccount(t *testing.T) {
	now, cpu := time.Unix(1000, 0), 0.0
	b := newBudget(0.01, time.Minute, []string{"a", "b"})
	b.now, b.cpu = func() time.Time { return now }, func() float64 { return cpu }
	b.start, b.cpu0 = now, 0
	if !b.due("a") {
		t.Fatal("first run of a not due")
	}
	// A noisy run of a costs 3 shares (1.5 of the probes' part of a cycle): overdrawn.
	cpu += 3 * b.share
	b.observe("a", 3*b.share)
	if !b.due("b") {
		t.Error("b's first run put off: the first cycle must show every probe")
	}
	cpu += b.share / 2
	b.observe("b", b.share/2)
	if b.due("b") {
		t.Error("b due although the account is overdrawn")
	}
	// One interval later the probes' part is 4 shares, 3.5 spent: b (half a
	// share) fits, a (3 shares more) does not.
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
	// Two intervals more: 8 shares, a fits again.
	now = now.Add(2 * time.Minute)
	if !b.due("a") {
		t.Error("a not due once the allowance covers it")
	}
	// CPU the exporter spent outside probes (scrapes, the runtime, a
	// busy host making everything dearer) counts too.
	cpu += 3 * b.perCycle
	if b.due("a") || b.due("b") {
		t.Error("probes due although the exporter's own CPU overdrew the account")
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

const interferenceProbe = "interference/futex/process-spin/hogs=1/gomaxprocs=2"

var pingpongProbes = []string{"pingpong/goroutine/chan/gomaxprocs=1", "pingpong/thread/futex/same-cpu",
	"pingpong/thread/futex/cross-cpu", "pingpong/process/pipe/unpinned"}

func pingpongFake() *exp.Spec {
	var arms []exp.Arm
	for _, n := range append(pingpongProbes, "pingpong/thread/futex/unpinned") {
		arms = append(arms, exp.Arm{Name: n, Open: func(context.Context) (exp.Bench, error) { return nil, nil }})
	}
	return &withProbes(fakeSpec("pingpong", arms...), pingpongProbes...).Spec
}

// probed is a fake experiment with the probes it declares.
type probed struct {
	exp.Spec
	probes []string
}

func (p *probed) Probes() []string { return p.probes }

// withProbes is s declaring probes (bound: exp.Hook finds them).
func withProbes(s *exp.Spec, probes ...string) *probed {
	p := &probed{Spec: *s, probes: probes}
	exp.Bind(p)
	return p
}

var testParams = exp.Params{Suite: exp.SuiteDefault, CPUs: []int{0, 1}, Host: &sysinfo.Host{}}

// TestResolveDefaults: the default probes are what each experiment
// declares, in registry order; serve knows no experiment by name.
func TestResolveDefaults(t *testing.T) {
	inter := withProbes(fakeSpec("interference",
		exp.Arm{Name: "interference/futex/none/hogs=0/gomaxprocs=2"},
		exp.Arm{Name: interferenceProbe},
	), interferenceProbe)
	plain := fakeSpec("ring", exp.Arm{Name: "ring/thread/futex/n=2"})
	specs := []*exp.Spec{pingpongFake(), plain, &inter.Spec}
	probes, notes, err := Resolve(nil, testParams, specs)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes = %q, want none", notes)
	}
	var got []string
	for _, p := range probes {
		got = append(got, p.Name())
	}
	want := append(append([]string{}, pingpongProbes...), interferenceProbe)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("probes = %q, want %q", got, want)
	}
	if d := DefaultProbes(specs); strings.Join(d, " ") != strings.Join(want, " ") {
		t.Errorf("DefaultProbes = %q, want %q", d, want)
	}
	// A declared probe that this machine cannot plan is a note, not an error.
	inter.probes = []string{"interference/nosuch"}
	probes, notes, err = Resolve(nil, testParams, specs)
	if err != nil || len(probes) != len(pingpongProbes) || len(notes) != 1 || !strings.Contains(notes[0], "interference/nosuch") {
		t.Errorf("missing declared probe: err %v, %d probes, notes %q", err, len(probes), notes)
	}
}

// TestRegisteredProbes: the real experiments' declared probes exist, and
// their labels stay short.
func TestRegisteredProbes(t *testing.T) {
	names := DefaultProbes(nil)
	if len(names) == 0 {
		t.Skip("no experiments linked into this test binary")
	}
	for _, n := range names {
		if l := armLabel(n); len(l) > MaxLabelLen {
			t.Errorf("%s: arm label of %d characters", n, len(l))
		}
	}
}

// The op label is what the arm's experiment declares for it, whatever its
// op's description says: rewording "round trip" renames nothing. An arm run
// on one of several interpreters has its plan's label; an experiment not
// registered, or a name that does not parse, gets the default.
func TestOpLabel(t *testing.T) {
	for _, tc := range []struct {
		a    result.Arm
		want string
	}{
		{result.Arm{Name: "pingpong/thread/futex/same-cpu", Experiment: "pingpong", Op: "a reworded round trip"}, "roundtrip"},
		{result.Arm{Name: "pingpong/pythread/simplequeue/unpinned/py=3.13t", Experiment: "pingpong"}, "roundtrip"},
		{result.Arm{Name: "ring/thread/futex/pingpong/same-cpu", Experiment: "ring", Op: "hop"}, "roundtrip"},
		{result.Arm{Name: "ring/thread/futex/n=2", Experiment: "ring", Op: "round trip"}, "hop"},
		{result.Arm{Name: "interference/timer/none/hogs=0/gomaxprocs=1", Experiment: "interference"}, "mstimersleep"},
		{result.Arm{Name: "interference/chanpair/none/hogs=0/gomaxprocs=1", Experiment: "interference", Op: "round trip"}, "op"},
		{result.Arm{Name: "hop/user/direct/gomaxprocs=1", Experiment: "hop", Op: "your query"}, "op"},
		{result.Arm{Name: "nosuch/a/b", Experiment: "nosuch", Op: "round trip"}, exp.DefaultOpLabel},
		{result.Arm{Name: "pingpong//x", Experiment: "pingpong"}, exp.DefaultOpLabel},
	} {
		if got := opLabel(&tc.a); got != tc.want {
			t.Errorf("opLabel(%s) = %q, want %q", tc.a.Name, got, tc.want)
		}
	}
	for _, s := range exp.All() {
		if err := s.CheckOpLabels(); err != nil {
			t.Error(err)
		}
	}
}

func TestResolvePatterns(t *testing.T) {
	look := []*exp.Spec{pingpongFake()}
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

// TestResolveGlobsAsRunDoes: a glob or selector in the first part selects
// arms of every experiment, as in ctxlab run; "*" was refused as an
// unknown experiment.
func TestResolveGlobsAsRunDoes(t *testing.T) {
	look := []*exp.Spec{pingpongFake(), fakeSpec("other", exp.Arm{Name: "other/thread/futex/same-cpu"})}
	probes, _, err := Resolve([]string{"*/thread/futex/same-cpu"}, testParams, look)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range probes {
		names = append(names, p.Name())
	}
	if len(probes) != 2 || names[0] != "pingpong/thread/futex/same-cpu" || names[1] != "other/thread/futex/same-cpu" {
		t.Errorf("*/thread/futex/same-cpu selected %q; want that arm of both experiments", names)
	}
	if _, _, err := Resolve([]string{"*"}, testParams, look); err != nil {
		t.Errorf(`Resolve("*") over %d arms: %v`, len(look), err)
	}
	if _, _, err := Resolve([]string{"zz*"}, testParams, look); err == nil || !strings.Contains(err.Error(), "matches no arm") {
		t.Errorf(`Resolve("zz*"): %v; want "matches no arm"`, err)
	}
	var many []exp.Arm
	for i := 0; i < MaxProbes+1; i++ {
		many = append(many, exp.Arm{Name: "big/" + string(rune('a'+i)) + "/a-label-far-longer-than-a-prometheus-label-should-be"})
	}
	_, _, err = Resolve([]string{"*"}, testParams, []*exp.Spec{fakeSpec("big", many...)})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf(`Resolve("*") over too many long-labelled arms: %v; want the count refused first`, err)
	}
}

func TestResolveLimitsAndUnsupported(t *testing.T) {
	var many []exp.Arm
	for i := 0; i < MaxProbes+1; i++ {
		many = append(many, exp.Arm{Name: "big/" + string(rune('a'+i))})
	}
	_, _, err := Resolve([]string{"big/*"}, testParams, []*exp.Spec{fakeSpec("big", many...)})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many probes: error = %v", err)
	}
	un := fakeSpec("u", exp.Arm{Name: "u/cross", Unsupported: "needs two CPUs"})
	_, notes, err := Resolve([]string{"u/*"}, testParams, []*exp.Spec{un})
	if err != ErrNoProbes || len(notes) != 1 || !strings.Contains(notes[0], "needs two CPUs") {
		t.Errorf("only unsupported arms: err = %v, notes = %q", err, notes)
	}
	long := fakeSpec("l", exp.Arm{Name: "l/" + strings.Repeat("x", MaxLabelLen+1)})
	if _, _, err := Resolve([]string{"l/*"}, testParams, []*exp.Spec{long}); err == nil || !strings.Contains(err.Error(), "characters") {
		t.Errorf("an arm label over %d characters: error = %v", MaxLabelLen, err)
	}
}

type timedFake struct{ started int }

func (f *timedFake) Run(*measure.B) error             { return nil }
func (f *timedFake) Close() error                     { return nil }
func (f *timedFake) Participants() exp.Participants   { return exp.WholeProcess() }
func (f *timedFake) StartTimed(int)                   { f.started++ }
func (f *timedFake) Analyze(*exp.Record, *result.Arm) {}

// The probe wrapper hides nothing the runner asks of a loop: a starve arm
// told "timing begins" through it starts its hog.
func TestTappedLoopForwardsTimedPhase(t *testing.T) {
	f := &timedFake{}
	var b exp.Loop = &tappedLoop{Loop: f, t: &tap{}}
	tp, ok := b.(exp.TimedPhase)
	if !ok {
		t.Fatal("tappedLoop is not an exp.TimedPhase")
	}
	tp.StartTimed(10)
	if f.started != 1 {
		t.Fatalf("StartTimed reached the arm %d times, want 1", f.started)
	}
	if _, ok := b.(exp.Analyzer); !ok {
		t.Fatal("tappedLoop is not an exp.Analyzer")
	}
}
