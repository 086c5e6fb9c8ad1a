package measure

import (
	"encoding/binary"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func event(t *testing.T, name string) EventSpec {
	t.Helper()
	for _, ev := range Events {
		if ev.Name == name {
			return ev
		}
	}
	t.Fatalf("no event %s", name)
	return EventSpec{}
}

// The rule itself: every way a counter is no figure, and the zeros that
// are figures.
func TestCountUnsupported(t *testing.T) {
	ins, cs, pf, tc := event(t, "instructions"), event(t, "context-switches"), event(t, "page-faults"), event(t, "task-clock")
	for _, tc := range []struct {
		name string
		c    Count
		want string // "" = a figure; else a fragment of the reason
	}{
		{"counted", Count{Event: ins, Running: 10, Value: 5, Work: true}, ""},
		{"not offered", Count{Event: ins, OpenErr: unix.ENOENT}, "not offered by this CPU"},
		{"kernel event refused", Count{Event: cs, OpenErr: unix.EACCES}, "context-switches happen in the kernel"},
		{"refused after a user-only try", Count{Event: cs, OpenErr: unix.EACCES, UserOnlyTried: true}, "not permitted"},
		{"read failed", Count{Event: ins, ReadErr: unix.EIO}, "input/output error"},
		{"never on the PMU", Count{Event: pf, Running: 0, Value: 3, Work: true}, ReasonNeverRan},
		{"kernel event counted user-only", Count{Event: cs, Running: 10, UserOnly: true}, ReasonUserOnlyZero},
		{"kernel event counted in the kernel", Count{Event: cs, Running: 10, Work: true}, ""},
		{"hardware zero over work", Count{Event: ins, Running: 10, Work: true}, ReasonZeroCount},
		{"hardware zero, no work seen", Count{Event: ins, Running: 10}, ""},
		{"task-clock zero over work", Count{Event: tc, Running: 10, Work: true}, ReasonZeroCount},
		{"page-faults zero", Count{Event: pf, Running: 10, Work: true}, ""},
	} {
		got := tc.c.Unsupported()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// oneRead is a CounterSource and a TreeSource whose every counter opens
// (or fails) and reads as set per event: value, enabled, running.
type oneRead struct {
	openErr map[string]error
	reads   map[string][3]uint64
	fds     map[int]string
	group   map[int]bool // opened with the group read layout, as a group of one
}

func (o *oneRead) Open(ev EventSpec, tid, groupFD int, group bool) (int, error) {
	if err := o.openErr[ev.Name]; err != nil {
		return -1, err
	}
	if groupFD >= 0 {
		return -1, unix.EINVAL // no groups: every counter read on its own
	}
	fd := 10 + len(o.fds)
	o.fds[fd], o.group[fd] = ev.Name, group
	return fd, nil
}

func (o *oneRead) Read(fd int, buf []byte) (int, error) {
	name, ok := o.fds[fd]
	if !ok {
		return 0, unix.EBADF
	}
	r := o.reads[name]
	words := []uint64{r[0], r[1], r[2]} // value, enabled, running
	if o.group[fd] {
		words = []uint64{1, r[1], r[2], r[0]} // nr, enabled, running, value
	}
	for i, v := range words {
		binary.NativeEndian.PutUint64(buf[8*i:], v)
	}
	return 8 * len(words), nil
}

func (o *oneRead) Close(int) error { return nil }

func (o *oneRead) OpenInherited(ev EventSpec, pid int) (int, bool, error) {
	fd, err := o.Open(ev, pid, -1, false)
	return fd, false, err
}

func (o *oneRead) ReadCounter(fd int) (uint64, uint64, uint64, error) {
	var buf [24]byte
	if _, err := o.Read(fd, buf[:]); err != nil {
		return 0, 0, 0, err
	}
	var g GroupRead
	ParseSingleRead(buf[:], &g)
	return g.Values[0], g.Enabled, g.Running, nil
}

// TestOneCounterRule gives the same counters to each reader — the probe
// `ctxlab env` and a run's header use, a run's CounterSet and diagnose's
// TreeCounters — and checks each one's verdict on each counter is the
// rule's: one rule, not three copies of it.
func TestOneCounterRule(t *testing.T) {
	src := &oneRead{openErr: map[string]error{"cycles": unix.ENOENT, "dTLB-load-misses": unix.EOPNOTSUPP},
		reads: map[string][3]uint64{
			"instructions":     {400, 10, 10},
			"branch-misses":    {0, 10, 0}, // never on the PMU
			"LLC-load-misses":  {0, 10, 10},
			"task-clock":       {900, 10, 10},
			"context-switches": {0, 10, 10},
			"cpu-migrations":   {2, 10, 5},
			"page-faults":      {0, 10, 10},
		}, fds: map[int]string{}, group: map[int]bool{}}
	want := map[string]string{}
	for _, ev := range Events {
		c := Count{Event: ev, OpenErr: src.openErr[ev.Name], Work: true}
		r := src.reads[ev.Name]
		c.Value, c.Running = float64(r[0]), r[2]
		if r[2] < r[1] && r[2] > 0 {
			c.Value = c.Value * float64(r[1]) / float64(r[2])
		}
		want[ev.Name] = c.Unsupported()
	}
	if want["cycles"] == "" || want["branch-misses"] != ReasonNeverRan || want["LLC-load-misses"] != ReasonZeroCount ||
		want["page-faults"] != "" || want["instructions"] != "" {
		t.Fatalf("the fixture does not exercise the rule: %q", want)
	}

	set := OpenCounters(src, Events, []int{1})
	set.Begin()
	for _, ev := range Events { // one region: its deltas are the reads
		if r, ok := src.reads[ev.Name]; ok {
			src.reads[ev.Name] = [3]uint64{2 * r[0], 2 * r[1], 2 * r[2]}
		}
	}
	set.End()
	for _, v := range set.Values() {
		if v.Unsupported != want[v.Name] {
			t.Errorf("CounterSet %s: %q, the rule says %q", v.Name, v.Unsupported, want[v.Name])
		}
	}
	for ev := range want { // back to one stretch's reads
		if r, ok := src.reads[ev]; ok {
			src.reads[ev] = [3]uint64{r[0] / 2, r[1] / 2, r[2] / 2}
		}
	}
	for _, ev := range Events {
		ok, why := probeEvent(src, ev)
		if why != want[ev.Name] || ok != (why == "") {
			t.Errorf("ProbeEvent %s: %v %q, the rule says %q", ev.Name, ok, why, want[ev.Name])
		}
	}
	for _, r := range OpenTree(src, Events, 1).Read() {
		if r.Unsupported != want[r.Event.Name] || (r.Value == nil) != (r.Unsupported != "") {
			t.Errorf("TreeCounters %s: value %v, %q; the rule says %q", r.Event.Name, r.Value, r.Unsupported, want[r.Event.Name])
		}
	}
}
