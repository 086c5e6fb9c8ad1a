package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
)

// csvHeader names the columns of CSV; units are in the names or in "unit".
var csvHeader = []string{"run", "experiment", "arm", "substrate", "mechanism", "placement", "gomaxprocs",
	"status", "unit", "median", "min", "max", "reps", "ops_per_rep", "p50_ns", "p99_ns",
	"sw_voluntary_per_op", "sw_involuntary_per_op", "migrations_per_op", "noisy", "spread", "reason"}

// CSV writes one row per arm, numbers unscaled (in the arm's unit, ns for
// percentiles), so a spreadsheet or a script can read them directly.
func CSV(w io.Writer, run *result.Run) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	for _, a := range run.Arms {
		row := []string{run.ID, a.Experiment, a.Name, a.Substrate, a.Mechanism, a.Placement, strconv.Itoa(a.GOMAXPROCS),
			a.Status, a.Unit, num(a.Median), num(a.Min), num(a.Max), strconv.Itoa(len(a.RepMeans)), strconv.FormatInt(a.Ops, 10),
			"", "", "", "", "", strconv.FormatBool(a.Noise.Noisy), num(a.Noise.Spread), a.Reason}
		if p := a.Percentiles; p != nil {
			row[14], row[15] = num(p.P50), num(p.P99)
		}
		if s := a.Switches; s != nil {
			row[16], row[17] = num(s.Voluntary), num(s.Involuntary)
		}
		if a.Migrations != nil {
			row[18] = num(*a.Migrations)
		}
		if a.Noise.Noisy && len(a.Noise.Reasons) > 0 {
			row[21] = strings.TrimSpace(row[21] + " noisy: " + strings.Join(a.Noise.Reasons, "; "))
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// num renders a figure with enough digits to round-trip, without exponent
// for ordinary sizes.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
