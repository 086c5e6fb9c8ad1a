package pyprobe

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// maxSitesShown: the text lists this many call sites, most calls first
// (JSON has them all).
const maxSitesShown = 8

// WriteJSON writes the report's records, one JSON object per line.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(termsafe.JSON(w))
	for _, rec := range r.Records() {
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes the report for a person, a sentence or a row a line
// (the caller wraps long lines); every name from the program is escaped.
func (r *Report) WriteText(w io.Writer) error {
	t := &text{}
	if r.Loaded {
		r.interpreterText(t)
		r.loopsText(t)
		r.hopsText(t)
		r.sitesText(t)
		if c := r.Cost; c != nil {
			t.line("  %s", c.text())
		}
	}
	for _, rd := range r.Readings {
		t.line("reading (python, %s): %s", termsafe.String(rd.Subject), termsafe.String(rd.Text))
	}
	for _, n := range r.allNotes() {
		t.line("note (python probe): %s", termsafe.String(n))
	}
	_, err := io.WriteString(w, t.b.String())
	return err
}

// text gathers the report's lines.
type text struct{ b strings.Builder }

func (t *text) line(format string, a ...any) { fmt.Fprintf(&t.b, format+"\n", a...) }

// interpreterText: the interpreter, its build and switch interval, and
// the program's Python threads.
func (r *Report) interpreterText(t *text) {
	in := r.Interpreter
	gil := "the GIL on"
	if !in.GILEnabled {
		gil = "the GIL off"
	}
	si := "switch interval " + result.FormatNs(in.SwitchS*1e9)
	if in.SwitchStartS > 0 {
		si += fmt.Sprintf(" (set by the program; %s when the probe loaded)", result.FormatNs(in.SwitchStartS*1e9))
	}
	t.line("python probe (pid %d): CPython %s, %s build, %s at run time, %s", in.PID, termsafe.String(in.Version), in.Build, gil, si)
	var ts []string
	for _, th := range r.Threads {
		s := fmt.Sprintf("%s (TID %d", termsafe.String(th.Name), th.TID)
		if th.CPUShare != nil {
			s += fmt.Sprintf(", %.0f%% CPU", 100**th.CPUShare)
		}
		if th.Ended {
			s += ", ended"
		}
		ts = append(ts, s+")")
	}
	t.line("  Python threads: %s", strings.Join(ts, ", "))
}

// loopsText: every loop's lag, corrected and as fired, and its resolution.
func (r *Report) loopsText(t *text) {
	if len(r.Loops) == 0 {
		t.line("  asyncio loops: none ran")
		return
	}
	for _, l := range r.Loops {
		over := result.FormatNs(l.Seconds * 1e9)
		if l.ObservedShare > 0 && l.ObservedShare < 0.995 {
			over += fmt.Sprintf(" observed (%.0f%% of the time it ran: the program was busier than the probe's budgets, and it was observed in windows)", 100*l.ObservedShare)
		}
		t.line("  loop %d (%s, TID %d, %s): lag p50 %s, p99 %s, p99.9 %s, max %s — %d ticks + %d corrected for stalls (a sample every %s, the ticks' cadence) over %s; its thread on a CPU %.0f%% of the time (it ran %.0f%% of the time it was not waiting for a CPU before its %d late ticks)",
			l.Loop, termsafe.String(l.Thread), l.TID, termsafe.String(shortClass(l.Class)), ns(l.Lag.P50Ns), ns(l.Lag.P99Ns), ns(l.Lag.P999Ns), ns(l.Lag.MaxNs),
			l.Ticks, l.Corrected, ns(l.CorrectedEveryNs), over, 100*l.CPUShare, 100*l.LateRan, l.LateTicks)
		t.line("    the ticks as fired (uncorrected): p50 %s, p99 %s, p99.9 %s", ns(l.AsFired.P50Ns), ns(l.AsFired.P99Ns), ns(l.AsFired.P999Ns))
	}
	t.line("    lag: %s", r.Loops[0].ResolutionN)
}

// hopsText: each kind of hop with its rate and distributions.
func (r *Report) hopsText(t *text) {
	if len(r.Hops) > 0 {
		t.line("  hops between threads and loops (%s):", r.timingText())
	}
	for _, h := range r.Hops {
		rate := fmt.Sprintf("%s (%.0f/s)", callsOf(h.Calls, h.Timed), h.PerSec)
		switch {
		case h.Hop != nil || h.Of == "call_soon_threadsafe":
			extra := ""
			if h.SameThread > 0 {
				extra = fmt.Sprintf("; %d from the loop's own thread, not a hop, left out", h.SameThread)
			}
			t.line("    %-20s %s: the call until the callback runs %s%s", h.Of, rate, distText(h.Hop), extra)
		case h.Of == "executor":
			t.line("    %-20s %s to an executor that is not a thread pool: the whole call %s", h.Of, rate, distText(h.Total))
		default:
			t.line("    %-20s %s: until the worker starts it %s; the work %s; back until the coroutine resumes %s", h.Of, rate, distText(h.Wait), distText(h.Work), distText(h.Back))
		}
	}
}

// sitesText: the call sites' means per call, the first maxSitesShown.
func (r *Report) sitesText(t *text) {
	if len(r.Sites) > 0 {
		t.line("  call sites (means per call):")
	}
	for i, s := range r.Sites {
		if i == maxSitesShown {
			t.line("    … %d more (--format json lists them all)", len(r.Sites)-i)
			break
		}
		name := termsafe.String(s.Name) + where(termsafe.String(s.Where))
		switch s.Of {
		case "call_soon_threadsafe":
			var from []string
			for j, f := range s.From {
				if j == 3 {
					from = append(from, "…")
					break
				}
				from = append(from, fmt.Sprintf("%s %d", termsafe.String(f.Thread), f.Calls))
			}
			t.line("    call_soon_threadsafe %s: %s, %s each, from %s", name, callsOf(s.Calls, s.Timed), result.FormatNs(s.BackNs), strings.Join(from, ", "))
		case "executor":
			t.line("    executor %s: %s, %s each (the whole call)", name, callsOf(s.Calls, s.Timed), result.FormatNs(s.BackNs))
		default:
			t.line("    %s %s: %s; %s of hops (%s wait + %s back) for %s of work (%.1f×)", s.Of, name, callsOf(s.Calls, s.Timed),
				result.FormatNs(s.WaitNs+s.BackNs), result.FormatNs(s.WaitNs), result.FormatNs(s.BackNs), result.FormatNs(s.WorkNs), s.HopsPerWork)
		}
	}
}

func (c *Cost) text() string {
	var per []string
	for _, k := range []string{"call_soon_threadsafe", "executor_call"} {
		if v, ok := c.PerCallNs[k]; ok {
			per = append(per, fmt.Sprintf("%s %s timed, %s counted", strings.ReplaceAll(k, "_call", " call"), result.FormatNs(v), result.FormatNs(c.PerCallNs[k+"_counted"])))
		}
	}
	cal := ""
	if len(per) > 0 {
		cal = " and the wrappers at their cost per call (" + strings.Join(per, ", ") + ", timed at exit on stand-ins)"
	}
	over := ""
	if c.OverTarget {
		over = " — over the 2% target"
	}
	if c.Windows > 0 {
		cal += fmt.Sprintf("; it observed the program in %d windows, %.1f%% of the run (a busy program: every call counted, %d timed)", c.Windows, 100*c.WindowShare, c.TimedCalls)
	}
	switch c.CountedIn {
	case "c":
		cal += "; calls counted in C (" + c.CountedHow + ")"
	case "python":
		cal += "; calls counted in Python (" + c.CountedHow + "), which cost a program that does nothing but hop 2–3% more than in C on the VM measured (docs/pyprobe.md)"
	}
	return fmt.Sprintf("the probe's own cost: %s of CPU, %.2f%% of the process's %s (target ≤ %.0f%%)%s, %.2f%% of the %s run — estimated from its ticks and writes, timed as they ran%s; its report at exit took %s more. "+
		"A lower bound: its wrapper of the loop's polls, what its timer's wake-ups of a sleeping loop cost the kernel, and what its wrappers do to threads that hand work to the loop, are not in it; "+
		"to measure the whole effect, diagnose the program with --python-probe off too and compare the two runs (docs/pyprobe.md)",
		result.FormatNs(c.SelfNs), 100*c.CPUShare, result.FormatNs(float64(c.CPUNs)), c.TargetPct, over, 100*c.WallShare, result.FormatNs(float64(c.WallNs)), cal, result.FormatNs(c.AtExitNs))
}

func distText(d *Dist) string {
	if d == nil || d.N == 0 {
		return "(none)"
	}
	return fmt.Sprintf("p50 %s, p99 %s, max %s", ns(d.P50Ns), ns(d.P99Ns), ns(d.MaxNs))
}

func ns(v int64) string { return result.FormatNs(float64(v)) }

func shortClass(c string) string {
	if i := strings.LastIndex(c, "."); i >= 0 {
		return c[i+1:]
	}
	return c
}

// calls is a count of calls, "1 call" or "N calls".
func calls[T int | int64](n T) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// callsOf is a count of calls (every one counted) of which timed were
// timed: "N calls" when every one was, "N calls (M timed)" when the probe
// timed them in windows.
func callsOf(n, timed int64) string {
	if timed >= n {
		return calls(n)
	}
	return fmt.Sprintf("%s (%d timed)", calls(n), timed)
}

// timingText says how calls were timed: every one, or in windows.
func (r *Report) timingText() string {
	c := r.Cost
	if c == nil || c.Windows == 0 {
		if c != nil && c.BudgetPerS == 0 {
			return "every call timed"
		}
		return fmt.Sprintf("every call timed: fewer than the probe's budget of %d a second", r.budget())
	}
	return fmt.Sprintf("timed in %d windows of about %s at random gaps, open %.1f%% of the run, as the program made more calls a second than the probe's budget of %d or a loop polled more than %d times a second: every call is counted, so counts and rates are exact; the histograms and means are samples, of the %d calls timed",
		c.Windows, ns(WindowNs), 100*c.WindowShare, c.BudgetPerS, PollsPerS, c.TimedCalls)
}

func (r *Report) budget() int64 {
	if r.Cost != nil && r.Cost.BudgetPerS > 0 {
		return r.Cost.BudgetPerS
	}
	return int64(CallsPerS)
}

// Findings are the report's sentences for a stored run: the readings,
// then the probe's own cost (it says when it is over its target).
func (r *Report) Findings() []string {
	var out []string
	for _, rd := range r.Readings {
		out = append(out, rd.Text)
	}
	if r.Cost != nil {
		out = append(out, r.Cost.text())
	}
	return out
}
