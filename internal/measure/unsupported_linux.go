package measure

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Count is what one perf counter gave over a stretch of work: the facts
// the one rule for "unsupported" (Unsupported) judges. ProbeEvent (what
// `ctxlab env` and a run's header list), CounterSet (a run's --counters)
// and TreeCounters (diagnose) each fill one and ask it, so a counter that
// one of them calls unsupported the others call unsupported too, for the
// same reason.
type Count struct {
	Event EventSpec
	// OpenErr is why the counter could not be opened (nil: it opened).
	OpenErr error
	// UserOnlyTried says the opener fell back to user mode only when the
	// kernel was refused (OpenInherited does), so an open error is not the
	// kernel's refusal alone.
	UserOnlyTried bool
	// ReadErr is why it could not be read (nil: it was).
	ReadErr error
	// Running is how long it was on the PMU (time_running).
	Running uint64
	// Value is its count, scaled when it was multiplexed.
	Value float64
	// UserOnly says it counted user mode only.
	UserOnly bool
	// Work says the stretch did real work (the runner's repetitions, the
	// probe's loop, a command whose task-clock counted): over it a
	// hardware count or task-clock cannot honestly be 0.
	Work bool
}

// Unsupported is the one rule: "" when the count is a figure, else why it
// is none. A counter that cannot count never reads as 0: it is
// unsupported when it did not open (UnsupportedReason, saying when a
// kernel-only event is what perf_event_paranoid refused), could not be
// read, never ran on the PMU (ReasonNeverRan), is a kernel event counted
// user mode only that read 0 (ReasonUserOnlyZero), or is a hardware
// counter or task-clock that read 0 over real work (ReasonZeroCount).
// Switches, migrations and page faults may honestly be 0.
func (c Count) Unsupported() string {
	switch {
	case c.OpenErr != nil && c.UserOnlyTried:
		return UnsupportedReason(c.OpenErr)
	case c.OpenErr != nil:
		return eventReason(c.Event, c.OpenErr)
	case c.ReadErr != nil:
		return UnsupportedReason(c.ReadErr)
	case c.Running == 0:
		return ReasonNeverRan
	case c.Value == 0 && c.UserOnly && kernelOnly(c.Event):
		return ReasonUserOnlyZero
	case c.Value == 0 && c.Work && zeroIsUnsupported(c.Event):
		return ReasonZeroCount
	}
	return ""
}

// Reasons the rule gives for counters that open but do not count.
const (
	ReasonNeverRan  = "opened but never scheduled on the PMU (no counter time)"
	ReasonZeroCount = "opened but counted 0 over real work (the hypervisor exposes no PMU)"
	// ReasonUserOnlyZero is why a kernel event (switches, migrations)
	// counted in user mode only is no figure.
	ReasonUserOnlyZero = "counted 0: perf_event_paranoid allows user-mode counting only here, and this event happens in the kernel"
)

// zeroIsUnsupported says whether a zero count over real work means the
// event is not really there (hardware counters on a VM without a PMU);
// switches, migrations and faults can honestly be zero, task-clock cannot.
func zeroIsUnsupported(ev EventSpec) bool {
	return ev.Kind == "hardware" || ev.Name == "task-clock"
}

// eventReason is UnsupportedReason for ev, saying why a kernel-only event
// is refused where user-space counting would be allowed.
func eventReason(ev EventSpec, err error) string {
	r := UnsupportedReason(err)
	if kernelOnly(ev) && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) {
		r += "; " + ev.Name + " happen in the kernel, which perf_event_paranoid ≥ 2 hides from this user"
	}
	return r
}

// kernelOnly events happen in the kernel; counting them in user space
// only would read 0.
func kernelOnly(ev EventSpec) bool {
	return ev.Config == unix.PERF_COUNT_SW_CONTEXT_SWITCHES && ev.Type == unix.PERF_TYPE_SOFTWARE ||
		ev.Config == unix.PERF_COUNT_SW_CPU_MIGRATIONS && ev.Type == unix.PERF_TYPE_SOFTWARE
}
