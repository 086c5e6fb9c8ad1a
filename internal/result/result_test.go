package result

import (
	"bytes"
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
	}{{850, "850 ns"}, {4210, "4.21 µs"}, {12300000, "12.3 ms"}, {2e9, "2 s"},
		{-18600, "-18.6 µs"}, {999.7, "1 µs"}, {999.4, "999 ns"}, {999_700, "1 ms"}, {-5, "-5 ns"}} {
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

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 90 * time.Minute: "1h30m", time.Minute: "1m",
		10 * time.Minute: "10m", 90 * time.Millisecond: "90ms", 61 * time.Second: "1m1s", 2*time.Hour + 3*time.Second: "2h0m3s"} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// An arm's figure is an answer when it finished (or kept the repetitions
// that did), and never when its repetitions held too few ops.
func TestHasFigure(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Arm
		want bool
	}{
		{"ok", Arm{Status: StatusOK, Median: 5, RepMeans: []float64{5}}, true},
		{"ok without reps", Arm{Status: StatusOK, Median: 5}, true},
		{"no median", Arm{Status: StatusOK}, false},
		{"timed out, reps kept", Arm{Status: StatusTimedOut, Median: 5, RepMeans: []float64{5}}, true},
		{"timed out, nothing", Arm{Status: StatusTimedOut, Median: 5}, false},
		{"too few ops", Arm{Status: StatusTooFewOps, Ops: 3, Median: 5, RepMeans: []float64{5, 4, 6}}, false},
		{"failed", Arm{Status: StatusFailed}, false},
	} {
		if got := tc.a.HasFigure(); got != tc.want {
			t.Errorf("%s: HasFigure() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A document of schema 1, which had no "too few ops", still reads.
func TestReadAcceptsSchema1(t *testing.T) {
	r := sampleRun()
	r.Schema = 1
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(&buf); err != nil {
		t.Fatal(err)
	}
}
