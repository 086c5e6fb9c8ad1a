package experiments

import (
	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/mech"
	"github.com/ctxlab/ctxlab/internal/quantum"
)

// goldenTID is the slice arm's worker thread in the analyzer golden.
const goldenTID = 4242

// goldenIfAnalyzer is an interference arm's analysis as its bench holds
// it after a run: the starve shape's counts (the hog started after 20 of
// 37 wake-ups, or never).
func goldenIfAnalyzer(a ifArm, qs []quantum.Quantum, qnote string, started bool) exp.Analyzer {
	x := &ifBench{arm: a, quanta: qs, qnote: qnote}
	if a.shape == shapeStarve {
		s := &starveShape{kind: a.hog.Kind, samples: 37, hogAfter: -1}
		if started {
			s.hogAfter = 20
		}
		x.shape = s
	}
	return x
}

// goldenOtherAnalyzers are the other experiments' analyses.
func goldenOtherAnalyzers() []struct {
	name string
	a    exp.Analyzer
} {
	return []struct {
		name string
		a    exp.Analyzer
	}{
		{"ring n=10", &Ring{N: 10}},
		{"cachecost sweep", &sweep{}},
		{"cachecost slice", &sliceBench{cachePair: cachePair{a: &mech.Thread{TID: goldenTID}}, chunkA: 4096}},
		{"cachecost per-switch", &perSwitchBench{cachePair{a: &mech.Thread{TID: goldenTID}}}},
		{"yield thread k=1", &Yield{K: 1, kind: &threadYields{}}},
		{"yield thread k=10", &Yield{K: 10, kind: &threadYields{}}},
		{"yield goroutine k=10", &Yield{K: 10, kind: goroutineYields{}}},
	}
}
