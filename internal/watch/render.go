package watch

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// Record is one JSON line about a thread or the process total, of one
// interval (Phase "interval") or of the whole watch (Phase "summary").
// Figures that are unavailable on this kernel are null.
type Record struct {
	Kind    string  `json:"kind"` // thread, process, or children (the watched processes' descendants, apart from the process)
	Phase   string  `json:"phase"`
	Time    string  `json:"time"` // end of the interval, RFC 3339
	Seconds float64 `json:"interval_s"`

	PID     int    `json:"pid,omitempty"`
	TID     int    `json:"tid,omitempty"`
	Name    string `json:"name,omitempty"`
	Threads int    `json:"threads"`

	Vol             uint64   `json:"voluntary"`
	Invol           uint64   `json:"involuntary"`
	VolPerSec       float64  `json:"voluntary_per_s"`
	InvolPerSec     float64  `json:"involuntary_per_s"`
	MigrPerSec      *float64 `json:"migrations_per_s"`
	CPUPct          *float64 `json:"cpu_pct"`
	RunqMsPerSec    *float64 `json:"runq_ms_per_s"`
	RunqUsPerSwitch *float64 `json:"runq_us_per_switch"`
	Started         bool     `json:"started,omitempty"`
	Exited          bool     `json:"exited,omitempty"`
}

// CgroupRecord is the JSON line for the cgroup's quota and throttling.
type CgroupRecord struct {
	Kind             string  `json:"kind"` // cgroup
	Phase            string  `json:"phase"`
	Time             string  `json:"time"`
	Seconds          float64 `json:"interval_s"`
	Version          int     `json:"cgroup_version"`
	Dir              string  `json:"dir"`
	Quota            string  `json:"quota"`
	ThrottledPeriods int64   `json:"throttled_periods"`
	ThrottledUs      int64   `json:"throttled_us"`
}

// ReadingRecord is the JSON line for one reading.
type ReadingRecord struct {
	Kind    string  `json:"kind"` // reading
	Phase   string  `json:"phase"`
	Time    string  `json:"time"`
	Seconds float64 `json:"interval_s"`
	Reading
}

func f64(x float64) *float64 { return &x }

// rowRecord fills the figures of one row.
func rowRecord(kind, phase string, p *Profile, t Thread) Record {
	r := Record{Kind: kind, Phase: phase, Time: p.End.UTC().Format(time.RFC3339Nano), Seconds: round(p.Seconds, 3),
		PID: t.PID, TID: t.TID, Name: t.Name, Threads: t.Threads, Started: t.Started, Exited: t.Exited}
	r.Vol, r.Invol = t.Vol, t.Invol
	r.VolPerSec, r.InvolPerSec = round(p.Rate(t.Vol), 2), round(p.Rate(t.Invol), 2)
	if t.HasSched {
		r.MigrPerSec = f64(round(p.Rate(t.Migrations), 2))
	}
	if t.HasSchedstat && p.Seconds > 0 {
		r.CPUPct = f64(round(100*float64(t.CPUNs)/(p.Seconds*1e9), 2))
		r.RunqMsPerSec = f64(round(float64(t.RunqNs)/(p.Seconds*1e6), 3))
		if sw := t.Switches(); sw > 0 {
			r.RunqUsPerSwitch = f64(round(float64(t.RunqNs)/float64(sw)/1e3, 3))
		}
	}
	return r
}

func round(x float64, digits int) float64 {
	m := 1.0
	for i := 0; i < digits; i++ {
		m *= 10
	}
	if x >= 0 {
		return float64(int64(x*m+0.5)) / m
	}
	return -float64(int64(-x*m+0.5)) / m
}

// Records turns a profile and its readings into JSON-line records
// (Record, CgroupRecord, ReadingRecord).
func Records(p Profile, phase string, readings []Reading) []any {
	var out []any
	for _, t := range p.Threads {
		out = append(out, rowRecord("thread", phase, &p, t))
	}
	tot := rowRecord("process", phase, &p, p.Total)
	tot.Name = ""
	out = append(out, tot)
	if c := p.Children; c.Procs > 0 {
		// The descendants, counted apart from the process total: PID is
		// the busiest child's, Threads how many threads they had at most.
		ch := rowRecord("children", phase, &p, c.Total)
		ch.Name, ch.PID = "", c.Busiest
		out = append(out, ch)
	}
	if p.Cgroup.Available {
		out = append(out, CgroupRecord{Kind: "cgroup", Phase: phase, Time: tot.Time, Seconds: tot.Seconds,
			Version: p.Cgroup.Version, Dir: p.Cgroup.Dir, Quota: p.Cgroup.Quota,
			ThrottledPeriods: p.Cgroup.ThrottledPeriods, ThrottledUs: p.Cgroup.ThrottledUs})
	}
	for _, rd := range readings {
		out = append(out, ReadingRecord{Kind: "reading", Phase: phase, Time: tot.Time, Seconds: tot.Seconds, Reading: rd})
	}
	return out
}

// WriteJSON writes the records of a profile, one JSON object per line.
func WriteJSON(w io.Writer, p Profile, phase string, readings []Reading) error {
	enc := json.NewEncoder(termsafe.JSON(w))
	for _, r := range Records(p, phase, readings) {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// fullRow is the width of the table's full rows.
const fullRow = 95

// WriteTable writes a profile as a table with its readings under it.
// hidden is the number of rows --top left out.
func WriteTable(w io.Writer, title string, p Profile, readings []Reading, hidden int) error {
	return WriteTableWidth(w, title, p, readings, hidden, 0)
}

// WriteTableWidth is WriteTable for a terminal width columns wide: its
// prose (the title, the cgroup, notes and readings) is wrapped at spaces
// there, no word cut; the table's rows stay whole, their columns aligned,
// without the PID column below fullRow columns (78 then). width ≤ 0 wraps
// nothing.
func WriteTableWidth(w io.Writer, title string, p Profile, readings []Reading, hidden, width int) error {
	var b strings.Builder
	prose := func(format string, args ...any) {
		for _, l := range textcol.Wrap(fmt.Sprintf(format, args...), width) {
			b.WriteString(l + "\n")
		}
	}
	prose("%s — %.2f s, %d process(es), %d thread(s), %d CPUs", title, p.Seconds, p.Procs, p.Total.Threads, p.CPUs)
	// The full row is 95 columns; on a narrower terminal the PID column
	// goes (a TID names its thread alone) and the figures' columns close
	// up: 78 columns.
	format := "%8s %8s  %-18s %9s %9s %8s %6s %10s %10s\n"
	compact := width > 0 && width < fullRow
	line := func(pid, tid, name, vol, invol, mig, cpu, rq, rqsw string) {
		if compact {
			fmt.Fprintf(&b, "%8s  %-18s %7s %8s %7s %5s %9s %9s\n", tid, name, vol, invol, mig, cpu, rq, rqsw)
			return
		}
		fmt.Fprintf(&b, format, pid, tid, name, vol, invol, mig, cpu, rq, rqsw)
	}
	line("PID", "TID", "NAME", "VOL/s", "INVOL/s", "MIGR/s", "CPU%", "RUNQ/s", "RUNQ/SW")
	row := func(pid, tid, name string, t Thread) {
		r := rowRecord("", "", &p, t)
		mig, cpu, rq, rqsw := "n/a", "n/a", "n/a", "n/a"
		if r.MigrPerSec != nil {
			mig = fmtRate(*r.MigrPerSec)
		}
		if r.CPUPct != nil {
			cpu = fmt.Sprintf("%.1f", *r.CPUPct)
			rq = result.FormatNs(*r.RunqMsPerSec * 1e6)
			rqsw = "-"
			if r.RunqUsPerSwitch != nil {
				rqsw = result.FormatNs(*r.RunqUsPerSwitch * 1e3)
			}
		}
		if len(name) > 16 {
			name = name[:16]
		}
		name = termsafe.String(name) // another user's thread may name itself an escape sequence
		switch {
		case t.Exited:
			name += " -"
		case t.Started:
			name += " +"
		}
		line(pid, tid, name, fmtRate(r.VolPerSec), fmtRate(r.InvolPerSec), mig, cpu, rq, rqsw)
	}
	for _, t := range p.Threads {
		pid, tid := fmt.Sprint(t.PID), fmt.Sprint(t.TID)
		name := t.Name
		if t.TID == 0 { // folded by name
			pid, tid = "", fmt.Sprintf("×%d", t.Threads)
		}
		row(pid, tid, name, t)
	}
	if hidden > 0 && compact {
		fmt.Fprintf(&b, "%8s  (%d more rows; --top shows more)\n", "", hidden)
	} else if hidden > 0 {
		fmt.Fprintf(&b, "%8s %8s  (%d more rows; --top shows more)\n", "", "", hidden)
	}
	row("", "", "total", p.Total)
	if c := p.Children; c.Procs > 0 {
		row("", "", fmt.Sprintf("children (%d)", c.Procs), c.Total)
	}
	tableNotes(prose, p, readings)
	_, err := io.WriteString(w, b.String())
	return err
}

// tableNotes are the lines under the table: the cgroup, the +/- legend,
// the notes and the readings, each through prose.
func tableNotes(prose func(format string, args ...any), p Profile, readings []Reading) {
	if p.Cgroup.Available {
		prose("cgroup v%d %s: quota %s, throttled %d periods, %s", p.Cgroup.Version, p.Cgroup.Dir,
			quotaText(p.Cgroup.Quota), p.Cgroup.ThrottledPeriods, result.FormatNs(float64(p.Cgroup.ThrottledUs)*1e3))
	} else {
		prose("cgroup: unavailable (no CPU cgroup with cpu.stat found for this process)")
	}
	for _, t := range p.Threads {
		if t.Started || t.Exited {
			prose("(+ started during the interval, - exited: its counts after the previous reading are lost with it)")
			break
		}
	}
	for _, n := range p.Notes {
		prose("note: %s", termsafe.String(n))
	}
	for _, r := range readings {
		prose("reading (%s): %s", termsafe.String(r.Subject), termsafe.String(r.Text))
	}
}
