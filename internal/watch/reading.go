package watch

import (
	"fmt"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The thresholds the readings use. They decide when a figure is worth a
// sentence; they are not verdicts, and docs/watch-diagnose.md lists them.
const (
	// QuietPerSec: below this many switches per second per thread (process
	// total: per thread on average) switching is not worth reading into.
	QuietPerSec = 20.0
	// MostlyShare: the share of voluntary (or involuntary) switches above
	// which a profile is "mostly" that kind.
	MostlyShare = 0.6
	// RunqShare: run-queue wait as a share of the time a thread wanted a CPU
	// (on CPU + waiting) above which the wait is significant.
	RunqShare = 0.10
	// MigrationsPerSec and MigrationShare: migrations per second, and per
	// switch, above which cold caches on resume are worth naming.
	MigrationsPerSec = 50.0
	MigrationShare   = 0.2
	// HandoffShare and HandoffRunqNs: a profile with at least this share of
	// voluntary switches whose run-queue wait per switch is below
	// HandoffRunqNs (far less than a time slice) is a tight handoff whose
	// wake-ups preempt the waker, not a shortage of cores.
	HandoffShare  = 0.3
	HandoffRunqNs = 50e3
)

// Reading kinds.
const (
	KindQuiet          = "quiet"
	KindBlocking       = "blocking"
	KindOversubscribed = "oversubscribed"
	KindYield          = "yield-or-preempted"
	KindInvoluntary    = "involuntary"
	KindThrottled      = "throttled"
	KindMigrating      = "migrating"
	KindChildren       = "children"
)

// Reading is one sentence about a profile: what the figures suggest, with
// the numbers behind it. Subject is "process" or "thread TID (name)".
type Reading struct {
	Subject string `json:"subject"`
	Kind    string `json:"reading"`
	Text    string `json:"text"`
}

// Read reads a whole profile: the process total first (with the cgroup),
// then up to maxThreads notable threads (those above the quiet rate, most
// switches first) whose reading differs from the total's.
func Read(p Profile, maxThreads int) []Reading {
	out := ReadThread(p.Total, p.Seconds, p.CPUs, "process", true)
	if p.Cgroup.Available && p.Cgroup.ThrottledPeriods > 0 {
		out = append(out, Reading{"process", KindThrottled, fmt.Sprintf(
			"throttled in %d CFS periods for %s in total (cgroup v%d quota %s): a CPU quota capped it — the cgroup's limit, not the code",
			p.Cgroup.ThrottledPeriods, result.FormatNs(float64(p.Cgroup.ThrottledUs)*1e3), p.Cgroup.Version, quotaText(p.Cgroup.Quota))})
	}
	out = append(out, readChildren(p, len(out) > 0 && out[0].Kind == KindQuiet)...)
	kinds := map[string]bool{}
	for _, r := range out {
		kinds[r.Kind] = true
	}
	q := p
	q.Threads = append([]Thread(nil), p.Threads...)
	q.Sort("switches")
	n := 0
	for _, t := range q.Threads {
		if n >= maxThreads || p.Rate(t.Switches()) < QuietPerSec {
			break
		}
		subj := fmt.Sprintf("thread %d (%s)", t.TID, t.Name)
		if t.TID == 0 {
			subj = fmt.Sprintf("threads named %s (%d)", t.Name, t.Threads)
		}
		for _, r := range ReadThread(t, p.Seconds, p.CPUs, subj, false) {
			if !kinds[r.Kind] {
				out = append(out, r)
				n++
			}
		}
	}
	return out
}

// readChildren points at the watched processes' children when they
// switch more than the quiet rate: the switching is in them, and the
// process's own figures would not show it. quiet says the process's own
// reading was "too few to matter".
func readChildren(p Profile, quiet bool) []Reading {
	c := p.Children
	sw := c.Total.Switches()
	rate := p.Rate(sw)
	if c.Procs == 0 || sw == 0 || rate < QuietPerSec*float64(max(c.Total.Threads, 1)) {
		return nil
	}
	text := fmt.Sprintf("its %d child process(es) switch %s/s (%.0f%% voluntary; the process's own threads %s/s): the switching is in the children",
		c.Procs, fmtRate(rate), 100*float64(c.Total.Vol)/float64(sw), fmtRate(p.Rate(p.Total.Switches())))
	if quiet {
		text = "but " + text
	}
	if c.Busiest > 0 {
		text += fmt.Sprintf(" — ctxlab watch %d (the busiest) reads them, ctxlab diagnose -- CMD the whole tree", c.Busiest)
	}
	return []Reading{{"children", KindChildren, text}}
}

func quotaText(q string) string {
	if c := QuotaCPUs(q); c > 0 {
		return fmt.Sprintf("%s = %.2f CPUs", q, c)
	}
	return q
}

// ReadThread applies the rules to one row over secs seconds: mostly
// voluntary → blocking or lock handoff; mostly involuntary with run-queue
// wait → more runnable threads than cores; involuntary without it →
// sched_yield or preemption; many migrations → cold caches. whole says the
// row is a process total (so the quiet threshold scales with its threads
// and the runnable-threads figure is compared with the cores).
func ReadThread(t Thread, secs float64, cpus int, subject string, whole bool) []Reading {
	if secs <= 0 {
		return nil
	}
	sw := t.Switches()
	perSec := float64(sw) / secs
	threads := max(t.Threads, 1)
	quiet := QuietPerSec
	if whole {
		quiet *= float64(threads)
	}
	var out []Reading
	add := func(kind, format string, a ...any) {
		out = append(out, Reading{subject, kind, fmt.Sprintf(format, a...)})
	}
	if perSec < quiet {
		add(KindQuiet, "%s switches/s over %d thread(s): too few for switching to matter much",
			fmtRate(perSec), threads)
		return out
	}
	volShare := float64(t.Vol) / float64(sw)
	invShare := 1 - volShare
	cpuPerSwitch := ""
	if t.HasSchedstat {
		cpuPerSwitch = fmt.Sprintf(", %s of CPU per switch", result.FormatNs(float64(t.CPUNs)/float64(sw)))
	}
	switch {
	case volShare >= MostlyShare:
		add(KindBlocking, "mostly voluntary (%.0f%% of %s switches/s%s): this reads as blocking or lock handoff — threads sleep waiting on each other or on I/O; the fix to try is batching (fewer, larger handoffs)",
			100*volShare, fmtRate(perSec), cpuPerSwitch)
	case invShare >= MostlyShare && !t.HasSchedstat:
		add(KindInvoluntary, "mostly involuntary (%.0f%% of %s switches/s); run-queue wait is unavailable here (no schedstat), so too many runnable threads cannot be told from sched_yield",
			100*invShare, fmtRate(perSec))
	case invShare >= MostlyShare:
		wanted := float64(t.CPUNs + t.RunqNs)
		share := 0.0
		if wanted > 0 {
			share = float64(t.RunqNs) / wanted
		}
		runqPerSec := float64(t.RunqNs) / secs
		perSw := float64(t.RunqNs) / float64(sw)
		if share >= RunqShare {
			runnable := wanted / (secs * 1e9)
			tail := ""
			if whole {
				if runnable > float64(cpus) {
					tail = fmt.Sprintf("; on average %.1f of its threads wanted a CPU on %d CPUs; the fix to try is a smaller pool (about one busy thread per core)", runnable, cpus)
				} else {
					tail = fmt.Sprintf("; its own threads wanted on average %.1f of %d CPUs, so the competition is likely other processes on this machine", runnable, cpus)
				}
			}
			add(KindOversubscribed, "mostly involuntary (%.0f%% of %s switches/s) with run-queue wait of %s per second (%s per switch, %.0f%% of the time it wanted a CPU): this reads as more runnable threads than cores%s",
				100*invShare, fmtRate(perSec), result.FormatNs(runqPerSec), result.FormatNs(perSw), 100*share, tail)
		} else {
			add(KindYield, "mostly involuntary (%.0f%% of %s switches/s) but little run-queue wait (%s per switch, %.0f%% of the time it wanted a CPU): this reads as sched_yield (counted as involuntary) or preemption by higher-priority work, not a shortage of cores",
				100*invShare, fmtRate(perSec), result.FormatNs(perSw), 100*share)
		}
	case volShare >= HandoffShare && t.HasSchedstat && float64(t.RunqNs)/float64(sw) < HandoffRunqNs:
		add(KindBlocking, "voluntary (%.0f%%) and involuntary switches at %s switches/s with little run-queue wait (%s per switch%s): this reads as a tight blocking handoff — each wake-up of a partner preempts the waker (the kernel counts that as involuntary) and the partner then blocks again; the fix to try is batching (fewer, larger handoffs)",
			100*volShare, fmtRate(perSec), result.FormatNs(float64(t.RunqNs)/float64(sw)), cpuPerSwitch)
	default:
		add(KindBlocking, "a mix of voluntary (%.0f%%) and involuntary switches at %s switches/s: some blocking or handoff and some preemption; neither dominates", 100*volShare, fmtRate(perSec))
		out[len(out)-1].Kind = "mixed"
	}
	if t.HasSched {
		mig := float64(t.Migrations) / secs
		if mig >= MigrationsPerSec && float64(t.Migrations) >= MigrationShare*float64(sw) {
			add(KindMigrating, "%s CPU migrations/s (%.0f%% of switches): threads often resume on another CPU with cold caches; pinning, or fewer threads than cores, may help",
				fmtRate(mig), 100*float64(t.Migrations)/float64(sw))
		}
	}
	return out
}

func fmtRate(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}
