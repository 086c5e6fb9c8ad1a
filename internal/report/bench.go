package report

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/perf/benchfmt"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Bench writes the run in the Go benchmark format, so benchstat can compare
// two ctxlab runs: one line per repetition of each arm, named
// Benchmark<Arm>-<GOMAXPROCS>, with the repetition's per-op mean in the arm's
// unit (ns/op for most). The arm-wide figures — OS switches per op
// (ctxsw/op), migrations/op, sampled p50-ns and p99-ns and the arm's own
// metrics — are on the first repetition's line only, since they are not
// measured per repetition. Arms without figures become "#" comment lines,
// which benchfmt readers skip.
func Bench(w io.Writer, run *result.Run) error {
	// The run id goes in a comment: as a config key it would differ
	// between two runs and make benchstat put them in separate tables
	// instead of side by side.
	if _, err := fmt.Fprintf(w, "# ctxlab run %s, %s, suite %s\n", run.ID, run.Time.UTC().Format("2006-01-02T15:04:05Z"), run.Suite); err != nil {
		return err
	}
	bw := benchfmt.NewWriter(w)
	res := &benchfmt.Result{}
	res.SetConfig("goos", "linux")
	res.SetConfig("goarch", goarch)
	if run.Env.CPUModel != "" {
		res.SetConfig("cpu", run.Env.CPUModel)
	}
	res.SetConfig("pkg", "ctxlab")
	if run.Env.Hostname != "" {
		res.SetConfig("host", run.Env.Hostname)
	}
	if run.Env.Kernel != "" {
		res.SetConfig("kernel", run.Env.Kernel)
	}
	for i := range res.Config {
		res.Config[i].File = true
	}
	for _, a := range run.Arms {
		reps := a.RepMeans
		if len(reps) == 0 && a.Status == result.StatusOK && a.Median > 0 {
			reps = []float64{a.Median}
		}
		if len(reps) == 0 {
			reason := a.Status
			if a.Reason != "" {
				reason += ": " + a.Reason
			}
			// Through the writer so config lines stay in order.
			if _, err := fmt.Fprintf(w, "# %s: %s\n", a.Name, oneLine(reason)); err != nil {
				return err
			}
			continue
		}
		res.Name = benchfmt.Name(benchName(a))
		res.Iters = int(a.Ops)
		if res.Iters <= 0 {
			res.Iters = 1
		}
		for i, v := range reps {
			res.Values = res.Values[:0]
			res.Values = append(res.Values, benchfmt.Value{Value: v, Unit: benchUnit(a.Unit)})
			if i == 0 {
				res.Values = append(res.Values, armWide(a)...)
			}
			if err := bw.Write(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// armWide are the figures measured over the whole arm.
func armWide(a result.Arm) []benchfmt.Value {
	var vs []benchfmt.Value
	if s := a.Switches; s != nil {
		vs = append(vs, benchfmt.Value{Value: s.Total(), Unit: "ctxsw/op"})
	}
	if a.Migrations != nil {
		vs = append(vs, benchfmt.Value{Value: *a.Migrations, Unit: "migrations/op"})
	}
	if p := a.Percentiles; p != nil && p.Samples > 0 {
		vs = append(vs, benchfmt.Value{Value: p.P50, Unit: "p50-ns"}, benchfmt.Value{Value: p.P99, Unit: "p99-ns"})
	}
	keys := make([]string, 0, len(a.Metrics))
	for k := range a.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vs = append(vs, benchfmt.Value{Value: a.Metrics[k], Unit: benchUnit(k)})
	}
	return vs
}

// benchName is the arm name with a capital first letter, as go test names
// benchmarks, spaces replaced, and the GOMAXPROCS suffix.
func benchName(a result.Arm) string {
	n := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, a.Name)
	if n != "" {
		r := []rune(n)
		r[0] = unicode.ToUpper(r[0])
		n = string(r)
	}
	if a.GOMAXPROCS > 0 {
		n += fmt.Sprintf("-%d", a.GOMAXPROCS)
	}
	return n
}

func benchUnit(u string) string {
	if u == "" {
		return "ns/op"
	}
	return strings.ReplaceAll(strings.TrimSpace(u), " ", "-")
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// goarch is written into the bench header; the result model does not record
// the architecture, and runs are usually rendered where they were measured.
// Tests fix it so golden files do not depend on the machine.
var goarch = runtime.GOARCH
