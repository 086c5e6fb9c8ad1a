package pyprobe

import (
	"fmt"
	"strings"

	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// The thresholds the probe's readings use (docs/pyprobe.md lists them).
const (
	// GILLagShare: a loop's lag p99 at least this share of the switch
	// interval is what a wait for the GIL gives (one interval, or more).
	GILLagShare = 0.8
	// BusyShare: a thread on a CPU or waiting for one (runnable) at least
	// this share of the run is CPU-bound; on a loaded machine it gets less
	// CPU than it wants, but it still wants it (and the GIL holds it back
	// too, while the loop has it).
	BusyShare = 0.3
	// WaitedShare: a loop whose own thread was on a CPU less than this
	// share of the intervals before its late ticks (less their run-queue
	// wait: time the machine's CPUs were taken) slept through them;
	// RanShare or more, it ran Python through them.
	WaitedShare = 0.3
	RanShare    = 0.6
	// HandlerLagNs, HandlerLateTicks, HandlerLateShare: the handler reading
	// wants a lag p99 of at least 2 ms and at least 5 late ticks, 1% of all.
	HandlerLagNs     = 2e6
	HandlerLateTicks = 5
	HandlerLateShare = 0.01
	// MinTicks: fewer ticks than this are too few to read a loop by.
	MinTicks = 20
	// MinCalls: a call site with fewer calls timed is not read (its
	// count is exact whatever it is).
	MinCalls = 20
)

// Read adds the readings to r: from its own figures, and from the profile
// of the run (the threads' CPU time from /proc), whose rows it also gives
// Python's thread names.
func Read(r *Report, p *watch.Profile) {
	if r == nil || !r.Loaded {
		return
	}
	shareOf(r, p)
	in := r.Interpreter
	si := in.SwitchS * 1e9
	if in.FreeThreaded {
		if in.GILEnabled {
			r.add("interpreter", ReadFreeThreaded, "a free-threaded build, but the GIL was on at run time (an extension module that needs it turns it back on): the GIL readings apply")
		} else {
			r.add("interpreter", ReadFreeThreaded, "a free-threaded build with the GIL off at run time: the GIL reading does not apply here — Python threads run in parallel, so a loop's lag is not a wait for the GIL")
		}
	}
	for _, l := range r.Loops {
		if l.Ticks < MinTicks {
			continue
		}
		subject := fmt.Sprintf("loop %d (%s)", l.Loop, l.Thread)
		if in.GILEnabled && si > 0 {
			if rd, ok := gilReading(r, l, si); ok {
				r.add(subject, ReadGIL, rd)
			}
		}
		if l.LateTicks >= HandlerLateTicks && float64(l.LateTicks) >= HandlerLateShare*float64(l.Ticks) &&
			l.LateRan >= RanShare && float64(l.Lag.P99Ns) >= HandlerLagNs {
			r.add(subject, ReadHandlerCPU, fmt.Sprintf(
				"CPU work in handlers bounds throughput at about 1/cpu-time per process: the lag p99 is %s (p50 %s, %d ticks), and before its %d late ticks the loop's own thread ran %.0f%% of the time it was not waiting for a CPU — it ran Python, it did not wait; over the loop's %.1f s its thread was on a CPU %.0f%%, and a loop serves at most 1 ÷ (CPU time per request) requests a second. Move the CPU work to a process pool, or run more processes",
				result.FormatNs(float64(l.Lag.P99Ns)), result.FormatNs(float64(l.Lag.P50Ns)), l.Ticks, l.LateTicks, 100*l.LateRan, l.Seconds, 100*l.CPUShare))
		}
	}
	hopReadings(r)
}

// shareOf sets each Python thread's CPU share from the profile and puts
// Python's thread names on the profile's rows.
func shareOf(r *Report, p *watch.Profile) {
	if p == nil {
		return
	}
	for i := range p.Threads {
		t := &p.Threads[i]
		if t.PID != r.Interpreter.PID {
			continue
		}
		if name := r.ThreadName(t.PID, int64(t.TID)); name != "" {
			t.Name = name
		}
		if !t.HasSchedstat || p.Seconds <= 0 {
			continue
		}
		for j := range r.Threads {
			if r.Threads[j].TID == int64(t.TID) {
				c := float64(t.CPUNs) / (p.Seconds * 1e9)
				q := float64(t.CPUNs+t.RunqNs) / (p.Seconds * 1e9)
				r.Threads[j].CPUShare, r.Threads[j].RunnableShare = &c, &q
			}
		}
	}
}

// gilReading: the lag p99 is at least most of a switch interval, another
// Python thread was on a CPU most of the run, and the loop's own thread
// waited (was off a CPU) through the intervals before its late ticks.
func gilReading(r *Report, l Loop, si float64) (string, bool) {
	p99 := float64(l.Lag.P99Ns)
	if p99 < GILLagShare*si {
		return "", false
	}
	waited := l.LateRan
	if l.LateTicks == 0 {
		waited = l.CPUShare
	}
	if waited >= WaitedShare {
		return "", false
	}
	var busy *Thread
	for i := range r.Threads {
		t := &r.Threads[i]
		if t.TID == l.TID || t.RunnableShare == nil || *t.RunnableShare < BusyShare {
			continue
		}
		if busy == nil || *t.RunnableShare > *busy.RunnableShare {
			busy = t
		}
	}
	if busy == nil {
		return "", false
	}
	return fmt.Sprintf("GIL contention from a CPU-bound thread (switch interval %s): move the CPU work to a process pool — the lag p99 is %s, %.1f× the interval (p50 %s, %d ticks), while thread %s (TID %d) was on a CPU %.0f%% of the run (runnable %.0f%%) and the loop's own thread ran only %.0f%% of the time before its late ticks that it was not waiting for a CPU: it waited for the GIL%s",
		result.FormatNs(si), result.FormatNs(p99), p99/si, result.FormatNs(float64(l.Lag.P50Ns)), l.Ticks,
		quoteName(busy.Name), busy.TID, 100**busy.CPUShare, 100**busy.RunnableShare, 100*waited, runqNote(l)), true
}

// hopReadings: functions handed to a thread whose hops cost more than their
// work — per call site for to_thread and run_in_executor, and aiosqlite as
// one (its calls are its own, each a trip to its thread and back).
func hopReadings(r *Report) {
	var aio []Site
	for _, s := range r.Sites {
		switch s.Of {
		case "aiosqlite":
			aio = append(aio, s)
		case "to_thread", "run_in_executor":
			if s.timed() < MinCalls || s.WorkNs <= 0 || s.HopsPerWork < 1 {
				continue
			}
			via := "asyncio.to_thread"
			if s.Of == "run_in_executor" {
				via = "loop.run_in_executor"
			}
			r.add("call site "+s.Name, ReadHops, fmt.Sprintf(
				"a thread-backed wrapper over a fast operation: the hops cost %.1f× the work — %s%s through %s: %s, %s of work each and %s of hops (%s from the call until the worker starts it, %s from its end until the awaiting coroutine resumes); call it directly, or hand the thread a batch of them at a time",
				s.HopsPerWork, s.Name, where(s.Where), via, callsOf(s.Calls, s.timed()), result.FormatNs(s.WorkNs), result.FormatNs(s.WaitNs+s.BackNs),
				result.FormatNs(s.WaitNs), result.FormatNs(s.BackNs)))
		}
	}
	if len(aio) == 0 {
		return
	}
	var calls, timed, queries int64
	var wait, work, back, n float64 // n: the calls the means are over
	var parts []string
	for _, s := range aio {
		calls += s.Calls
		timed += s.timed()
		m := float64(s.Calls) // its calls not cancelled, at the timed calls' share
		if s.timed() > 0 {
			m *= float64(s.timed()-s.Cancelled) / float64(s.timed())
		}
		n += m
		wait += s.WaitNs * m
		work += s.WorkNs * m
		back += s.BackNs * m
		if strings.Contains(strings.ToLower(s.Name), "execute") {
			queries += s.Calls
		}
		parts = append(parts, fmt.Sprintf("%s %d", shortName(s.Name), s.Calls))
	}
	if timed < MinCalls || work <= 0 {
		return
	}
	var cst int64
	for _, s := range r.Sites {
		if s.Of == "call_soon_threadsafe" && strings.HasPrefix(s.Name, "aiosqlite.") {
			cst += s.Calls - s.SameThread
		}
	}
	ratio := (wait + back) / work
	perQuery := ""
	if queries > 0 {
		perQuery = fmt.Sprintf("; %.1f thread-to-loop hops (call_soon_threadsafe from its thread) per query (%d hops, %d execute calls)", float64(cst)/float64(queries), cst, queries)
	}
	text := fmt.Sprintf("aiosqlite: %s to its thread (%s), %s of work each and %s of hops (%s until its thread starts the call, %s back until the awaiting coroutine resumes)%s",
		callsOf(calls, timed), strings.Join(parts, ", "), result.FormatNs(work/n), result.FormatNs((wait+back)/n), result.FormatNs(wait/n), result.FormatNs(back/n), perQuery)
	if ratio >= 1 {
		text = fmt.Sprintf("a thread-backed wrapper over a fast operation: the hops cost %.1f× the work — ", ratio) + text
		r.add("aiosqlite", ReadHops, text)
	}
}

// timed is how many of the site's calls were timed.
func (s Site) timed() int64 { return s.Timed }

// runqNote says when the loop's thread also waited for a CPU a good part
// of the time: the machine's CPUs were taken, which adds to the lag.
func runqNote(l Loop) string {
	if !l.RunqKnown || l.RunqShare < 0.1 {
		return ""
	}
	return fmt.Sprintf(" (its thread also waited for a CPU %.0f%% of the time: the machine's CPUs were taken, which adds to the lag)", 100*l.RunqShare)
}

func where(w string) string {
	if w == "" {
		return ""
	}
	return " (" + w + ")"
}

func shortName(n string) string {
	if i := strings.LastIndex(n, "."); i >= 0 {
		if j := strings.LastIndex(n[:i], "."); j >= 0 {
			return n[j+1:]
		}
	}
	return n
}

func quoteName(s string) string { return fmt.Sprintf("%q", s) }

func (r *Report) add(subject, kind, text string) {
	r.Readings = append(r.Readings, Reading{Kind: "py-reading", Subject: subject, Reading: kind, Text: text})
}
