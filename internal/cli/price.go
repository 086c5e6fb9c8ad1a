package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/store"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// historyDepth is how many stored runs (newest first) are searched for one
// that can price a switch.
const historyDepth = 50

// costRun finds the cost of a switch: from this host's stored runs (--db
// or the default history), the newest quiet one that can give one
// (price.FromHistory), else from a 2-second calibration run now, by the
// one rule (price.DirectCost). It also
// returns the newest stored run with cachecost's per-switch arms, for the
// indirect cost (nil when none).
func costRun(ctx context.Context, o *WatchOptions) (price.Cost, *result.Run, error) {
	db, stderr := o.DB, o.Stderr
	var cost price.Cost
	var found bool
	var indirect *result.Run
	if s, err := openStore(ctx, db, false); err == nil {
		defer s.Close()
		host, _ := os.Hostname()
		entries, _ := s.List(ctx, historyDepth)
		runs := map[int]*result.Run{} // read once, for both searches
		get := func(i int) *result.Run {
			if run, ok := runs[i]; ok {
				return run
			}
			run, err := s.Get(ctx, entries[i].ID)
			if err != nil {
				run = nil // unreadable: skipped
			}
			runs[i] = run
			return run
		}
		here := func(e store.Entry) bool { return host == "" || e.Host == "" || e.Host == host } // else another machine's (imported) run
		cost, found = price.FromHistory(func(yield func(*result.Run) bool) {
			for i, e := range entries {
				if here(e) && !yield(get(i)) {
					return
				}
			}
		}, host)
		for i, e := range entries {
			if !here(e) {
				continue
			}
			if run := get(i); run != nil {
				if _, ok := price.IndirectAt(run, 1); ok {
					indirect = run
					break
				}
			}
		}
	} else {
		var ue *UsageError
		if !errors.As(err, &ue) { // a missing history is not an error here
			return cost, nil, err
		}
	}
	if found {
		return cost, indirect, nil
	}
	if o.noCalibrate {
		return cost, indirect, errors.New("no stored run of this host has a thread round trip to price a switch, and an interrupted watch does not calibrate")
	}
	// What a 2-second calibration measures: the first round trip the
	// experiments declare (a raw futex handoff of two threads on one CPU).
	calibrationArm, ok := price.CalibrationArm()
	if !ok {
		return cost, indirect, errors.New("no stored run of this host has a thread round trip to price a switch, and no experiment declares one to calibrate with")
	}
	fmt.Fprintln(stderr, "ctxlab: no stored run of this host has a thread round trip to price a switch; calibrating for about 2 s ("+calibrationArm+")")
	run, err := calibrate(ctx, calibrationArm)
	if err != nil {
		return cost, indirect, err
	}
	cost, found = price.DirectCost(run)
	if !found {
		a := run.Find(calibrationArm)
		why := "the arm did not run"
		if a != nil {
			why = a.Status + " " + a.Reason
		}
		return cost, indirect, fmt.Errorf("calibration gave no cost per switch: %s", why)
	}
	cost.Calibrated = true
	return cost, indirect, nil
}

// calibrate measures calibrationArm for about two seconds.
func calibrate(ctx context.Context, calibrationArm string) (*result.Run, error) {
	h := sysinfo.Detect()
	p := exp.Params{Suite: exp.SuiteDefault, Host: h, CPUs: h.OnlineCPUs}
	sel, err := exp.Select([]string{calibrationArm}, p)
	if err != nil {
		return nil, err
	}
	cfg := runner.ForSuite(exp.SuiteDefault)
	cfg.Reps, cfg.BenchTime, cfg.Timeout, cfg.Host = 3, 600*time.Millisecond, 20*time.Second, h
	cfg.ClockCost = measure.ClockCost()
	arms, exps, _ := runner.Run(ctx, cfg, sel)
	return &result.Run{Schema: result.SchemaVersion, ID: price.CalibrationID + time.Now().UTC().Format("15:04:05"), Env: h.Env, Arms: arms, Experiments: exps}, nil
}

// writePrice closes a watch or diagnose with the price of what it saw.
func writePrice(ctx context.Context, o *WatchOptions, w io.Writer, asJSON bool, seen price.Seen) error {
	p := priceOf(ctx, o, seen)
	if p == nil {
		return nil
	}
	return printPrice(w, asJSON, p)
}

// priceOf prices what was seen with this host's cost per switch; nil when
// --price=false, nothing ran, or no cost could be found (it says why on
// stderr).
func priceOf(ctx context.Context, o *WatchOptions, seen price.Seen) *price.Price {
	if !o.Price || seen.Seconds <= 0 {
		return nil
	}
	if ctx.Err() != nil { // stopped by a signal: price from the history only, never calibrate
		ctx = context.WithoutCancel(ctx)
		o.noCalibrate = true
	}
	cost, indirect, err := costRun(ctx, o)
	if err != nil {
		fmt.Fprintf(o.Stderr, "ctxlab: not priced: %v\n", err)
		return nil
	}
	o.curve, o.curveWhy = o.wssCurve(ctx, indirect)
	p := price.Of(seen, cost, o.curve)
	return &p
}

// priceRecord is the price's JSON line.
type priceRecord struct {
	Kind string `json:"kind"` // price
	price.Price
}

// printPrice writes the price: its lines, wrapped on a terminal, or its
// JSON line.
func printPrice(w io.Writer, asJSON bool, p *price.Price) error {
	if asJSON {
		return json.NewEncoder(termsafe.JSON(w)).Encode(priceRecord{"price", *p})
	}
	width := termWidth(w) // on a terminal, wrapped at spaces, never cut mid-word
	for _, l := range p.Lines {
		for _, part := range textcol.Wrap(l, width) {
			if _, err := fmt.Fprintln(w, part); err != nil {
				return err
			}
		}
	}
	return nil
}

// rssOf is the live processes' resident set, or 0.
func rssOf(root procstat.Root, pids []int) int64 {
	var total int64
	for _, pid := range pids {
		if p, err := root.ReadProc(pid); err == nil {
			total += p.RSSBytes
		}
	}
	return total
}
