package result

import (
	"fmt"
	"time"
)

// HarnessCheck is the last `ctxlab selfcheck` on this host, as a run, `ctxlab
// env` and the report carry it: how far each of ctxlab's arms read from an
// instrument ctxlab did not write, measured side by side on this machine.
type HarnessCheck struct {
	RunID   string       `json:"run_id"`
	Time    time.Time    `json:"time"`
	Verdict string       `json:"verdict"`
	Rows    []HarnessRow `json:"rows"`
}

// HarnessRow is one arm beside its reference: the median of the rounds'
// ratios (ctxlab ÷ reference) and their min–max.
type HarnessRow struct {
	Arm       string  `json:"arm"`
	Reference string  `json:"reference"`
	Status    string  `json:"status"` // ok, unsupported, failed
	Reason    string  `json:"reason,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	Min       float64 `json:"min,omitempty"`
	Max       float64 `json:"max,omitempty"`
	Limit     float64 `json:"limit"`
	Rounds    int     `json:"rounds,omitempty"`
}

// Over is whether the row read above its limit on this host.
func (r HarnessRow) Over() bool { return r.Status == StatusOK && r.Ratio > r.Limit }

// SurelyOver is whether every one of at least 3 rounds read above the
// limit: enough to tell a run that its figure holds the harness's cost.
func (r HarnessRow) SurelyOver() bool { return r.Over() && r.Rounds >= 3 && r.Min > r.Limit }

// Row is the check's row for an arm of that name, if it has one. An arm
// held to two references (the process pipe: perf bench, and the same raw
// loop between two Go processes) gets its lowest measured ratio: the
// reference most like it bounds what the harness adds.
func (h *HarnessCheck) Row(arm string) (HarnessRow, bool) {
	if h == nil {
		return HarnessRow{}, false
	}
	var best HarnessRow
	found := false
	for _, r := range h.Rows {
		if r.Arm != arm {
			continue
		}
		if !found || (r.Status == StatusOK && (best.Status != StatusOK || r.Ratio < best.Ratio)) {
			best, found = r, true
		}
	}
	return best, found
}

// Text is the check in one line, for env and the report; a nil check
// says how to make one.
func (h *HarnessCheck) Text() string {
	if h == nil {
		return "not checked on this host: ctxlab selfcheck (about 35 s) runs ctxlab's arms beside perf bench and plain loops"
	}
	return fmt.Sprintf("ctxlab selfcheck %s (run %s): %s", h.Time.Format("2006-01-02 15:04"), h.RunID, h.Verdict)
}
