package experiments

import (
	"fmt"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/quantum"
	"github.com/ctxlab/ctxlab/internal/result"
)

// goldenSamples are latencies with a pile at Go's preemption period
// (20 ms), one at the kernel slice (3 ms) and fast ones: enough for the
// quantum readings to say something.
func goldenSamples() []int64 {
	var s []int64
	for i := 0; i < 60; i++ {
		s = append(s, 40_000+int64(i)*900)
	}
	for i := 0; i < 25; i++ {
		s = append(s, 2_950_000+int64(i)*4_000)
	}
	for i := 0; i < 30; i++ {
		s = append(s, 19_500_000+int64(i)*50_000)
	}
	s = append(s, 41_000_000)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

func goldenSched() *metrics.Float64Histogram {
	return &metrics.Float64Histogram{Counts: []uint64{5, 40, 3, 0, 1}, Buckets: []float64{0, 1e-6, 1e-5, 1e-3, 1e-2, 1e-1}}
}

func writeAnalysis(b *strings.Builder, what string, r result.Arm) {
	var ms []string
	for k, v := range r.Metrics {
		ms = append(ms, fmt.Sprintf("%s=%.6g", k, v))
	}
	sort.Strings(ms)
	fmt.Fprintf(b, "%s\n  metrics %s\n", what, strings.Join(ms, " "))
	for _, n := range r.Notes {
		fmt.Fprintf(b, "  note %q\n", n)
	}
}

// TestGoldenAnalyze pins what each experiment's Analyzer adds to an arm
// from the runner's record: metrics and notes, line by line.
func TestGoldenAnalyze(t *testing.T) {
	qs := []quantum.Quantum{quantum.GoPreemption(), quantum.KernelSlice(3_000_000, "EEVDF", "read from the kernel"), quantum.Tick(250)}
	osQs := qs[1:]
	rec := func() *exp.Record {
		return &exp.Record{Ops: int64(len(goldenSamples())), WallNs: 5e8, Samples: goldenSamples(), SampleEvery: 1,
			CPUNs: 2e8, RunqNs: 5e7, SchedLatencies: goldenSched(), ThreadCPUNs: map[int]int64{goldenTID: 1e8}}
	}
	var b strings.Builder
	for _, c := range []struct {
		a      ifArm
		qs     []quantum.Quantum
		qnote  string
		status string
	}{
		{ifArm{shape: shapeTimer, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogSpin}, gmp: 1}, qs, "", result.StatusOK},
		{ifArm{shape: shapeTimer, gmp: 1}, osQs, "timer tick unknown (test)", result.StatusOK},
		{ifArm{shape: shapeChanPair, hog: hogSpec{N: 2, Place: hogProcess, Kind: hogStream}, gmp: 1}, osQs, "scheduler unknown, EEVDF assumed", result.StatusOK},
		{ifArm{shape: shapeFutex, hog: hogSpec{N: 1, Place: hogThread, Kind: hogSpin}, gmp: 3}, osQs, "", result.StatusOK},
		{ifArm{shape: shapeNetpoll, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogGosched}, gmp: 1}, qs, "", result.StatusOK},
		{ifArm{shape: shapeStarve, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogSpin}, gmp: 1, preemptOff: true}, qs, "", result.StatusTimedOut},
		{ifArm{shape: shapeStarve, hog: hogSpec{N: 1, Place: hogGoroutine, Kind: hogGosched}, gmp: 1, preemptOff: true}, qs, "", result.StatusOK},
	} {
		for _, started := range []bool{true, false} {
			if !started && c.a.shape != shapeStarve {
				continue
			}
			an := goldenIfAnalyzer(c.a, c.qs, c.qnote, started)
			r := result.Arm{Name: c.a.name(), Status: c.status, Median: 1.5e6}
			an.Analyze(rec(), &r)
			writeAnalysis(&b, fmt.Sprintf("interference %s (hog started %v)", c.a.name(), started), r)
			// Without samples or the runtime's histogram.
			r = result.Arm{Name: c.a.name(), Status: c.status}
			an.Analyze(&exp.Record{Ops: 10, CPUNs: -1, RunqNs: -1}, &r)
			writeAnalysis(&b, fmt.Sprintf("interference %s, empty record", c.a.name()), r)
		}
	}
	for _, an := range goldenOtherAnalyzers() {
		r := result.Arm{Name: an.name, Status: result.StatusOK, Median: 2500}
		s := result.Switches{Voluntary: 1.5, Involuntary: 0.25}
		mig := 0.125
		r.Switches, r.Migrations = &s, &mig
		an.a.Analyze(rec(), &r)
		writeAnalysis(&b, an.name, r)
		r = result.Arm{Name: an.name, Status: result.StatusOK}
		an.a.Analyze(&exp.Record{Ops: 0, CPUNs: -1, RunqNs: -1}, &r)
		writeAnalysis(&b, an.name+", empty record", r)
	}
	checkGolden(t, filepath.Join("testdata", "golden", "analyze.txt"), b.String())
}
