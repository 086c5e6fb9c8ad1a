package measure

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CounterSource opens and reads perf counters. PerfSource is the real one
// (perf_event_open); tests use a fake so the group-read parsing, scaling,
// derived figures and unsupported reasons are checked without a PMU.
type CounterSource interface {
	// Open opens ev counting thread tid. groupFD is the leader's fd, or -1
	// for a leader or a standalone counter. group asks for the
	// PERF_FORMAT_GROUP read layout (used on leaders and their members).
	Open(ev EventSpec, tid, groupFD int, group bool) (fd int, err error)
	// Read reads fd into buf and returns the bytes read.
	Read(fd int, buf []byte) (int, error)
	Close(fd int) error
}

// PerfSource is the CounterSource backed by perf_event_open(2). Events
// count user space only (as ProbeEvent does), so what `ctxlab env` lists as
// working is what a run can open.
type PerfSource struct{}

// Open implements CounterSource.
func (PerfSource) Open(ev EventSpec, tid, groupFD int, group bool) (int, error) {
	format := uint64(unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING)
	if group {
		format |= unix.PERF_FORMAT_GROUP
	}
	return openAttr(ev, tid, groupFD, format, false)
}

// Read implements CounterSource.
func (PerfSource) Read(fd int, buf []byte) (int, error) { return unix.Read(fd, buf) }

// Close implements CounterSource, noting the time for PerfSettleLeft.
func (PerfSource) Close(fd int) error { return closeEvent(fd) }

// openAttr opens ev. Hardware events count user space only, which
// perf_event_paranoid=2 allows. Software events try to include the kernel
// first: context switches and migrations happen there, so a user-only
// context-switches counter reads a silent 0. Where the kernel is refused
// (EACCES), task-clock and page-faults fall back to user space; switches
// and migrations are then unsupported, with that reason.
func openAttr(ev EventSpec, tid, groupFD int, format uint64, disabled bool) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        ev.Type,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      ev.Config,
		Read_format: format,
		Bits:        unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	if disabled {
		attr.Bits |= unix.PerfBitDisabled
	}
	if ev.Kind == "software" {
		a := attr
		a.Bits &^= unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv
		fd, err := unix.PerfEventOpen(&a, tid, -1, groupFD, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil || !(errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) || kernelOnly(ev) {
			return fd, err
		}
	}
	return unix.PerfEventOpen(&attr, tid, -1, groupFD, unix.PERF_FLAG_FD_CLOEXEC)
}

// ErrShortRead is wrapped by errors from parsing a perf read that is
// shorter than its layout says.
var ErrShortRead = errors.New("perf: short read")

// GroupRead is one read of a counter group (PERF_FORMAT_GROUP with both
// times): how long the group was enabled and actually on the PMU, and one
// raw value per member in the order they were opened.
type GroupRead struct {
	Enabled, Running uint64
	Values           []uint64
}

// ParseGroupRead parses the kernel's group read layout
// {nr, time_enabled, time_running, value[nr]} into g, reusing g.Values.
func ParseGroupRead(buf []byte, g *GroupRead) error {
	if len(buf) < 24 {
		return fmt.Errorf("%w: %d bytes, want at least 24", ErrShortRead, len(buf))
	}
	nr := binary.NativeEndian.Uint64(buf[0:])
	if nr > uint64(len(buf)) || uint64(len(buf)) < 24+8*nr {
		return fmt.Errorf("%w: %d bytes for %d values", ErrShortRead, len(buf), nr)
	}
	g.Enabled = binary.NativeEndian.Uint64(buf[8:])
	g.Running = binary.NativeEndian.Uint64(buf[16:])
	g.Values = g.Values[:0]
	for i := uint64(0); i < nr; i++ {
		g.Values = append(g.Values, binary.NativeEndian.Uint64(buf[24+8*i:]))
	}
	return nil
}

// ParseSingleRead parses a standalone counter's read {value, time_enabled,
// time_running} into g as a group of one.
func ParseSingleRead(buf []byte, g *GroupRead) error {
	if len(buf) < 24 {
		return fmt.Errorf("%w: %d bytes, want 24", ErrShortRead, len(buf))
	}
	g.Values = append(g.Values[:0], binary.NativeEndian.Uint64(buf[0:]))
	g.Enabled = binary.NativeEndian.Uint64(buf[8:])
	g.Running = binary.NativeEndian.Uint64(buf[16:])
	return nil
}

// Scale estimates a multiplexed counter's full count from a delta of its
// raw value over the deltas of its enabled and running times, as perf stat
// does. It reports ok=false when the counter never ran (nothing to scale).
func Scale(value, enabled, running uint64) (float64, bool) {
	if running == 0 {
		return 0, false
	}
	if enabled <= running {
		return float64(value), true
	}
	return float64(value) * float64(enabled) / float64(running), true
}

// CounterValue is one counter's total over the measured region, summed over
// every thread it was opened on, or the reason it is unsupported.
type CounterValue struct {
	Name, Kind string
	Value      float64 // scaled count; meaningless when Unsupported is set
	// RunningFraction is time_running/time_enabled (1 = never multiplexed).
	RunningFraction float64
	Unsupported     string
}

// reader is one fd the set reads: a group leader or a standalone counter,
// and which events (indices into the set's events) its values belong to.
type reader struct {
	fd     int
	group  bool
	events []int
}

// CounterSet is a set of events opened on a list of threads: per thread,
// hardware events form one group and software events another (read with
// one syscall each); an event the kernel refuses to add to a group is
// opened on its own. Begin and End bracket a measured region; the set
// accumulates scaled deltas over any number of regions.
type CounterSet struct {
	src      CounterSource
	events   []EventSpec
	readers  []reader
	fds      []int
	openErr  []error // per event: the first open error
	openedOn []int   // per event: threads it opened on
	threads  int

	buf       []byte
	cur       GroupRead
	base, now []uint64 // per reader: enabled, running, values…
	offs      []int    // per reader: offset into base/now
	total     []float64
	enabled   []uint64
	running   []uint64
	regions   int
	saved     savedTotals // at the last Mark
}

// savedTotals are a CounterSet's totals at a Mark.
type savedTotals struct {
	total            []float64
	enabled, running []uint64
	regions          int
}

// OpenCounters opens events on each thread in tids with src. It never
// fails: events that cannot be opened anywhere are reported unsupported by
// Values, with the reason from UnsupportedReason.
func OpenCounters(src CounterSource, events []EventSpec, tids []int) *CounterSet {
	s := &CounterSet{src: src, events: events, threads: len(tids),
		openErr: make([]error, len(events)), openedOn: make([]int, len(events))}
	fail := func(i int, err error) {
		if s.openErr[i] == nil {
			s.openErr[i] = err
		}
	}
	for _, tid := range tids {
		for _, kind := range []string{"hardware", "software"} {
			leader := -1
			var grp reader
			for i, ev := range events {
				if ev.Kind != kind {
					continue
				}
				if leader < 0 {
					fd, err := src.Open(ev, tid, -1, true)
					if err != nil {
						fail(i, err)
						continue
					}
					leader = fd
					s.fds = append(s.fds, fd)
					grp = reader{fd: fd, group: true, events: []int{i}}
					s.openedOn[i]++
					continue
				}
				fd, err := src.Open(ev, tid, leader, true)
				if err == nil {
					s.fds = append(s.fds, fd)
					grp.events = append(grp.events, i)
					s.openedOn[i]++
					continue
				}
				// The group would not take it (PMU too small, mixed
				// types): count it on its own instead.
				fd, err = src.Open(ev, tid, -1, false)
				if err != nil {
					fail(i, err)
					continue
				}
				s.fds = append(s.fds, fd)
				s.readers = append(s.readers, reader{fd: fd, events: []int{i}})
				s.openedOn[i]++
			}
			if leader >= 0 {
				s.readers = append(s.readers, grp)
			}
		}
	}
	n := 0
	for _, r := range s.readers {
		s.offs = append(s.offs, n)
		n += 2 + len(r.events)
	}
	s.base, s.now = make([]uint64, n), make([]uint64, n)
	s.total = make([]float64, len(events))
	s.enabled = make([]uint64, len(events))
	s.running = make([]uint64, len(events))
	s.buf = make([]byte, 24+8*len(events))
	s.cur.Values = make([]uint64, 0, len(events))
	return s
}

// Open reports whether any counter is open.
func (s *CounterSet) Open() bool { return s != nil && len(s.readers) > 0 }

func (s *CounterSet) read(into []uint64) error {
	for k, r := range s.readers {
		n, err := s.src.Read(r.fd, s.buf)
		if err != nil {
			return err
		}
		if r.group {
			err = ParseGroupRead(s.buf[:n], &s.cur)
		} else {
			err = ParseSingleRead(s.buf[:n], &s.cur)
		}
		if err != nil {
			return err
		}
		if len(s.cur.Values) != len(r.events) {
			return fmt.Errorf("perf: group read has %d values, %d counters were opened", len(s.cur.Values), len(r.events))
		}
		o := s.offs[k]
		into[o], into[o+1] = s.cur.Enabled, s.cur.Running
		copy(into[o+2:], s.cur.Values)
	}
	return nil
}

// Begin marks the start of a measured region.
func (s *CounterSet) Begin() error {
	if !s.Open() {
		return nil
	}
	return s.read(s.base)
}

// End closes a measured region and adds its scaled deltas to the totals.
func (s *CounterSet) End() error {
	if !s.Open() {
		return nil
	}
	if err := s.read(s.now); err != nil {
		return err
	}
	for k, r := range s.readers {
		o := s.offs[k]
		de, dr := s.now[o]-s.base[o], s.now[o+1]-s.base[o+1]
		for j, ev := range r.events {
			dv := s.now[o+2+j] - s.base[o+2+j]
			if v, ok := Scale(dv, de, dr); ok {
				s.total[ev] += v
			}
			s.enabled[ev] += de
			s.running[ev] += dr
		}
	}
	s.regions++
	return nil
}

// Mark remembers the totals so far; Rollback returns to them, dropping
// regions measured since (a repetition that failed).
func (s *CounterSet) Mark() {
	if !s.Open() {
		return
	}
	s.saved.total = append(s.saved.total[:0], s.total...)
	s.saved.enabled = append(s.saved.enabled[:0], s.enabled...)
	s.saved.running = append(s.saved.running[:0], s.running...)
	s.saved.regions = s.regions
}

// Rollback drops what was measured since the last Mark (all of it when
// there was none).
func (s *CounterSet) Rollback() {
	if !s.Open() {
		return
	}
	if s.saved.total == nil {
		clear(s.total)
		clear(s.enabled)
		clear(s.running)
		s.regions = 0
		return
	}
	copy(s.total, s.saved.total)
	copy(s.enabled, s.saved.enabled)
	copy(s.running, s.saved.running)
	s.regions = s.saved.regions
}

// Values returns each event's total over the regions measured, or why it
// is unsupported (Count.Unsupported, the regions being real work): a
// counter never reads as 0 because it could not count.
func (s *CounterSet) Values() []CounterValue {
	out := make([]CounterValue, len(s.events))
	for i, ev := range s.events {
		v := CounterValue{Name: ev.Name, Kind: ev.Kind, Value: s.total[i]}
		switch {
		case s.openedOn[i] == 0 && s.openErr[i] != nil:
			v.Unsupported = Count{Event: ev, OpenErr: s.openErr[i]}.Unsupported()
		case s.openedOn[i] == 0:
			v.Unsupported = "no thread to count"
		case s.regions == 0:
			v.Unsupported = "nothing was measured"
		default:
			v.Unsupported = Count{Event: ev, Running: s.running[i], Value: s.total[i], Work: true}.Unsupported()
		}
		if s.enabled[i] > 0 {
			v.RunningFraction = float64(s.running[i]) / float64(s.enabled[i])
		}
		out[i] = v
	}
	return out
}

// Warnings says what a reader of the values should know: counters that
// were multiplexed (and so scaled), and counters that opened on only some
// of the threads.
func (s *CounterSet) Warnings() []string {
	var w []string
	for i, v := range s.Values() {
		if v.Unsupported != "" {
			continue
		}
		if v.RunningFraction > 0 && v.RunningFraction < 0.99 {
			w = append(w, fmt.Sprintf("counter %s was multiplexed: on the PMU %.0f%% of the time, scaled by time_enabled/time_running", v.Name, 100*v.RunningFraction))
		}
		if s.openedOn[i] < s.threads {
			reason := ""
			if s.openErr[i] != nil {
				reason = ": " + UnsupportedReason(s.openErr[i])
			}
			w = append(w, fmt.Sprintf("counter %s counts %d of %d threads%s", v.Name, s.openedOn[i], s.threads, reason))
		}
	}
	return w
}

// Close closes every fd; the set is unusable afterwards.
func (s *CounterSet) Close() {
	if s == nil {
		return
	}
	for _, fd := range s.fds {
		s.src.Close(fd)
	}
	s.fds, s.readers = nil, nil
}

// Derived computes the figures perf stat prints next to raw counts from
// the supported values: IPC (instructions per cycle) and misses per 1 000
// instructions. A figure whose inputs are unsupported is left out.
func Derived(vals []CounterValue) map[string]float64 {
	get := func(name string) (float64, bool) {
		for _, v := range vals {
			if v.Name == name && v.Unsupported == "" {
				return v.Value, true
			}
		}
		return 0, false
	}
	out := map[string]float64{}
	ins, okI := get("instructions")
	if cyc, ok := get("cycles"); ok && okI && cyc > 0 {
		out["ipc"] = ins / cyc
	}
	if okI && ins > 0 {
		for _, m := range []string{"LLC-load-misses", "dTLB-load-misses", "branch-misses"} {
			if v, ok := get(m); ok {
				out[strings.ToLower(m)+"/1k-instructions"] = 1000 * v / ins
			}
		}
	}
	return out
}
