package result

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleRun() *Run {
	m := 0.25
	return &Run{
		Schema: SchemaVersion, ID: "20261130T120000-abcdef", Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Version: "0.1.0", GoVersion: "go1.26", CommandLine: []string{"ctxlab", "run"}, Suite: "quick",
		Env:         Env{Hostname: "h", LogicalCPUs: 2, OnlineCPUs: []int{0, 1}, Counters: []CounterInfo{{Name: "cycles", Kind: "hardware", Unsupported: "not offered"}}},
		ClockCostNs: 25,
		Arms: []Arm{{
			Name: "pingpong/thread/futex/same-cpu", Experiment: "pingpong", Substrate: "thread", Mechanism: "futex",
			Params: map[string]string{"placement": "same-cpu"}, Op: "round trip", Unit: "ns/op", GOMAXPROCS: 2,
			Placement: "same-cpu", CPUs: []int{0}, Status: StatusOK, Ops: 1000, RepMeans: []float64{5000, 5100, 4900},
			Median: 5000, Min: 4900, Max: 5100,
			Percentiles: &Percentiles{Samples: 3000, P50: 4800, P90: 5200, P95: 5300, P99: 9000, P999: 20000, Max: 30000},
			Histogram:   []Bucket{{LowNs: 4096, HighNs: 8192, Count: 2990}, {LowNs: 8192, HighNs: 16384, Count: 10}},
			Switches:    &Switches{Voluntary: 1.2, Involuntary: 0.8}, Migrations: &m,
			Counters: []Counter{{Name: "cycles", Unsupported: "not offered"}},
			Metrics:  map[string]float64{"rss-bytes/worker": 8192},
			Noise:    Noise{Spread: 1.04},
			Checks:   []Check{{Name: "c", Holds: true, Detail: "d", Arms: []string{"x"}}},
			Notes:    []string{"n"},
		}},
		Experiments: []Experiment{{Name: "pingpong", Op: "round trip", Findings: []string{"f"}}},
	}
}

func TestRunRoundTrip(t *testing.T) {
	in := sampleRun()
	var buf bytes.Buffer
	if err := in.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the run:\n in: %+v\nout: %+v", in, out)
	}
	if out.Find("pingpong/thread/futex/same-cpu") == nil || out.Find("nope") != nil {
		t.Fatal("Find")
	}
}

func TestReadRefusesForeignAndNewer(t *testing.T) {
	if _, err := Read(strings.NewReader(`{"hello": 1}`)); err == nil || !strings.Contains(err.Error(), "not a ctxlab run") {
		t.Fatalf("foreign document: %v", err)
	}
	if _, err := Read(strings.NewReader(`{"schema": 999}`)); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
	if _, err := Read(strings.NewReader(`not json`)); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestFormatNs(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{{850, "850 ns"}, {4210, "4.21 µs"}, {12300000, "12.3 ms"}, {2e9, "2 s"}} {
		if got := FormatNs(tc.ns); got != tc.want {
			t.Errorf("FormatNs(%v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
	if got := FormatValue(2048, "B/op"); got != "2 KiB" {
		t.Errorf("FormatValue bytes = %q", got)
	}
}

func TestReadRefusesWhatIsNotOneRun(t *testing.T) {
	for doc, want := range map[string]string{
		`{"schema":-5,"id":"x"}`:            "schema -5; want 1..",
		`{"schema":99,"id":"x"}`:            "newer",
		`{"id":"x"}`:                        "no schema",
		`{"schema":1}`:                      "no id",
		`{"schema":1,"id":"a b"}`:           "printable",
		`{"schema":1,"id":"\u001b[2J"}`:     "printable",
		`{"schema":1,"id":"x"} {"x":1}`:     "more data",
		`{"schema":1,"id":"x"}garbage`:      "more data",
		`[1,2]`:                             "decode run",
		`{"schema":1,"id":"x","arms":"no"}`: "decode run",
	} {
		_, err := Read(strings.NewReader(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Read(%s) = %v, want an error with %q", doc, err, want)
		}
	}
	if _, err := Read(strings.NewReader(`{"schema":1,"id":"20261130T120000-abcdef"}` + "\n")); err != nil {
		t.Fatal(err)
	}
}

// FuzzRead: any input is refused or read as a run that writes and reads
// back to the same document, and whose Validate answers without panicking.
func FuzzRead(f *testing.F) {
	f.Add(`{"schema":1,"id":"x","arms":[{"name":"a","median":1.5}]}`)
	f.Add(`{"schema":-5,"id":"x"}`)
	f.Add(`{"schema":1,"id":"x","env":{"online_cpus":[0,1]},"warnings":["\u001b"]}`)
	f.Add(`{"schema":1,"id":"x","arms":[{"name":"a","ops_per_rep":-5,"median":-1e308},{"name":"a"}]}`)
	f.Fuzz(func(t *testing.T, doc string) {
		r, err := Read(strings.NewReader(doc))
		if err != nil {
			return
		}
		r.Validate()
		var b1, b2 strings.Builder
		if err := r.Write(&b1); err != nil {
			t.Fatalf("read %q but cannot write it: %v", doc, err)
		}
		r2, err := Read(strings.NewReader(b1.String()))
		if err != nil {
			t.Fatalf("wrote %q, cannot read it back: %v", b1.String(), err)
		}
		r2.Write(&b2)
		if b1.String() != b2.String() {
			t.Fatalf("round trip changed the run:\n%s\n%s", b1.String(), b2.String())
		}
	})
}

// A run stored before the metric naming convention reads back with today's names.
func TestReadRenamesLegacyMetrics(t *testing.T) {
	doc := `{"schema":1,"id":"old","arms":[{"name":"hop/x","metrics":{"x-direct":3.5,"added-ns/op":20}}]}`
	r, err := Read(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	m := r.Arms[0].Metrics
	if m["direct-ratio"] != 3.5 || m["added-ns/op"] != 20 || len(m) != 2 {
		t.Fatalf("metrics after read = %v", m)
	}
	for old, n := range LegacyMetricNames {
		if old == n {
			t.Errorf("%q maps to itself", old)
		}
		if _, chained := LegacyMetricNames[n]; chained {
			t.Errorf("%q → %q is itself a legacy name", old, n)
		}
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[float64]string{3: "3", 61.4: "61.4", 467.3: "467", 9999: "9999", 134484: "134k", 1.152e6: "1.15M", 2e9: "2G"} {
		if got := FormatCount(n); got != want {
			t.Errorf("FormatCount(%v) = %q, want %q", n, got, want)
		}
	}
	if got := FormatValue(38440, "ns/element"); got != "38.4 µs/element" {
		t.Errorf("FormatValue ns/element = %q", got)
	}
}

// A run stored before CPython became a substrate of each experiment (the
// "python" experiment, arms python/<experiment>/…) reads back under
// today's names: each arm in the experiment its name now leads with, the
// forked-process pipe as pyprocess (beside Go's process pipe, not on it),
// and the python experiment's checks and findings with their arms.
func TestReadMapsLegacyPythonArms(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "python-legacy.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ // name → experiment/substrate
		"pingpong/pythread/simplequeue/unpinned":                        "pingpong/pythread",
		"pingpong/pythread/simplequeue/same-cpu":                        "pingpong/pythread",
		"pingpong/pyprocess/pipe/unpinned":                              "pingpong/pyprocess",
		"pingpong/process/pipe/unpinned":                                "pingpong/process",
		"pingpong/pytask/asyncio-queue/unpinned":                        "pingpong/pytask",
		"interference/pythread/simplequeue/busy=1/si=default/cross-cpu": "interference/pythread",
		"hop/pytask/direct/db=memory":                                   "hop/pytask",
		"hop/pytask/executor/db=memory":                                 "hop/pytask",
		"hop/pytask/two-hop/db=memory":                                  "hop/pytask",
	}
	for name, es := range want {
		a := r.Find(name)
		if a == nil {
			t.Errorf("no arm %s after reading", name)
			continue
		}
		if got := a.Experiment + "/" + a.Substrate; got != es {
			t.Errorf("%s: experiment/substrate %s, want %s", name, got, es)
		}
		for _, c := range a.Checks {
			if strings.Contains(c.Detail+strings.Join(c.Arms, " "), "python/") {
				t.Errorf("%s: its check keeps an old name: %+v", name, c)
			}
		}
	}
	exps := map[string]Experiment{}
	for _, e := range r.Experiments {
		exps[e.Name] = e
		for _, c := range e.Checks {
			for _, n := range c.Arms {
				if strings.HasPrefix(n, "python/") || !strings.HasPrefix(n, e.Name+"/") {
					t.Errorf("%s: check %q names arm %s", e.Name, c.Name, n)
				}
			}
			if strings.Contains(c.Detail, "python/") {
				t.Errorf("%s: check detail keeps the old name: %s", e.Name, c.Detail)
			}
		}
	}
	if _, ok := exps["python"]; ok {
		t.Error("the python experiment is still there")
	}
	// The former sqlite3 lookups ran in :memory: (the arms without /db= run
	// on a file now), and say so in their params.
	if a := r.Find("hop/pytask/direct/db=memory"); a != nil && a.Params["db"] != "memory" {
		t.Errorf("hop/pytask/direct/db=memory: params %v", a.Params)
	}
	checks := func(e string) int { return len(exps[e].Checks) }
	if checks("pingpong") != 3 || checks("interference") != 1 || checks("hop") != 1 {
		t.Errorf("checks per experiment: pingpong %d (want 1+2), interference %d, hop %d", checks("pingpong"), checks("interference"), checks("hop"))
	}
	n := 0
	for _, e := range r.Experiments {
		n += len(e.Findings)
	}
	if n != 1+9 {
		t.Errorf("%d findings after the move, want all 10 kept", n)
	}
	// A new run reads as it is.
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	if err := again.Write(&buf2); err != nil {
		t.Fatal(err)
	}
	if first := buf.String(); first != buf2.String() {
		t.Error("reading a renamed run again changes it")
	}
	for _, tc := range [][2]string{
		{"python/ring/pytask/asyncio-queue/n=2/py=3.13t", "ring/pytask/asyncio-queue/n=2/py=3.13t"},
		{"python/pingpong/process/pipe/unpinned/py=3.11", "pingpong/pyprocess/pipe/unpinned/py=3.11"},
		{"pingpong/process/pipe/unpinned", "pingpong/process/pipe/unpinned"},
		{"python/x", "python/x"},
	} {
		if got, _ := LegacyPythonName(tc[0]); got != tc[1] {
			t.Errorf("LegacyPythonName(%s) = %s, want %s", tc[0], got, tc[1])
		}
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 90 * time.Minute: "1h30m", time.Minute: "1m",
		10 * time.Minute: "10m", 90 * time.Millisecond: "90ms", 61 * time.Second: "1m1s", 2*time.Hour + 3*time.Second: "2h0m3s"} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
