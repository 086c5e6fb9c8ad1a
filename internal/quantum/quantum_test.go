package quantum

import (
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// synth builds a sorted latency set: base fast samples around 40 µs and
// n samples spread uniformly over [lo, hi] ns, from a fixed seed.
func synth(base int, n int, lo, hi int64) []int64 {
	r := rand.New(rand.NewSource(1))
	var s []int64
	for i := 0; i < base; i++ {
		s = append(s, 30_000+r.Int63n(20_000))
	}
	for i := 0; i < n; i++ {
		s = append(s, lo+r.Int63n(hi-lo+1))
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

var machine = []Quantum{GoPreemption(), KernelSlice(1_400_000, "EEVDF", "read from the kernel"), Tick(250)}

func TestDetect(t *testing.T) {
	cases := []struct {
		name     string
		samples  []int64
		qs       []Quantum
		wantLoc  [2]int64 // cluster location range
		wantName string   // "" = refusal
		wantK    int
		wantIn   string // percentile that must sit in the cluster
	}{
		{"10ms Go", synth(100, 400, 9_500_000, 11_500_000), machine, [2]int64{10e6, 12e6}, "Go preemption", 1, "p50"},
		{"20ms Go", synth(50, 200, 20_000_000, 22_000_000), machine, [2]int64{20e6, 22e6}, "Go preemption", 2, "p50"},
		{"4ms tick", synth(900, 100, 3_900_000, 4_100_000), machine, [2]int64{3.9e6, 4.1e6}, "timer tick (CONFIG_HZ=250)", 1, "p99"},
		{"slice", synth(900, 100, 1_380_000, 1_420_000), machine, [2]int64{1.38e6, 1.42e6}, "EEVDF slice", 1, "p99"},
		{"6.6ms none", synth(500, 500, 6_500_000, 6_700_000), machine, [2]int64{6.5e6, 6.7e6}, "", 0, "p99"},
		{"20ms without Go's quantum", synth(50, 200, 20_000_000, 22_000_000), machine[1:], [2]int64{20e6, 22e6}, "", 0, "p50"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := Detect(c.samples, c.qs, Options{})
			if len(cl) != 1 {
				t.Fatalf("got %d clusters, want 1: %+v", len(cl), cl)
			}
			k := cl[0]
			if k.MedianNs < c.wantLoc[0] || k.MedianNs > c.wantLoc[1] {
				t.Errorf("location %d outside %v", k.MedianNs, c.wantLoc)
			}
			if !strings.Contains(k.Where(c.samples), c.wantIn) {
				t.Errorf("Where = %q, want it to contain %s", k.Where(c.samples), c.wantIn)
			}
			d := k.Describe(c.samples)
			if c.wantName == "" {
				if k.Cause != nil {
					t.Fatalf("named %q (k=%d) where none fits", k.Cause.Quantum.Name, k.Cause.Multiple)
				}
				if !strings.Contains(d, "no known quantum fits") || !strings.Contains(d, "cause not named") {
					t.Errorf("refusal not said: %q", d)
				}
				return
			}
			if k.Cause == nil {
				t.Fatalf("no cause named, want %s: %s", c.wantName, d)
			}
			if k.Cause.Quantum.Name != c.wantName || k.Cause.Multiple != c.wantK {
				t.Errorf("named %s ×%d, want %s ×%d", k.Cause.Quantum.Name, k.Cause.Multiple, c.wantName, c.wantK)
			}
			if !strings.HasPrefix(d, c.wantIn+" sits at") {
				t.Errorf("description %q does not say where %s sits", d, c.wantIn)
			}
		})
	}
}

func TestDetectCountsAndSeparates(t *testing.T) {
	s := synth(1000, 0, 0, 0)
	for i := 0; i < 30; i++ {
		s = append(s, 10_200_000+int64(i)*10_000) // 10.2–10.5 ms
	}
	for i := 0; i < 7; i++ {
		s = append(s, 20_400_000+int64(i)*50_000) // 20.4–20.7 ms
	}
	s = append(s, 2_000_000, 90_000_000) // lone outliers: no cluster
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	cl := Detect(s, machine, Options{})
	if len(cl) != 2 {
		t.Fatalf("got %d clusters, want 2: %+v", len(cl), cl)
	}
	if cl[0].Count != 30 || cl[1].Count != 7 {
		t.Errorf("counts %d, %d; want 30, 7", cl[0].Count, cl[1].Count)
	}
	if cl[0].Cause == nil || cl[0].Cause.Multiple != 1 || cl[1].Cause == nil || cl[1].Cause.Multiple != 2 {
		t.Errorf("causes %+v %+v", cl[0].Cause, cl[1].Cause)
	}
	if w := cl[1].Where(s); w != "p99.9" {
		t.Errorf("only p99.9 sits in the 7-sample cluster below the max, got %q", w)
	}
}

func TestNoClusters(t *testing.T) {
	if cl := Detect(synth(1000, 0, 0, 0), machine, Options{}); len(cl) != 0 {
		t.Errorf("fast samples only: got clusters %+v", cl)
	}
	if cl := Detect(nil, machine, Options{}); cl != nil {
		t.Errorf("no samples: got %+v", cl)
	}
	// Samples spread over decades with wide gaps never pile up.
	s := []int64{600_000, 1_000_000, 1_700_000, 3_000_000, 5_000_000, 9_000_000, 16_000_000}
	if cl := Detect(s, machine, Options{}); len(cl) != 0 {
		t.Errorf("spread samples: got %+v", cl)
	}
}

func TestPileOnSmear(t *testing.T) {
	// A smear from 0.5 to 3.2 ms is not a pile; 60 samples at 10 ms are.
	s := synth(500, 400, 500_000, 3_200_000)
	if cl := Detect(s, machine, Options{}); len(cl) != 0 {
		t.Fatalf("smear alone: got clusters %+v", cl)
	}
	for i := 0; i < 60; i++ {
		s = append(s, 10_000_000+int64(i)*8_000)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	cl := Detect(s, machine, Options{})
	if len(cl) != 1 || cl[0].Count != 60 || cl[0].Cause == nil || cl[0].Cause.Quantum.Name != "Go preemption" {
		t.Fatalf("want one 60-sample Go cluster, got %+v", cl)
	}
}

func TestName(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want string
		k    int
	}{
		{10_300_000, "Go preemption", 1},
		{19_900_000, "Go preemption", 2},
		{12_000_000, "Go preemption", 1},
		{13_500_000, "", 0}, // between one and two periods: neither fits
		{20_100_000, "Go preemption", 2},
		{4_050_000, "timer tick (CONFIG_HZ=250)", 1},
		{2_800_000, "EEVDF slice", 2},
		{700_000, "", 0},
		{75_000_000, "", 0}, // beyond 6 sysmon periods
	} {
		m := Name(c.ns, machine)
		switch {
		case c.want == "" && m != nil:
			t.Errorf("%d ns: named %s, want none", c.ns, m.Quantum.Name)
		case c.want != "" && (m == nil || m.Quantum.Name != c.want || m.Multiple != c.k):
			t.Errorf("%d ns: got %+v, want %s ×%d", c.ns, m, c.want, c.k)
		}
	}
	if r := Name(20_100_000, machine).Reading(); r != "the woken goroutine waited for Go to preempt a hog (2 sysmon periods of 10 ms)" {
		t.Errorf("reading %q", r)
	}
}

func TestDefaultSlice(t *testing.T) {
	for _, c := range []struct {
		cpus int
		want int64
	}{{1, 750_000}, {2, 1_500_000}, {4, 2_250_000}, {8, 3_000_000}, {64, 3_000_000}} {
		if got := DefaultSliceNs(c.cpus); got != c.want {
			t.Errorf("DefaultSliceNs(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}

func FuzzDetect(f *testing.F) {
	f.Add(int64(10_000_000), int64(5), uint8(20))
	f.Fuzz(func(t *testing.T, base, step int64, n uint8) {
		if base < 0 || step < 0 || base > 1e12 || step > 1e10 {
			return
		}
		var s []int64
		for i := 0; i < int(n); i++ {
			s = append(s, base+int64(i)*step)
		}
		total := 0
		for _, c := range Detect(s, machine, Options{}) {
			if c.LowNs > c.MedianNs || c.MedianNs > c.HighNs || c.Count < 3 {
				t.Fatalf("bad cluster %+v", c)
			}
			total += c.Count
		}
		if total > len(s) {
			t.Fatalf("clusters hold %d of %d samples", total, len(s))
		}
	})
}
