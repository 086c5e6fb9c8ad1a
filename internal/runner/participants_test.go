package runner

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/testload"
)

// sleepers: two locked threads; per op, the declared one sleeps once (one
// voluntary switch) and the other, which is not a participant, sleeps
// three times. Only the declared thread's switch may be counted.
type sleepers struct {
	tids [2]int
	reqs [2]chan int
	done chan struct{}
}

func openSleepers(t *testing.T, cpus []int) *sleepers {
	s := &sleepers{reqs: [2]chan int{make(chan int), make(chan int)}, done: make(chan struct{}, 2)}
	for k := 0; k < 2; k++ {
		ready := make(chan struct{})
		go func(k int) {
			runtime.LockOSThread()
			s.tids[k] = unix.Gettid()
			if k == 0 {
				if err := measure.PinThread(cpus); err != nil {
					t.Error(err)
				}
			}
			close(ready)
			naps := 1 + 2*k
			ts := unix.NsecToTimespec(1000)
			for n := range s.reqs[k] {
				for i := 0; i < n*naps; i++ {
					unix.Nanosleep(&ts, nil)
				}
				s.done <- struct{}{}
			}
		}(k)
		<-ready
	}
	return s
}

func (s *sleepers) Run(b *measure.B) error {
	s.reqs[0] <- b.N
	s.reqs[1] <- b.N
	<-s.done
	<-s.done
	return nil
}
func (s *sleepers) Close() error                   { close(s.reqs[0]); close(s.reqs[1]); return nil }
func (s *sleepers) Participants() exp.Participants { return exp.Threads(s.tids[0]) }

// The runner counts switches, CPU time and counters on exactly the
// declared thread, and records where it may run.
func TestParticipantsCountedExactly(t *testing.T) {
	cpus, err := measure.Affinity()
	if err != nil || len(cpus) == 0 {
		t.Skip("no affinity:", err)
	}
	pin := cpus[len(cpus)-1:]
	var s *sleepers
	var obs Observation
	c := testConfig()
	c.Counters = true
	c.Observe = func(o Observation) { obs = o }
	r := Arm(context.Background(), c, &exp.Spec{Name: "t", Op: "nap"}, exp.Arm{Name: "t/naps",
		Open: func(context.Context) (exp.Bench, error) { s = openSleepers(t, pin); return s, nil }})
	if r.Status != result.StatusOK {
		t.Fatalf("%s: %s", r.Status, r.Reason)
	}
	sw := r.Switches.Total()
	// One nap is one voluntary switch (a preemption may add a little);
	// counting the other thread too would give about 4.
	if sw < 0.9 || sw > 1.8 {
		t.Errorf("%.2f switches per op, want ≈ 1: the declared thread's only", sw)
	}
	if len(obs.CounterTIDs) != 1 || obs.CounterTIDs[0] != s.tids[0] {
		t.Errorf("counters on %v, want exactly [%d]", obs.CounterTIDs, s.tids[0])
	}
	if obs.Switches > obs.WholeSwitches {
		t.Errorf("participants %d > whole process %d", obs.Switches, obs.WholeSwitches)
	}
	if len(r.CPUs) != 1 || r.CPUs[0] != pin[0] {
		t.Errorf("cpus %v, want the declared thread's %v", r.CPUs, pin)
	}
	if r.CPUNsPerOp == nil || *r.CPUNsPerOp <= 0 || r.RunqNsPerOp == nil {
		t.Errorf("cpu %v runq %v per op", r.CPUNsPerOp, r.RunqNsPerOp)
	}
	if r.DurationNs <= 0 {
		t.Errorf("duration %d", r.DurationNs)
	}
}

// fakeGauge reads 30, 10, 20 bytes per worker.
type fakeGauge struct{ n int }

func (g *fakeGauge) Read(ctx context.Context) (exp.Reading, error) {
	g.n++
	v := []float64{30, 10, 20}[(g.n-1)%3]
	return exp.Reading{Value: v, Ops: 7, Metrics: map[string]float64{"x": v * 2}}, nil
}
func (g *fakeGauge) Close() error                   { return nil }
func (g *fakeGauge) Participants() exp.Participants { return exp.WholeProcess() }

func TestGaugeSummarisedLikeAFigure(t *testing.T) {
	c := cfg()
	c.Reps = 3
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/gauge", Unit: "B/op",
		Open: func(context.Context) (exp.Bench, error) { return &fakeGauge{}, nil }})
	if r.Status != result.StatusOK || r.Median != 20 || r.Min != 10 || r.Max != 30 || r.Ops != 7 || len(r.RepMeans) != 3 {
		t.Fatalf("%+v", r)
	}
	if r.Metrics["x"] != 40 || !r.Noise.Noisy || r.Unit != "B/op" || r.DurationNs <= 0 {
		t.Fatalf("metrics %v noise %+v unit %q", r.Metrics, r.Noise, r.Unit)
	}
}

// failingSleepers is sleepers whose second timed repetition naps twenty
// times per op on the declared thread, then fails.
type failingSleepers struct {
	*sleepers
	timed, runs int
}

func (f *failingSleepers) StartTimed(n int) { f.timed = n }

func (f *failingSleepers) Run(b *measure.B) error {
	if f.timed == 0 {
		return f.sleepers.Run(b)
	}
	f.runs++
	if f.runs < 2 {
		return f.sleepers.Run(b)
	}
	f.reqs[0] <- 20 * b.N
	f.reqs[1] <- 0
	<-f.done
	<-f.done
	return errors.New("worker broke")
}

// A repetition that fails is not counted: neither its ops nor what the
// probes saw during it (its switches would otherwise be spread over the
// finished repetitions' ops).
func TestFailedRepetitionRolledBack(t *testing.T) {
	cpus, err := measure.Affinity()
	if err != nil || len(cpus) == 0 {
		t.Skip("no affinity:", err)
	}
	c := testConfig()
	c.Reps = 3
	c.Counters = true
	var obs Observation
	c.Observe = func(o Observation) { obs = o }
	prev := counterSource
	counterSource = &fakeSource{reads: map[int]uint64{}}
	defer func() { counterSource = prev }()
	w := testload.Start()
	r := Arm(context.Background(), c, &exp.Spec{Name: "t", Op: "nap"}, exp.Arm{Name: "t/naps",
		Open: func(context.Context) (exp.Bench, error) {
			return &failingSleepers{sleepers: openSleepers(t, cpus[len(cpus)-1:])}, nil
		}})
	if r.Status == result.StatusFailed && len(r.RepMeans) == 0 && strings.Contains(r.Reason, " per repetition (< ") {
		// Its naps took so long to wake from that one repetition held too
		// few ops to keep a figure.
		w.SkipIfStarved(t, "the napping threads")
	}
	if r.Status != result.StatusFailed || len(r.RepMeans) != 1 {
		t.Fatalf("status %s (%s), %d repetition means; want failed after 1", r.Status, r.Reason, len(r.RepMeans))
	}
	if r.Switches == nil {
		t.Fatal("no switches recorded for the finished repetition")
	}
	if sw := r.Switches.Total(); sw < 0.9 || sw > 3 {
		t.Errorf("%.2f switches per op, want ≈ 1 (the failed repetition's 20 per op dropped)", sw)
	}
	if obs.Switches > obs.WholeSwitches {
		t.Errorf("participants %d > whole process %d", obs.Switches, obs.WholeSwitches)
	}
}

// recordingLoop records one known latency per timed repetition (100 ns,
// 200 ns …); repetition failAt records five 1 s latencies, then fails.
type recordingLoop struct {
	timed   bool
	rep     int
	failAt  int     // the repetition that fails
	starve  bool    // it fails by running out the arm's time, not by breaking
	samples []int64 // what the analysis hook was handed
}

func (f *recordingLoop) StartTimed(int) { f.timed = true }

func (f *recordingLoop) Run(b *measure.B) error {
	x := 0
	for i := 0; i < b.N; i++ {
		x += i ^ (x >> 3)
	}
	_ = x
	if !f.timed {
		return nil
	}
	f.rep++
	if f.rep < f.failAt {
		b.S.Record(int64(100 * f.rep))
		return nil
	}
	for i := 0; i < 5; i++ {
		b.S.Record(1e9)
	}
	if f.starve {
		<-b.Context().Done()
		return b.Context().Err()
	}
	return errors.New("worker broke")
}
func (f *recordingLoop) Close() error                           { return nil }
func (f *recordingLoop) Participants() exp.Participants         { return exp.Participants{} }
func (f *recordingLoop) Analyze(rec *exp.Record, a *result.Arm) { f.samples = rec.Samples }

// A failed repetition's latency samples are dropped with its ops and its
// probe counts: the percentiles and the analysis hook see only the
// repetitions that finished.
func TestFailedRepetitionSamplesRolledBack(t *testing.T) {
	c := cfg()
	c.ClockCost = 0.001 // sample as often as MaxSamples allows
	f := &recordingLoop{failAt: 3}
	r := Arm(context.Background(), c, spec, exp.Arm{Name: "fake/recording",
		Open: func(context.Context) (exp.Bench, error) { return f, nil }})
	if r.Status != result.StatusFailed || len(r.RepMeans) != 2 {
		t.Fatalf("status %s (%s), %d repetition means; want failed after 2", r.Status, r.Reason, len(r.RepMeans))
	}
	p := r.Percentiles
	if p == nil || p.Samples != 2 || p.Max != 200 {
		t.Fatalf("percentiles %+v: want the 2 samples of the finished repetitions, max 200 ns", p)
	}
	if len(f.samples) != 2 || f.samples[0] != 100 || f.samples[1] != 200 {
		t.Fatalf("the analysis hook got samples %v, want [100 200]", f.samples)
	}

	// A first repetition that broke keeps nothing either.
	f = &recordingLoop{failAt: 1}
	r = Arm(context.Background(), c, spec, exp.Arm{Name: "fake/recording",
		Open: func(context.Context) (exp.Bench, error) { return f, nil }})
	if r.Status != result.StatusFailed || r.Percentiles != nil || len(f.samples) != 0 {
		t.Fatalf("status %s, percentiles %+v, analysis samples %v: want failed with no samples", r.Status, r.Percentiles, f.samples)
	}

	// When no repetition finished because the arm's time ran out, the
	// one's sampled ops are all the arm has (a starved timer): they stay,
	// and a note says whence.
	f = &recordingLoop{failAt: 1, starve: true}
	r = Arm(context.Background(), c, spec, exp.Arm{Name: "fake/recording", Timeout: 100 * time.Millisecond,
		Open: func(context.Context) (exp.Bench, error) { return f, nil }})
	if r.Status != result.StatusTimedOut || len(r.RepMeans) != 0 || r.Percentiles == nil || r.Percentiles.Samples != 5 {
		t.Fatalf("status %s, means %v, percentiles %+v: want timed out with the 5 samples of the first repetition", r.Status, r.RepMeans, r.Percentiles)
	}
	if !strings.Contains(strings.Join(r.Notes, "|"), "no repetition finished") || len(f.samples) != 5 {
		t.Fatalf("notes %q, analysis samples %v", r.Notes, f.samples)
	}
}

// failingGauge reads 10, then 20, then fails with a reading of 1e9.
type failingGauge struct{ n int }

func (g *failingGauge) Read(ctx context.Context) (exp.Reading, error) {
	g.n++
	if g.n == 3 {
		return exp.Reading{Value: 1e9, Ops: 7, Metrics: map[string]float64{"x": 1e9}}, errors.New("worker broke")
	}
	return exp.Reading{Value: float64(10 * g.n), Ops: 7, Metrics: map[string]float64{"x": float64(10 * g.n)}}, nil
}
func (g *failingGauge) Close() error                   { return nil }
func (g *failingGauge) Participants() exp.Participants { return exp.WholeProcess() }

// A gauge's failed reading is not kept either: value or metrics.
func TestGaugeFailedReadingDropped(t *testing.T) {
	r := Arm(context.Background(), cfg(), spec, exp.Arm{Name: "fake/gauge", Unit: "B/op",
		Open: func(context.Context) (exp.Bench, error) { return &failingGauge{}, nil }})
	if r.Status != result.StatusFailed || len(r.RepMeans) != 2 || r.Max != 20 || r.Metrics["x"] > 20 {
		t.Fatalf("status %s, means %v, max %v, metrics %v: want failed with the 2 good readings", r.Status, r.RepMeans, r.Max, r.Metrics)
	}
}
