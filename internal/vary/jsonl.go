package vary

import (
	"encoding/json"
	"io"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// The table as JSON lines: what diagnose --vary writes on stderr where
// watch and diagnose write theirs (redirected, or --format json), one
// record a line, the same figures, notes and reading as the table.

// HeadRecord is the first line: the command and the grid.
type HeadRecord struct {
	Kind        string   `json:"kind"` // vary
	Command     []string `json:"command"`
	Values      []string `json:"values"`
	Reps        int      `json:"reps"`
	SettleS     float64  `json:"settle_s"`
	Per         string   `json:"per"` // run, or unit of work
	Interrupted bool     `json:"interrupted,omitempty"`
}

// StatRecord is one figure of one value: its median and range over the
// finished runs, or why there is none.
type StatRecord struct {
	Median      *float64 `json:"median,omitempty"`
	Min         *float64 `json:"min,omitempty"`
	Max         *float64 `json:"max,omitempty"`
	Source      string   `json:"source,omitempty"`
	Unsupported string   `json:"unsupported,omitempty"`
}

// ValueRecord is one value: its runs and its figures by key (the stored
// run's rep_metrics names; wall-ns/op is the wall time).
type ValueRecord struct {
	Kind    string                `json:"kind"` // value
	Value   string                `json:"value"`
	Params  map[string]string     `json:"params"`
	Status  string                `json:"status"`
	Reason  string                `json:"reason,omitempty"`
	Runs    int                   `json:"runs"`
	Noisy   bool                  `json:"noisy"`
	Figures map[string]StatRecord `json:"figures,omitempty"`
}

// TextRecord is a note (the legend, a value's failure or noise) or a line
// of the reading (the work check, the splits, the decision).
type TextRecord struct {
	Kind string `json:"kind"` // note, reading
	Text string `json:"text"`
}

func statRecord(s Stat) StatRecord {
	if !s.OK() {
		return StatRecord{Unsupported: s.Unsupported}
	}
	return StatRecord{Median: ptr(s.Median), Min: ptr(s.Min), Max: ptr(s.Max), Source: s.Source}
}

// WriteJSON writes the analysis as JSON lines: the head, a line per value,
// the notes and the reading. Text from the command is escaped as
// termsafe.JSON escapes it.
func (a *Analysis) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(termsafe.JSON(w))
	enc.SetEscapeHTML(false)
	head := HeadRecord{Kind: "vary", Command: a.Command, Reps: a.Reps, SettleS: a.Settle.Seconds(), Per: a.Per(), Interrupted: a.Interrupted}
	for _, p := range a.Points {
		head.Values = append(head.Values, p.Label())
	}
	recs := []any{head}
	for _, v := range a.Values {
		r := ValueRecord{Kind: "value", Value: v.Point.Label(), Params: v.Point.Params(), Status: v.Status, Reason: v.Reason,
			Runs: len(v.OKRuns), Noisy: v.Noise.Noisy}
		if v.OK() {
			r.Figures = map[string]StatRecord{KeyWall: statRecord(v.Wall)}
			for _, f := range Figures {
				r.Figures[f.Key] = statRecord(v.Fig(f.Key))
			}
		}
		if r.Status == "" {
			r.Status = result.StatusOK
		}
		recs = append(recs, r)
	}
	for _, n := range a.notes() {
		recs = append(recs, TextRecord{Kind: "note", Text: n})
	}
	for _, l := range a.Reading() {
		recs = append(recs, TextRecord{Kind: "reading", Text: l})
	}
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
