package experiments

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sqlop/sqloptest"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// updateGolden rewrites testdata/golden from what the code says now.
var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenHost is a fixed machine, so that plans and their limits do not
// depend on the one the test runs on.
func goldenHost() *sysinfo.Host {
	h := &sysinfo.Host{}
	h.OnlineCPUs = []int{0, 1, 2, 3}
	h.LogicalCPUs = 4
	h.Caches = []result.Cache{{Level: 1, Type: "Data", SizeB: 32 << 10}, {Level: 3, Type: "Unified", SizeB: 16 << 20}}
	h.ThreadsMax = 100000
	h.NprocLimit = 50000
	h.MemAvailableB = 8 << 30
	h.Scheduler = "EEVDF"
	h.SchedSliceNs = 3_000_000
	return h
}

func goldenParams(suite string) exp.Params {
	h := goldenHost()
	return exp.Params{Suite: suite, CPUs: h.OnlineCPUs, Host: h}
}

// goldenPlans are the plan variants each experiment's arms are listed for.
func goldenPlans(t *testing.T) []struct {
	name string
	p    exp.Params
} {
	quick, def, full := goldenParams(exp.SuiteQuick), goldenParams(exp.SuiteDefault), goldenParams(exp.SuiteFull)
	gmp := goldenParams(exp.SuiteFull)
	gmp.GOMAXPROCS = []int{1, 3}
	workers := goldenParams(exp.SuiteDefault)
	workers.Workers, workers.Hogs = []int{2, 5}, []int{0, 2}
	cpus := goldenParams(exp.SuiteDefault)
	cpus.CPUs, cpus.CPUsGiven = []int{0}, true
	user := goldenParams(exp.SuiteDefault)
	user.Options = settings(map[string]string{"db": goldenDB(t), "query": "select customer, total from orders where order_id = ?",
		"args": "range:1..2000", "py-call": "shop.pricing:quote"})
	return []struct {
		name string
		p    exp.Params
	}{{"quick", quick}, {"default", def}, {"full", full}, {"full --gomaxprocs 1,3", gmp},
		{"default --workers 2,5 --hogs 0,2", workers}, {"default --cpus 0", cpus}, {"default with the user's query and function", user}}
}

// goldenDB is sqloptest.ShopDB under a fixed name, so its base name in the arms'
// params is the same on every machine.
func goldenDB(t *testing.T) string {
	path := sqloptest.ShopDB(t, 2000)
	dst := filepath.Join(t.TempDir(), "golden.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

func armLine(a exp.Arm) string {
	var ps []string
	for k, v := range a.Params {
		ps = append(ps, k+"="+v)
	}
	sort.Strings(ps)
	return fmt.Sprintf("%s | %s %s | op %q unit %q | {%s} | gmp %d %s %v | quick %v reps %d counters %v timeout %v resolve %v open %v | unsupported %q",
		a.Name, a.Substrate, a.Mechanism, a.Op, a.Unit, strings.Join(ps, " "), a.GOMAXPROCS, a.Placement, a.CPUs,
		a.Quick, a.Reps, a.Counters, a.Timeout, a.Resolve != nil, a.Open != nil, a.Unsupported)
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// synthArm gives a planned arm figures that depend only on its name: a
// measured result for the analyses to read.
func synthArm(spec *exp.Spec, a exp.Arm) result.Arm {
	r := result.Arm{Name: a.Name, Experiment: spec.Name, Substrate: a.Substrate, Mechanism: a.Mechanism,
		Op: a.Op, Unit: a.Unit, GOMAXPROCS: a.GOMAXPROCS, Placement: a.Placement, CPUs: a.CPUs, Params: map[string]string{}}
	for k, v := range a.Params {
		r.Params[k] = v
	}
	if r.Op == "" {
		r.Op = spec.Op
	}
	if r.Unit == "" {
		r.Unit = "ns/op"
	}
	if a.Unsupported != "" {
		r.Status, r.Reason = result.StatusUnsupported, a.Unsupported
		return r
	}
	h := hash64(a.Name)
	r.Status = result.StatusOK
	med := float64(200 + h%60000)
	r.Median, r.Min, r.Max = med, med*(1-float64(h>>8%20)/100), med*(1+float64(h>>16%30)/100)
	r.RepMeans = []float64{r.Min, r.Median, r.Max}
	r.Percentiles = &result.Percentiles{Samples: int64(500 + h>>20%4000), P50: med * 0.9, P90: med * 1.3, P95: med * 1.6,
		P99: med * float64(2+h>>24%9), P999: med * 20, Max: med * 40}
	r.Switches = &result.Switches{Voluntary: float64(h>>28%300) / 100, Involuntary: float64(h>>32%100) / 100}
	cpu := med * (0.3 + float64(h>>36%70)/100)
	r.CPUNsPerOp = &cpu
	for i, m := range spec.Metrics {
		r.SetMetric(m.Name, float64(h>>(uint(i)%40)%2000)/10)
	}
	if cpythonSubstrates[a.Substrate] {
		r.Params["python"], r.Params["gil"], r.Params["switch_interval"] = "3.12.1", "enabled", "5ms"
	}
	return r
}

// withInterpreters is a run's CPython arms as --python all names them,
// one copy per tag; gil says which tags are free-threaded builds.
func withInterpreters(arms []result.Arm, tags []string, ft map[string]bool) []result.Arm {
	var out []result.Arm
	for _, a := range arms {
		if !isCPython(a) {
			out = append(out, a)
			continue
		}
		for _, tag := range tags {
			b := a
			b.Name = exp.MustParseArmKey(a.Name).WithInterpreter(tag).String()
			b.Params = map[string]string{}
			for k, v := range a.Params {
				b.Params[k] = v
			}
			if b.Status == result.StatusOK {
				b.Median *= 1 + float64(len(tag))/10
				if ft[tag] {
					b.Params["gil"] = "disabled"
				}
			}
			out = append(out, b)
		}
	}
	return out
}

// freeThreadedPlaceholders are the arms --python all lists as
// unsupported when no free-threaded build was found.
func freeThreadedPlaceholders(spec *exp.Spec, arms []result.Arm) []result.Arm {
	var out []result.Arm
	for _, a := range arms {
		if a.Experiment != spec.Name || !isCPython(a) {
			continue
		}
		if !slices.Contains(goldenFT, a.Name) {
			continue
		}
		b := a
		b.Name = exp.MustParseArmKey(a.Name).WithInterpreter("free-threaded").String()
		b.Status, b.Reason = result.StatusUnsupported, noFreeThreaded
		out = append(out, b)
	}
	return out
}

// goldenFT are the CPython arms with a published free-threaded figure.
var goldenFT = []string{
	"interference/pythread/simplequeue/busy=1/si=default",
	"interference/pythread/simplequeue/busy=1/si=default/cross-cpu",
	"ring/pythread/simplequeue/n=2", "ring/pythread/simplequeue/n=100",
}

func writeChecks(b *strings.Builder, cs []result.Check) {
	for _, c := range cs {
		fmt.Fprintf(b, "check %q holds=%v skipped=%v\n    detail %q\n    arms %v\n", c.Name, c.Holds, c.Skipped, c.Detail, c.Arms)
	}
}

// analyse writes what spec reads from arms (a whole run's, every
// experiment's): derived figures, checks, findings, verdict, indirect
// costs and hogged arms.
func analyse(b *strings.Builder, spec *exp.Spec, all []result.Arm) {
	var own []result.Arm
	for _, a := range all {
		if a.Experiment == spec.Name {
			own = append(own, a)
		}
	}
	if derive := deriveOf(spec); derive != nil {
		before := map[string]map[string]float64{}
		for _, a := range own {
			before[a.Name] = a.Metrics
			m := map[string]float64{}
			for k, v := range a.Metrics {
				m[k] = v
			}
			before[a.Name] = m
		}
		derive(own)
		for _, a := range own {
			var ks []string
			for k, v := range a.Metrics {
				if w, ok := before[a.Name][k]; !ok || w != v {
					ks = append(ks, fmt.Sprintf("%s=%.6g", k, v))
				}
			}
			sort.Strings(ks)
			if len(ks) > 0 {
				fmt.Fprintf(b, "derive %s: %s\n", a.Name, strings.Join(ks, " "))
			}
		}
	}
	if spec.Checks != nil {
		writeChecks(b, spec.Checks(own))
	}
	if spec.Findings != nil {
		for _, f := range spec.Findings(own) {
			fmt.Fprintf(b, "finding %q\n", f)
		}
	}
	if indirect := indirectCostOf(spec); indirect != nil {
		for _, c := range indirect(own) {
			fmt.Fprintf(b, "indirect %+v\n", c)
		}
	}
	if hogged := hoggedOf(spec); hogged != nil {
		for _, a := range own {
			if hogged(a) {
				fmt.Fprintf(b, "hogged %s\n", a.Name)
			}
		}
	}
	if verdict := verdictOf(spec); verdict != nil {
		run := &result.Run{Arms: all, Env: result.Env{Hypervisor: true}}
		// Derived figures as the run stores them.
		for i := range run.Arms {
			for _, a := range own {
				if a.Name == run.Arms[i].Name {
					run.Arms[i] = a
				}
			}
		}
		for _, s := range verdict(exp.NewVerdictRun(run)) {
			fmt.Fprintf(b, "verdict block %d heading %q\n", s.Block, s.Heading)
			for _, l := range s.Lines {
				fmt.Fprintf(b, "  line %q\n", l)
			}
			for _, l := range s.More {
				fmt.Fprintf(b, "  more %q\n", l)
			}
			for _, l := range s.Notes {
				fmt.Fprintf(b, "  note %q\n", l)
			}
			for _, l := range s.Foot {
				fmt.Fprintf(b, "  foot %q\n", l)
			}
		}
	}
}

// TestGolden pins what every experiment plans and what it reads from a
// run: its arms (every field but the closures) in several suites and
// options, its declarations, and its derived figures, checks, findings
// and verdict over synthetic figures, with one interpreter and under
// --python all. A refactoring must leave every line as it is; `go test
// -run TestGolden -update` rewrites the files when a change is meant.
func TestGolden(t *testing.T) {
	plans := goldenPlans(t)
	// The analyses read the full suite's arms, the user's query and
	// function among them.
	full := goldenParams(exp.SuiteFull)
	full.Options = plans[len(plans)-1].p.Options
	var all []result.Arm
	for _, spec := range exp.All() {
		arms, err := spec.Arms(full)
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		for _, a := range arms {
			all = append(all, synthArm(spec, a))
		}
	}
	two := withInterpreters(all, []string{"3.11.7", "3.12.1"}, nil)
	ft := withInterpreters(all, []string{"3.13.1", "3.13.1t"}, map[string]bool{"3.13.1t": true})
	for _, spec := range exp.All() {
		var b strings.Builder
		fmt.Fprintf(&b, "experiment %s order %d op %q\nsummary %q\n", spec.Name, spec.Order, spec.Op, spec.Summary)
		for _, pl := range plans {
			fmt.Fprintf(&b, "\n== plan: %s\n", pl.name)
			arms, err := spec.Arms(pl.p)
			if err != nil {
				fmt.Fprintf(&b, "error: %v\n", err)
				continue
			}
			for _, a := range arms {
				fmt.Fprintln(&b, armLine(a))
			}
		}
		fmt.Fprintf(&b, "\n== declarations\n")
		for _, h := range headlineOf(spec) {
			fmt.Fprintf(&b, "headline %+v\n", h)
		}
		if sc := switchCostOf(spec); len(sc) > 0 {
			fmt.Fprintf(&b, "switchcost %v\n", sc)
		}
		fmt.Fprintf(&b, "probes %v\n", probesOf(spec))
		for _, h := range harnessOf(spec) {
			fmt.Fprintf(&b, "harness %+v\n", h)
		}
		for _, r := range spec.References {
			fmt.Fprintf(&b, "reference %+v\n", r)
		}
		for _, m := range spec.Metrics {
			fmt.Fprintf(&b, "metric %+v\n", m)
		}
		fmt.Fprintf(&b, "doc %q\n", spec.Doc)
		fmt.Fprintf(&b, "\n== analysis: one interpreter\n")
		analyse(&b, spec, all)
		fmt.Fprintf(&b, "\n== analysis: --python all, two GIL builds, no free-threaded one\n")
		analyse(&b, spec, append(append([]result.Arm(nil), two...), freeThreadedPlaceholders(spec, all)...))
		fmt.Fprintf(&b, "\n== analysis: --python all, a GIL and a free-threaded build\n")
		analyse(&b, spec, ft)
		checkGolden(t, filepath.Join("testdata", "golden", spec.Name+".txt"), b.String())
	}
}

// checkGolden compares got with the golden file path (or rewrites it
// with -update), naming the first line that differs.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s:%d differs:\n got: %s\nwant: %s", path, i+1, g, w)
			return
		}
	}
}
