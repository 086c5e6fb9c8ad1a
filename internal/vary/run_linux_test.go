package vary

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/result"
)

// fakePMU is a TreeSource that opens every event on the real process and
// reads set values: a machine with hardware counters, for the path this
// VM cannot take.
type fakePMU struct {
	values map[string]uint64
	fds    map[int]string
	opened []int
}

func (f *fakePMU) OpenInherited(ev measure.EventSpec, pid int) (int, bool, error) {
	fd := 1000 + len(f.fds)
	f.fds[fd] = ev.Name
	f.opened = append(f.opened, pid)
	return fd, false, nil
}

func (f *fakePMU) ReadCounter(fd int) (uint64, uint64, uint64, error) {
	return f.values[f.fds[fd]], 100, 100, nil
}

func (f *fakePMU) Close(int) error { return nil }

func command(args ...string) *Command {
	return &Command{Args: args, Env: os.Environ(), Interval: 20 * time.Millisecond, Timeout: 30 * time.Second,
		Source: measure.PerfTree{}, Events: measure.Events, Root: procstat.DefaultRoot}
}

var pt = Point{Names: []string{"T"}, Values: []string{"3"}}

// TestMain makes the test binary launch's keeper, as ctxlab's main does.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// running lists the processes whose command line holds marker.
func running(t *testing.T, marker string) []int {
	t.Helper()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !bytes.Contains(st, []byte(") Z ")) {
				var pid int
				for _, c := range e.Name() {
					pid = pid*10 + int(c-'0')
				}
				out = append(out, pid)
			}
		}
	}
	return out
}

// The hardware path on a fake PMU: a real command, its counters opened
// on its process, read as instructions, cycles, IPC and misses.
func TestRunWithFakeCounters(t *testing.T) {
	f := &fakePMU{fds: map[int]string{}, values: map[string]uint64{"instructions": 8e9, "cycles": 4e9, "LLC-load-misses": 8e6, "dTLB-load-misses": 2e6,
		"task-clock": 5e8, "context-switches": 40, "cpu-migrations": 3, "page-faults": 900, "branch-misses": 1e6}}
	c := command("sh", "-c", "test $T = {T}")
	c.Source = f
	s := c.Run(context.Background(), pt)
	if !s.OK() {
		t.Fatalf("run: %s %s", s.Status, s.Reason)
	}
	if len(f.opened) != len(measure.Events) || f.opened[0] <= 0 {
		t.Fatalf("opened on %v", f.opened)
	}
	for key, want := range map[string]float64{KeyIPC: 2, KeyLLC: 1, KeyDTLB: 0.25, KeyCPU: 5e8, KeySwitches: 40, KeyMigrations: 3, KeyFaults: 900, KeyInstructions: 8e9} {
		fg, _ := FigureByKey(key)
		v, _, why := fg.Get(s)
		if why != "" || !near(v, want) {
			t.Errorf("%s: %v (%s), want %v", key, v, why, want)
		}
	}
}

// What the real kernel gives: an unsupported counter is a reason, never
// 0; task-clock counts the command; the arguments and environment carry
// the value; the units of work come from the output.
func TestRunReal(t *testing.T) {
	c := command("sh", "-c", `test "$T" = 3 && test "$1" = 3 || exit 9; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo "elements: 1,500"`, "sh", "{T}")
	c.WorkFrom = regexp.MustCompile(`elements: ([\d,]+)`)
	s := c.Run(context.Background(), pt)
	if !s.OK() || s.Work != 1500 {
		t.Fatalf("run: %s %q, work %v", s.Status, s.Reason, s.Work)
	}
	if s.WallNs <= 0 || s.Rusage.UserNs+s.Rusage.SysNs <= 0 {
		t.Errorf("wall %d, rusage %+v", s.WallNs, s.Rusage)
	}
	for _, r := range s.Counters {
		if r.Value == nil && r.Unsupported == "" || r.Value != nil && r.Unsupported != "" {
			t.Errorf("%s: value %v and reason %q", r.Event.Name, r.Value, r.Unsupported)
		}
		if r.Event.Kind == "hardware" && r.Value != nil && *r.Value == 0 {
			t.Errorf("%s read 0", r.Event.Name)
		}
	}
	c.WorkFrom = regexp.MustCompile(`units: (\d+)`)
	if s := c.Run(context.Background(), pt); s.Status != result.StatusFailed || !strings.Contains(s.Reason, `--work-from "units: (\\d+)" found no match`) {
		t.Errorf("no work found: %s %q", s.Status, s.Reason)
	}
	c = command("sh", "-c", "kill -SEGV $$")
	if s := c.Run(context.Background(), pt); s.Status != result.StatusFailed || s.ExitStatus != 139 || s.Reason != "exit status 139 (killed by signal 11, segmentation fault)" {
		t.Errorf("a command killed by a signal: %s %d %q", s.Status, s.ExitStatus, s.Reason)
	}
	c = command("sh", "-c", "echo no such mode >&2; exit 3")
	if s := c.Run(context.Background(), pt); s.Status != result.StatusFailed || s.ExitStatus != 3 || s.Reason != "exit status 3: no such mode" {
		t.Errorf("failing command: %s %d %q", s.Status, s.ExitStatus, s.Reason)
	}
}

// Nothing a run starts outlives it: what it leaves running (in its
// process group, or a daemon in a session of its own) is stopped; a run
// past its time limit, or in flight at Ctrl-C, is stopped with all it
// started.
func TestRunLeavesNothing(t *testing.T) {
	c := command("sh", "-c", "setsid sleep 31.17 & sleep 31.17 & echo started")
	s := c.Run(context.Background(), pt)
	if !s.OK() || len(s.Notes) == 0 || !strings.Contains(strings.Join(s.Notes, ";"), "the command left 2 processes running when it exited") {
		t.Errorf("leftovers: %s %q %q", s.Status, s.Reason, s.Notes)
	}
	if left := running(t, "31.17"); len(left) > 0 {
		t.Errorf("still running after the run: %v", left)
	}

	c = command("sh", "-c", "trap '' TERM; setsid sleep 31.23 & sleep 31.23")
	c.Grace = 100 * time.Millisecond
	c.Timeout = 300 * time.Millisecond
	s = c.Run(context.Background(), pt)
	if s.Status != result.StatusTimedOut || !strings.Contains(s.Reason, "timed out: still running after 300ms") {
		t.Errorf("time limit: %s %q", s.Status, s.Reason)
	}
	if left := running(t, "31.23"); len(left) > 0 {
		t.Errorf("still running after the time limit: %v", left)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	c = command("sh", "-c", "trap '' INT; setsid sleep 31.29 & sleep 31.29")
	c.Grace = 100 * time.Millisecond
	s = c.Run(ctx, pt)
	if s.Status != result.StatusInterrupted {
		t.Errorf("interrupted: %s %q", s.Status, s.Reason)
	}
	if left := running(t, "31.29"); len(left) > 0 {
		t.Errorf("still running after Ctrl-C: %v", left)
	}
	if s := c.Run(ctx, pt); s.Status != result.StatusInterrupted || s.WallNs != 0 {
		t.Errorf("after Ctrl-C a run does not start: %+v", s)
	}
}

// The note on leftovers counts every one and names five, then how many
// more: 6 processes are "6 processes", five named and "and 1 more".
func TestLeftNote(t *testing.T) {
	var left []launch.Left
	for i := 1; i <= 6; i++ {
		left = append(left, launch.Left{PID: 100 + i, Comm: "sleep"})
	}
	n := LeftNote(left)
	if !strings.HasPrefix(n, "the command left 6 processes running when it exited (pid 101, sleep; ") || !strings.Contains(n, "pid 105, sleep; and 1 more)") || strings.Contains(n, "pid 106") {
		t.Errorf("6 left: %q", n)
	}
	if n := LeftNote(left[:1]); !strings.HasPrefix(n, "the command left 1 process running when it exited (pid 101, sleep)") {
		t.Errorf("1 left: %q", n)
	}
	if LeftNote(nil) != "" {
		t.Error("none left gives a note")
	}
}
