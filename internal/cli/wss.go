package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
	"github.com/ctxlab/ctxlab/internal/wss"
)

// The working-set hooks of watch, diagnose and diagnose --vary: the
// sampling itself is package wss; here are its flag, the refill curve it
// is priced with (stored, or calibrated briefly) and its printing.

// wssOn says whether --wss samples the working set.
func (o *WatchOptions) wssOn() bool { on, _ := wss.Parse(o.WSS); return on }

// wssCurve is the run with this host's refill curve: indirect (the newest
// stored one, costRun's search) or, when there is none and a working set
// is to be priced, a brief calibration; nil and why when there is none.
func (o *WatchOptions) wssCurve(ctx context.Context, indirect *result.Run) (*result.Run, string) {
	if indirect != nil {
		return indirect, ""
	}
	arms, ok := price.CurveArms()
	if !ok {
		return nil, "no experiment declares the arms of a refill curve"
	}
	none := fmt.Sprintf("no stored run of this host has the refill curve (ctxlab run '%s')", strings.Join(arms, "' '"))
	switch {
	case !o.wantCurve:
		return nil, none
	case o.noCalibrate:
		return nil, none + ", and an interrupted run does not calibrate"
	}
	fmt.Fprintf(o.Stderr, "ctxlab: %s; calibrating for about 8 s to price the working set (--wss off skips it)\n", none)
	h := sysinfo.Detect()
	sel, err := exp.Select(arms, exp.Params{Suite: exp.SuiteDefault, Host: h, CPUs: h.OnlineCPUs})
	if err != nil {
		return nil, "calibration: " + err.Error()
	}
	cfg := runner.ForSuite(exp.SuiteDefault)
	cfg.Reps, cfg.BenchTime, cfg.Timeout, cfg.Host = 3, 100*time.Millisecond, 20*time.Second, h
	cfg.ClockCost = measure.ClockCost()
	got, exps, _ := runner.Run(ctx, cfg, sel)
	run := &result.Run{Schema: result.SchemaVersion, ID: price.CalibrationID + time.Now().UTC().Format("15:04:05"), Env: h.Env, Arms: got, Experiments: exps}
	if len(price.IndirectCurve(run)) == 0 {
		return nil, none + "; the calibration measured no point of it (a busy machine preempts its round trips)"
	}
	return run, ""
}

// wssPrice closes a watch or diagnose: the working set r (nil with
// --wss off) beside the caches, then the price of what was seen, priced
// with it; check is the hardware counters' word on the estimate. It
// returns the price (nil when not priced).
func (o *WatchOptions) wssPrice(ctx context.Context, w io.Writer, asJSON bool, seen price.Seen, r *wss.Reading, check string) (*price.Price, error) {
	if r.OK() {
		seen.WorkingSetBytes, seen.WorkingSetHow = r.Refill(sysinfo.Detect().Caches)
	}
	o.wantCurve = r.OK()
	pr := priceOf(ctx, o, seen)
	cpu := 0.0
	if seen.HasCPU {
		cpu = float64(seen.CPUNs)
	}
	o.readWSS(r, float64(seen.Vol+seen.Invol), cpu, check)
	if err := printWSS(w, asJSON, r); err != nil {
		return pr, err
	}
	if pr == nil {
		return nil, nil
	}
	return pr, printPrice(w, asJSON, pr)
}

// readWSS puts the reading into words beside this host's caches, the
// program's switches and CPU time and the refill curve the price found
// (o.curve), with check — the hardware counters' figures, or why there
// are none — as the estimate's check.
func (o *WatchOptions) readWSS(r *wss.Reading, switches, cpuNs float64, check string) {
	if r == nil {
		return
	}
	why := o.curveWhy
	if !o.Price {
		why = "--price=false"
	} else if o.curve == nil && why == "" {
		why = "no cost per switch was found, so nothing was priced"
	}
	h := sysinfo.Detect()
	r.Read(wss.Setting{Caches: h.Caches, CPUs: len(h.OnlineCPUs), Switches: switches, CPUNs: cpuNs, Curve: o.curve, CurveWhy: why})
	if r.OK() && check != "" {
		r.Lines = append(r.Lines, "  "+check)
	}
}

// counterCheck is the hardware counters' IPC and LLC misses, the
// estimate's check, or why the machine has none.
func counterCheck(recs []CounterRecord) string {
	val := map[string]float64{}
	why := ""
	for _, r := range recs {
		switch {
		case r.Value != nil:
			val[r.Name] = float64(*r.Value)
		case why == "" && (r.Name == "instructions" || r.Name == "cycles"):
			why = r.Name + ": unsupported: " + r.Unsupported
		}
	}
	ins, cyc := val["instructions"], val["cycles"]
	if ins <= 0 || cyc <= 0 {
		if why == "" {
			why = "instructions and cycles were not counted"
		}
		return "check: no hardware counters here (" + why + "): the estimate stands without one"
	}
	l := fmt.Sprintf("check (hardware counters): IPC %.2f", ins/cyc)
	if llc, ok := val["LLC-load-misses"]; ok {
		l += fmt.Sprintf(", LLC misses %.3g per 1k instructions", 1000*llc/ins)
	}
	return l + " — a low IPC with many LLC misses bears a large indirect cost out"
}

// printWSS writes the reading: its lines, wrapped on a terminal, or its
// JSON record.
func printWSS(w io.Writer, asJSON bool, r *wss.Reading) error {
	if r == nil {
		return nil
	}
	if asJSON {
		return json.NewEncoder(termsafe.JSON(w)).Encode(r)
	}
	width := termWidth(w)
	for _, l := range r.Lines {
		for _, part := range textcol.Wrap(l, width) {
			if _, err := fmt.Fprintln(w, part); err != nil {
				return err
			}
		}
	}
	return nil
}
