package measure

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestQuantileMatchesExactSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 50; trial++ {
		n := 1 + rng.Intn(5000)
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = rng.Int63n(1 << 30)
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			got := Quantile(xs, q)
			// Nearest rank: at least q of the values are <= got, and fewer than q are < got.
			le, lt := 0, 0
			for _, x := range xs {
				if x <= got {
					le++
				}
				if x < got {
					lt++
				}
			}
			if float64(le) < q*float64(n)-1e-9 || float64(lt) >= q*float64(n)+1e-9 {
				t.Fatalf("n=%d q=%v: got %d with %d <= and %d <", n, q, got, le, lt)
			}
		}
	}
	if Quantile(nil, 0.5) != 0 {
		t.Fatal("empty input should give 0")
	}
	if got := Quantile([]int64{7}, 0.999); got != 7 {
		t.Fatalf("single value: got %d", got)
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{7}, 7, 7, 7},
	} {
		in := append([]float64(nil), tc.in...)
		s := Summarize(tc.in)
		if s.Median != tc.med || s.Min != tc.min || s.Max != tc.max {
			t.Errorf("Summarize(%v) = %+v", tc.in, s)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("Summarize modified its input")
			}
		}
	}
	if sp := (Summary{Min: 2, Max: 3}).Spread(); sp != 1.5 {
		t.Errorf("spread = %v", sp)
	}
}

func TestLogBucketsCountEverySample(t *testing.T) {
	xs := []int64{0, 1, 1, 3, 4, 900, 1000, 1024, 1 << 20}
	bs := LogBuckets(xs)
	var total int64
	for i, b := range bs {
		total += b.Count
		if b.High <= b.Low {
			t.Fatalf("bucket %d has bounds %d..%d", i, b.Low, b.High)
		}
		if i > 0 && b.Low != bs[i-1].High {
			t.Fatalf("buckets not contiguous at %d", i)
		}
	}
	if total != int64(len(xs)) {
		t.Fatalf("buckets hold %d samples, want %d", total, len(xs))
	}
	last := bs[len(bs)-1]
	if !(last.Low <= 1<<20 && 1<<20 < last.High) {
		t.Fatalf("max sample not in last bucket %+v", last)
	}
}

func TestSamplerEveryAndNoAlloc(t *testing.T) {
	s := NewSampler(1000, 100, 1)
	if s.Every() != 10 {
		t.Fatalf("every = %d, want 10", s.Every())
	}
	s2 := NewSampler(10, 100, 4)
	if s2.Every() != 4 {
		t.Fatalf("minEvery not applied: %d", s2.Every())
	}
	allocs := testing.AllocsPerRun(5, func() {
		for i := 0; i < 1000; i++ {
			t0 := s.Start(i)
			s.Stop(t0)
		}
	})
	if allocs != 0 {
		t.Fatalf("sampling allocates %v times per loop", allocs)
	}
	if s.Len() == 0 || s.Len() > 101 {
		t.Fatalf("recorded %d samples", s.Len())
	}
	var nilS *Sampler
	if nilS.Start(0) != 0 || nilS.Len() != 0 {
		t.Fatal("nil sampler must be inert")
	}
	nilS.Stop(5)
}

// Unsampled skips exactly the ops Start would not sample, and Take takes
// the one it would: a loop that runs skipped ops in bulk samples the same
// ops as one calling Start per op.
func TestSamplerUnsampledMatchesStart(t *testing.T) {
	perOp, bulk := NewSampler(100, 100, 7), NewSampler(100, 100, 7)
	var want, got []int
	for i := 0; i < 100; i++ {
		if perOp.Start(i) != 0 {
			want = append(want, i)
		}
	}
	for i := 0; i < 100; {
		if k := bulk.Unsampled(min(5, 100-i)); k > 0 { // runs of at most 5
			i += k
			continue
		}
		if !bulk.Take() { // as mech's sections take a sampled op
			t.Fatalf("op %d: Unsampled returned 0 but Take did not sample", i)
		}
		if bulk.Take() {
			t.Fatalf("op %d: Take took a second op at once", i)
		}
		got = append(got, i)
		i++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bulk loop sampled ops %v, per-op loop %v", got, want)
	}
	var nilS *Sampler
	if nilS.Unsampled(9) != 9 || nilS.Take() {
		t.Fatal("a nil sampler samples nothing: Unsampled(9) must be 9, Take false")
	}
	if a, b := nilS.SectionNow(), nilS.SectionNow(); b < a {
		t.Fatalf("SectionNow went backwards: %d then %d", a, b)
	}
}

// Rollback drops exactly what was recorded since Mark, restarts the
// sampling countdown there, and neither allocates.
func TestSamplerMarkRollback(t *testing.T) {
	s := NewSampler(100, 100, 3)
	start := func(n int) (sampled int) {
		for i := 0; i < n; i++ {
			if t0 := s.Start(i); t0 != 0 {
				sampled++
			}
		}
		return sampled
	}
	s.Record(10)
	s.Record(20)
	start(4) // leaves the countdown mid-way
	s.Mark()
	before := start(5)
	s.Record(1e9)
	s.Record(2e9)
	s.Rollback()
	if s.Len() != 2 {
		t.Fatalf("%d samples after rollback, want the 2 recorded before Mark", s.Len())
	}
	if got := s.Sorted(); got[0] != 10 || got[1] != 20 {
		t.Fatalf("samples %v, want [10 20]", got)
	}
	if again := start(5); again != before {
		t.Fatalf("countdown not restored: %d sampled ops after rollback, %d before", again, before)
	}
	s.Rollback()
	s.Record(30)
	if s.Len() != 3 {
		t.Fatalf("a second rollback to the same mark, then one record: %d samples", s.Len())
	}
	allocs := testing.AllocsPerRun(5, func() { s.Mark(); s.Rollback() })
	if allocs != 0 {
		t.Fatalf("Mark/Rollback allocate %v times", allocs)
	}
	var nilS *Sampler
	nilS.Mark()
	nilS.Rollback()
}

func TestBTimerCountsOnlyTimedRegion(t *testing.T) {
	var begins, ends int
	b := NewB(context.Background(), 10, nil, func(begin bool) {
		if begin {
			begins++
		} else {
			ends++
		}
	})
	b.StartTimer()
	b.ResetTimer()
	b.StopTimer()
	b.StopTimer()
	if begins != 2 || ends != 1 {
		t.Fatalf("snapshots: %d begins, %d ends", begins, ends)
	}
	if b.Elapsed() < 0 {
		t.Fatal("negative elapsed")
	}
}

func TestClockCostPositive(t *testing.T) {
	if c := ClockCost(); c <= 0 {
		t.Fatalf("clock cost %v", c)
	}
}

func TestSelfSwitchesCountAThreadBlocking(t *testing.T) {
	v0, _, err := SelfSwitches()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan int)
	go func() {
		for i := 0; i < 20; i++ {
			var ts = unix.Timespec{Nsec: 100000}
			unix.Nanosleep(&ts, nil) // a real sleep: a voluntary switch
		}
		close(ch)
	}()
	<-ch
	v1, _, _ := SelfSwitches()
	if v1-v0 < 20 {
		t.Fatalf("20 sleeps counted as %d voluntary switches", v1-v0)
	}
}

// Counters: every event is either supported or says why not, never a bare failure.
func TestProbeEventsReportAReason(t *testing.T) {
	for _, ev := range Events {
		ok, why := ProbeEvent(ev)
		if !ok && why == "" {
			t.Errorf("%s: unsupported without a reason", ev.Name)
		}
		if ok && why != "" {
			t.Errorf("%s: supported but with reason %q", ev.Name, why)
		}
		t.Logf("%s: ok=%v %s", ev.Name, ok, why)
	}
}

func TestUnsupportedReasons(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{unix.ENOENT, "not offered"},
		{unix.EOPNOTSUPP, "not offered"},
		{unix.EACCES, "perf_event_paranoid"},
		{unix.EPERM, "perf_event_paranoid"},
		{unix.ENOSYS, "not available"},
		{errors.New("odd"), "odd"},
	} {
		if got := UnsupportedReason(tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("UnsupportedReason(%v) = %q, want it to mention %q", tc.err, got, tc.want)
		}
	}
}

func TestAffinityRoundTrip(t *testing.T) {
	cpus, err := Affinity()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("affinity: %v %v", cpus, err)
	}
}

func TestSyscallPath(t *testing.T) {
	// The runtime's bookkeeping is a few atomic operations and a state
	// change: it cannot cost more than the system call itself several
	// times over, whatever the machine.
	raw, extra := SyscallPath()
	if raw <= 0 || extra > 5*raw {
		t.Fatalf("SyscallPath() = %v, %v: want a positive raw cost and an extra below 5× it", raw, extra)
	}
}
