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
// Benchmark<Arm>-<N>, with the repetition's mean per op. Only figures
// measured per repetition are written, so benchstat sees n = repetitions
// for every unit and never a one-sample table: an arm's rep_metrics (the
// CPU time and switches of each run of diagnose --vary) go on the same
// lines, a unit each; arm-wide figures (switches, percentiles, metrics)
// are in the JSON, CSV and table formats. Units are
// benchstat's: a time per op is ns/op (benchstat shows sec/op), whatever
// the arm's op is (the arm's name says it). N is the run's GOMAXPROCS for
// every arm, so it is stable between arms and runs on one machine. Arms without
// figures, and those whose repetitions held too few ops, become "#"
// comment lines, which benchfmt readers skip.
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
		if len(a.RepMeans) == 0 || a.Status == result.StatusTooFewOps { // too few ops: no answer for benchstat either
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
		res.Name = benchfmt.Name(benchName(a, run.Env.GOMAXPROCS))
		res.Iters = int(a.Ops)
		if res.Iters <= 0 {
			res.Iters = 1
		}
		unit := BenchUnit(a.Unit)
		var extra []string // rep_metrics with a figure for every repetition
		for n, vs := range a.RepMetrics {
			if len(vs) == len(a.RepMeans) {
				extra = append(extra, n)
			}
		}
		sort.Strings(extra)
		for i, v := range a.RepMeans {
			res.Values = append(res.Values[:0], benchfmt.Value{Value: v, Unit: unit})
			for _, n := range extra {
				res.Values = append(res.Values, benchfmt.Value{Value: a.RepMetrics[n][i], Unit: BenchUnit(n)})
			}
			if err := bw.Write(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// benchName is the arm name with a capital first letter, as go test names
// benchmarks, spaces replaced, and the run's GOMAXPROCS as the -N suffix.
// The arm name alone identifies the configuration (an arm run at several
// GOMAXPROCS values has gomaxprocs= in its name).
func benchName(a result.Arm, procs int) string {
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
	if procs > 0 {
		n += fmt.Sprintf("-%d", procs)
	}
	return n
}

// BenchUnit is the benchstat unit for an arm's unit: a time per anything is
// ns/op (the arm's op), bytes are B/op, other units become x/op with x
// plain words.
func BenchUnit(u string) string {
	u = strings.TrimSpace(u)
	switch {
	case u == "" || strings.HasPrefix(u, "ns/"):
		return "ns/op"
	case u == "bytes" || strings.HasPrefix(u, "B/"):
		return "B/op"
	}
	what, _, _ := strings.Cut(u, "/")
	what = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return '-'
	}, what)
	return strings.Trim(what, "-") + "/op"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// goarch is written into the bench header; the result model does not record
// the architecture, and runs are usually rendered where they were measured.
// Tests fix it so golden files do not depend on the machine.
var goarch = runtime.GOARCH
