package selfcheck

import (
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
)

// Experiment is the name a stored selfcheck's arms carry, and Suite its run's.
const (
	Experiment = "selfcheck"
	Suite      = result.SuiteSelfcheck
)

// Arms are the rows as a run's arms, so that a selfcheck is stored, shown,
// compared and reported like any run: one arm per row, named
// selfcheck/ARM, its figure the ratio (unit ×) with each round's ratio as
// a repetition, both sides' medians as metrics, and a check of the limit.
func Arms(rows []Row, cpu int) []result.Arm {
	var out []result.Arm
	seen := map[string]bool{}
	for _, r := range rows {
		// The arm's own name nested under the experiment: its experiment
		// is the first segment, so its substrate the second. An arm's
		// second reference adds vs=REFERENCE, so names stay unique.
		segs := append([]exp.Segment{exp.Seg(exp.ExperimentOf(r.Arm))}, exp.NameSegments(r.Arm)...)
		if seen[r.Arm] {
			segs = append(segs, exp.KV("vs", slug(r.Reference)))
		}
		seen[r.Arm] = true
		a := result.Arm{
			Name: exp.Key(Experiment, segs...).String(), Experiment: Experiment,
			Params: map[string]string{"arm": r.Arm, "reference": r.Reference, "limit": strconv.FormatFloat(r.Limit, 'f', -1, 64)},
			Op:     "ctxlab's median ÷ the reference's, one round", Unit: "×",
			Placement: "cpu=" + strconv.Itoa(cpu), CPUs: []int{cpu},
			Status: r.Status, Reason: r.Reason,
			Ops: int64(len(r.Ratios)), RepMeans: r.Ratios, Median: r.Ratio, Min: r.Min, Max: r.Max,
		}
		if len(segs) > 1 {
			a.Substrate = segs[1].String()
		}
		if len(segs) > 2 {
			a.Mechanism = segs[2].String()
		}
		if r.Status == result.StatusOK {
			a.Metrics = map[string]float64{"ctxlab-ns/op": medianOf(r.CtxlabNs), "reference-ns/op": medianOf(r.RefNs)}
			a.Noise.Spread = r.Max / r.Min
			a.Checks = []result.Check{{Name: "within " + strconv.FormatFloat(r.Limit, 'f', 2, 64) + "× its reference", Holds: !r.Over(),
				Detail: strconv.FormatFloat(r.Ratio, 'f', 3, 64) + "× (" + strconv.FormatFloat(r.Min, 'f', 3, 64) + "–" + strconv.FormatFloat(r.Max, 'f', 3, 64) + ")"}}
		}
		out = append(out, a)
	}
	return out
}

// FromRun reads a stored selfcheck back as the summary runs carry (nil
// when run is not one).
func FromRun(run *result.Run) *result.HarnessCheck {
	if run == nil || run.Suite != Suite {
		return nil
	}
	h := &result.HarnessCheck{RunID: run.ID, Time: run.Time}
	for _, e := range run.Experiments {
		if e.Name == Experiment && len(e.Findings) > 0 {
			h.Verdict = e.Findings[0]
		}
	}
	for _, a := range run.Arms {
		if a.Experiment != Experiment {
			continue
		}
		limit, _ := strconv.ParseFloat(a.Params["limit"], 64)
		h.Rows = append(h.Rows, result.HarnessRow{Arm: a.Params["arm"], Reference: a.Params["reference"], Status: a.Status, Reason: a.Reason,
			Ratio: a.Median, Min: a.Min, Max: a.Max, Limit: limit, Rounds: len(a.RepMeans)})
	}
	return h
}

// slug is a reference's words as one name segment: "raw pipe loop, two
// Go processes" is raw-pipe-loop-two-go-processes.
func slug(s string) string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return strings.Join(f, "-")
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return median(slices.Sorted(slices.Values(xs)))
}
