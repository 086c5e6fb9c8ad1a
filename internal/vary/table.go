package vary

import (
	"fmt"
	"io"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// TableWidth is the width the table is laid out for off a terminal.
const TableWidth = 100

// row is one line of the table: a label and a cell per value, or one
// text for all of them (a figure unsupported everywhere for one reason).
type row struct {
	label string
	cells []string
	all   string
}

// rows are the table's lines for the values.
func (a *Analysis) rows() []row {
	n := len(a.Values)
	cell := func(f func(v Value) string) []string {
		out := make([]string, n)
		for i, v := range a.Values {
			if !v.OK() {
				out[i] = "—"
				continue
			}
			out[i] = f(v)
		}
		return out
	}
	var rows []row
	rows = append(rows, row{label: "runs", cells: func() []string {
		out := make([]string, n)
		for i, v := range a.Values {
			switch {
			case v.OK():
				out[i] = fmt.Sprintf("%d of %d", len(v.OKRuns), a.Reps)
			case v.Status == result.StatusInterrupted:
				out[i] = "interrupted"
			default:
				out[i] = v.Status
			}
		}
		return out
	}()})
	rows = append(rows, row{label: "wall time", cells: cell(func(v Value) string { return FormatStat(KindNs, v.Wall) })})
	if a.PerUnit {
		rows = append(rows, row{label: "throughput", cells: cell(func(v Value) string { return throughput(v.Wall) })})
	}
	for _, f := range Figures {
		label := f.Label
		switch f.Key {
		case KeyVoluntary, KeyInvoluntary, KeyUser, KeySys:
			label = "  " + label
		case KeyRunq:
			label += " (sampled)"
		}
		if a.rowAll(f.Key) { // one reason everywhere: said once
			for _, v := range a.Values {
				if v.OK() {
					rows = append(rows, row{label: label, all: "unsupported: " + v.Fig(f.Key).Unsupported})
					break
				}
			}
			continue
		}
		rows = append(rows, row{label: label, cells: cell(func(v Value) string {
			st := v.Fig(f.Key)
			if !st.OK() {
				return "unsupported*" // its reason under the table
			}
			return FormatStat(f.Kind, st)
		})})
	}
	rows = mergeAll(rows)
	rows = append(rows, row{label: "noisy", cells: cell(func(v Value) string {
		if v.Noise.Noisy {
			return "yes"
		}
		return "no"
	})})
	return rows
}

// mergeAll makes consecutive rows unsupported everywhere for one reason
// one line: "instructions, cycles, IPC: unsupported: …".
func mergeAll(rows []row) []row {
	var out []row
	for _, r := range rows {
		if n := len(out); n > 0 && r.all != "" && out[n-1].all == r.all {
			out[n-1].label += ", " + strings.TrimSpace(r.label)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Table writes the values side by side, a column each, in blocks of as
// many columns as fit width (TableWidth when ≤ 0), then what the figures
// are, the noise and failures, each value's notes, and the reading. Text
// from the command (its name, its output) is escaped.
func (a *Analysis) Table(w io.Writer, width int) error {
	if width <= 0 {
		width = TableWidth
	}
	cmd := termsafe.String(strings.Join(a.Command, " "))
	title := fmt.Sprintf("ctxlab diagnose --vary %s: %s — %d run(s) per value in shuffled rounds, %s apart", Label(a.Points), cmd, a.Reps, result.ShortDuration(a.Settle))
	if a.Interrupted {
		title += " (interrupted: the runs that finished)"
	}
	lines := textcol.Wrap(title, width)
	rows := a.rows()
	labelW := 0
	for _, r := range rows {
		if r.all == "" {
			labelW = max(labelW, textcol.Width(r.label))
		}
	}
	labelW += 2
	colW := make([]int, len(a.Values))
	for i, v := range a.Values {
		colW[i] = textcol.Width(v.Point.Label())
		for _, r := range rows {
			if r.all == "" {
				colW[i] = max(colW[i], textcol.Width(r.cells[i]))
			}
		}
		colW[i] += 2
	}
	per := "per " + a.Per()
	for start := 0; start < len(a.Values); {
		end, used := start, labelW
		for end < len(a.Values) && (end == start || used+colW[end] <= width) {
			used += colW[end]
			end++
		}
		head := pad(per, labelW)
		for i := start; i < end; i++ {
			head += padLeft(termsafe.String(a.Values[i].Point.Label()), colW[i])
		}
		lines = append(lines, "", strings.TrimRight(head, " "))
		for _, r := range rows {
			if r.all != "" {
				lines = append(lines, textcol.Wrap(r.label+": "+r.all, width)...)
				continue
			}
			l := pad(r.label, labelW)
			for i := start; i < end; i++ {
				l += padLeft(r.cells[i], colW[i])
			}
			lines = append(lines, strings.TrimRight(l, " "))
		}
		start = end
	}
	lines = append(lines, "")
	for _, n := range a.notes() {
		lines = append(lines, textcol.Wrap(n, width)...)
	}
	lines = append(lines, "")
	for _, l := range a.Reading() {
		lines = append(lines, textcol.Wrap(termsafe.String(l), width)...)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// notes are the legend of the table's figures, then each value's
// failures, noise and notes.
func (a *Analysis) notes() []string {
	out := []string{
		"figures: the median (min–max) over a value's finished runs, for every thread and child the command starts: CPU time is perf's task-clock, switches, migrations and page faults its software counters, inherited (as perf stat counts them); user and system time, voluntary and involuntary switches from rusage (the command and its waited-for children)",
		fmt.Sprintf("run-queue wait: sampled from /proc/<pid>/task/<tid>/schedstat every %s, a lower bound (a thread's last partial interval is lost with it)%s", result.ShortDuration(a.Interval), a.coverage()),
	}
	if n := a.selfCPU(); n != "" {
		out = append(out, n)
	}
	for _, v := range a.Values {
		l := v.Point.Label()
		switch {
		case v.Status == result.StatusInterrupted:
			out = append(out, fmt.Sprintf("%s: %s", l, v.Reason))
		case !v.OK():
			out = append(out, fmt.Sprintf("%s: %s: %s; its figures are not used", l, v.Status, termsafe.String(v.Reason)))
		case len(v.OKRuns) < a.Reps:
			out = append(out, fmt.Sprintf("%s: %d of %d runs finished (interrupted)", l, len(v.OKRuns), a.Reps))
		}
		if v.Noise.Noisy {
			out = append(out, fmt.Sprintf("%s: noisy: %s", l, strings.Join(v.Noise.Reasons, "; ")))
		}
		if v.OK() {
			for _, f := range Figures {
				if st := v.Fig(f.Key); !st.OK() {
					if r := a.rowAll(f.Key); !r {
						out = append(out, fmt.Sprintf("%s: %s: unsupported: %s", l, f.Label, st.Unsupported))
					}
				}
			}
		}
		for _, n := range v.Notes {
			out = append(out, fmt.Sprintf("%s: note: %s", l, termsafe.String(n)))
		}
	}
	return out
}

// selfCPU states ctxlab's own CPU time over every run beside the
// command's ("" when none was measured): SelfCPUNote's sentence.
func (a *Analysis) selfCPU() string {
	var self, cmd, wall int64
	held := ""
	for _, s := range a.Samples {
		if s.PID != 0 {
			self, cmd, wall, held = self+s.SelfCPUNs, cmd+s.Rusage.UserNs+s.Rusage.SysNs, wall+s.WallNs, s.Held
		}
	}
	if n := SelfCPUNote(self, cmd, wall, held); n != "" {
		return "harness: " + strings.Replace(n, "while the command ran", "while the commands ran, all runs together", 1)
	}
	return ""
}

func pad(s string, w int) string {
	if n := textcol.Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s + " "
}

func padLeft(s string, w int) string {
	if n := textcol.Width(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return " " + s
}

// rowAll says the figure is unsupported at every finished value for one
// reason, so the table says it once.
func (a *Analysis) rowAll(key string) bool {
	why := ""
	for _, v := range a.Values {
		if !v.OK() {
			continue
		}
		st := v.Fig(key)
		if st.OK() || (why != "" && st.Unsupported != why) {
			return false
		}
		why = st.Unsupported
	}
	return why != ""
}

// coverage says how much of the CPU time (task-clock) the /proc readings
// saw, over the finished runs: the run-queue wait misses at least as much.
func (a *Analysis) coverage() string {
	lo, hi, n := 0.0, 0.0, 0
	for _, v := range a.Values {
		for _, s := range v.OKRuns {
			cpu, src, why := cpuNs(s)
			if why != "" || src != "task-clock" || cpu <= 0 || !s.HasRunq {
				continue
			}
			f := float64(s.SampledCPUNs) / cpu
			if n == 0 || f < lo {
				lo = f
			}
			if n == 0 || f > hi {
				hi = f
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; the readings saw %.0f–%.0f%% of the runs' task-clock", 100*lo, 100*hi)
}
