package watch

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func task(pid, tid int, name string, vol, invol, mig, run, runq uint64) procstat.Task {
	return procstat.Task{PID: pid, TID: tid, Comm: name, Voluntary: vol, Involuntary: invol,
		HasSched: true, Migrations: mig, HasSchedstat: true, RunNs: run, RunqNs: runq}
}

func snap(at time.Time, ts ...procstat.Task) snapshot {
	s := snapshot{at: at, tasks: map[key]procstat.Task{}, procs: 1}
	for _, t := range ts {
		s.tasks[key{t.PID, t.TID}] = t
	}
	return s
}

func find(p Profile, tid int) Thread {
	for _, t := range p.Threads {
		if t.TID == tid {
			return t
		}
	}
	return Thread{}
}

func TestDelta(t *testing.T) {
	prev := snap(t0,
		task(1, 1, "main", 100, 10, 5, 1e9, 1e8),
		task(1, 2, "worker", 50, 5, 1, 5e8, 5e7),
		task(1, 3, "gone", 7, 7, 7, 7, 7),
		task(1, 4, "reused", 1000, 1000, 10, 1e9, 1e9))
	cur := snap(t0.Add(2*time.Second),
		task(1, 1, "main", 300, 30, 9, 2e9, 3e8),
		task(1, 2, "worker", 50, 5, 1, 5e8, 5e7),
		task(1, 4, "reused", 3, 1, 0, 1e6, 2e6), // counters went backwards: a new thread with an old TID
		task(1, 5, "new", 40, 2, 1, 1e7, 1e6))
	p := Delta(prev, cur, 2)
	if p.Seconds != 2 || p.CPUs != 2 || len(p.Threads) != 5 {
		t.Fatalf("profile = %+v", p)
	}
	if m := find(p, 1); m.Vol != 200 || m.Invol != 20 || m.Migrations != 4 || m.CPUNs != 1e9 || m.RunqNs != 2e8 || m.Started || m.Exited {
		t.Errorf("main = %+v", m)
	}
	if g := find(p, 3); !g.Exited || g.Switches() != 0 {
		t.Errorf("gone = %+v", g)
	}
	if r := find(p, 4); !r.Started || r.Vol != 3 || r.RunqNs != 2e6 {
		t.Errorf("reused = %+v", r)
	}
	if n := find(p, 5); !n.Started || n.Vol != 40 {
		t.Errorf("new = %+v", n)
	}
	if p.Total.Vol != 200+0+3+40 || p.Total.Threads != 5 {
		t.Errorf("total = %+v", p.Total)
	}
	if p.Threads[0].TID != 1 { // sorted by switches
		t.Errorf("first row = %+v", p.Threads[0])
	}
	if got := p.Rate(p.Total.Vol); got != 121.5 {
		t.Errorf("rate = %v", got)
	}
}

func TestDeltaUnavailable(t *testing.T) {
	a := procstat.Task{PID: 1, TID: 1, Comm: "x", Voluntary: 1}
	b := procstat.Task{PID: 1, TID: 1, Comm: "x", Voluntary: 11}
	p := Delta(snap(t0, a), snap(t0.Add(time.Second), b), 2)
	if p.Threads[0].HasSched || p.Threads[0].HasSchedstat || p.Total.HasSchedstat || len(p.Notes) != 2 {
		t.Fatalf("profile = %+v", p)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, p, "interval", nil); err != nil {
		t.Fatal(err)
	}
	line := strings.SplitN(buf.String(), "\n", 2)[0]
	for _, want := range []string{`"migrations_per_s":null`, `"cpu_pct":null`, `"runq_ms_per_s":null`, `"voluntary_per_s":10`} {
		if !strings.Contains(line, want) {
			t.Errorf("JSON line %s lacks %s", line, want)
		}
	}
	buf.Reset()
	if err := WriteTable(&buf, "t", p, nil, 0); err != nil || strings.Count(buf.String(), "n/a") != 8 {
		t.Errorf("table says n/a %d times:\n%s", strings.Count(buf.String(), "n/a"), buf.String())
	}
}

func TestAccumulateByNameTop(t *testing.T) {
	var sum Profile
	for i := 0; i < 3; i++ {
		iv := Profile{Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i+1) * time.Second), Seconds: 1, CPUs: 2,
			Threads: []Thread{
				{PID: 1, TID: 1, Name: "main", Threads: 1, Vol: 10, HasSched: true, HasSchedstat: true},
				{PID: 1, TID: 2, Name: "pool", Threads: 1, Invol: 5, RunqNs: 100, HasSched: true, HasSchedstat: true},
				{PID: 1, TID: 3, Name: "pool", Threads: 1, Invol: 7, RunqNs: 1000, HasSched: true, HasSchedstat: true, Exited: i == 2},
			}, Cgroup: Cgroup{Available: true, Version: 2, Quota: "max", ThrottledPeriods: 1, ThrottledUs: 10}}
		iv.total()
		sum.Accumulate(iv)
	}
	if sum.Seconds != 3 || len(sum.Threads) != 3 || sum.Total.Vol != 30 || sum.Total.Invol != 36 || sum.Total.Threads != 3 {
		t.Fatalf("sum = %+v", sum)
	}
	if sum.Cgroup.ThrottledPeriods != 3 || sum.Cgroup.ThrottledUs != 30 || !find(sum, 3).Exited || find(sum, 1).Threads != 1 {
		t.Errorf("sum cgroup/threads = %+v", sum)
	}
	by := sum.ByName()
	by.Sort("runq")
	if len(by.Threads) != 2 || by.Threads[0].Name != "pool" || by.Threads[0].Threads != 2 || by.Threads[0].Invol != 36 || !by.Threads[0].Exited {
		t.Errorf("by name = %+v", by.Threads)
	}
	if hidden := by.Top(1); hidden != 1 || len(by.Threads) != 1 || by.Total.Threads != 3 {
		t.Errorf("top: hidden %d, %+v", hidden, by)
	}
}

// profile builds a one-thread-per-row profile of secs seconds.
func profile(secs float64, cpus int, rows ...Thread) Profile {
	p := Profile{Seconds: secs, CPUs: cpus, End: t0}
	for i, r := range rows {
		r.Threads, r.TID, r.HasSched, r.HasSchedstat = 1, i+1, true, !r.HasSchedstat
		if r.Name == "" {
			r.Name = "t"
		}
		p.Threads = append(p.Threads, r)
	}
	p.total()
	return p
}

func kinds(rs []Reading) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Subject+":"+r.Kind)
	}
	return out
}

func TestReadings(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Profile
		want []string
		text []string // substrings the first reading must carry (its numbers)
	}{
		{"quiet", profile(1, 2, Thread{Vol: 5, Invol: 1}), []string{"process:quiet"}, []string{"6.00 switches/s"}},
		{"blocking", profile(1, 2, Thread{Vol: 9000, Invol: 100, CPUNs: 5e7, RunqNs: 1e6}),
			[]string{"process:blocking"}, []string{"99% of 9100 switches/s", "batching"}},
		{"oversubscribed", profile(1, 2,
			Thread{Invol: 500, Vol: 5, CPUNs: 5e8, RunqNs: 9e8}, Thread{Invol: 500, CPUNs: 5e8, RunqNs: 9e8},
			Thread{Invol: 500, CPUNs: 5e8, RunqNs: 9e8}, Thread{Invol: 500, CPUNs: 5e8, RunqNs: 9e8}),
			[]string{"process:oversubscribed"}, []string{"run-queue wait of 3.6 s per second", "5.6 of its threads wanted a CPU on 2 CPUs", "smaller pool"}},
		{"others compete", profile(1, 2, Thread{Invol: 500, CPUNs: 5e8, RunqNs: 4e8}),
			[]string{"process:oversubscribed"}, []string{"other processes"}},
		{"yield", profile(1, 2, Thread{Invol: 100000, CPUNs: 9e8, RunqNs: 1e7}),
			[]string{"process:yield-or-preempted"}, []string{"sched_yield", "1% of the time"}},
		{"no schedstat", profile(1, 2, Thread{Invol: 1000, HasSchedstat: true}),
			[]string{"process:involuntary"}, []string{"unavailable"}},
		{"handoff", profile(1, 2, Thread{Vol: 500, Invol: 500, CPUNs: 1e7, RunqNs: 1e6}, Thread{Vol: 600, Invol: 400, CPUNs: 1e7, RunqNs: 1e6}),
			[]string{"process:blocking"}, []string{"tight blocking handoff", "1 µs per switch"}},
		{"migrating", profile(1, 2, Thread{Vol: 1000, Migrations: 400, CPUNs: 1e7}),
			[]string{"process:blocking", "process:migrating"}, []string{"batching"}},
		{"notable thread differs", profile(1, 2, Thread{Vol: 10000, CPUNs: 1e7}, Thread{Name: "spin", Invol: 3000, CPUNs: 5e8, RunqNs: 5e8}),
			[]string{"process:blocking", "thread 2 (spin):oversubscribed"}, nil},
	} {
		got := Read(tc.p, 3)
		if strings.Join(kinds(got), ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: readings %v, want %v: %+v", tc.name, kinds(got), tc.want, got)
			continue
		}
		for _, s := range tc.text {
			if !strings.Contains(got[0].Text, s) {
				t.Errorf("%s: %q lacks %q", tc.name, got[0].Text, s)
			}
		}
	}
	throttled := profile(1, 2, Thread{Vol: 1})
	throttled.Cgroup = Cgroup{Available: true, Version: 2, Quota: "50000 100000", ThrottledPeriods: 8, ThrottledUs: 300000}
	got := Read(throttled, 3)
	if len(got) != 2 || got[1].Kind != KindThrottled || !strings.Contains(got[1].Text, "8 CFS periods for 300 ms") || !strings.Contains(got[1].Text, "0.50 CPUs") {
		t.Errorf("throttled: %+v", got)
	}
	if Read(Profile{}, 3) != nil {
		t.Error("an empty profile has no reading")
	}
}

func TestCgroup(t *testing.T) {
	mount := t.TempDir()
	v1 := filepath.Join(mount, "cpu", "docker", "abc")
	if err := os.MkdirAll(v1, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(v1, "cpu.stat"), "nr_periods 10\nnr_throttled 4\nthrottled_time 5000000\n")
	write(filepath.Join(v1, "cpu.cfs_quota_us"), "50000\n")
	write(filepath.Join(v1, "cpu.cfs_period_us"), "100000\n")
	cg, err := FindCgroup("../procstat/testdata/proc", mount, 200)
	if err != nil || cg.Version != 1 || cg.Dir != v1 {
		t.Fatalf("FindCgroup = %+v, %v", cg, err)
	}
	c := cg.Read()
	if !c.OK || c.Quota != "50000 100000" || c.Throttled != 4 || c.ThrottledUs != 5000 {
		t.Errorf("Read = %+v", c)
	}
	v2 := filepath.Join(mount, "user.slice", "app.service")
	if err := os.MkdirAll(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(v2, "cpu.max"), "max 100000\n")
	write(filepath.Join(v2, "cpu.stat"), "usage_usec 1\nnr_periods 3\nnr_throttled 1\nthrottled_usec 77\n")
	cg, err = FindCgroup("../procstat/testdata/proc", mount, 100)
	if err != nil || cg.Version != 2 {
		t.Fatalf("FindCgroup v2 = %+v, %v", cg, err)
	}
	if c := cg.Read(); c.Quota != "max" || c.Throttled != 1 || c.ThrottledUs != 77 {
		t.Errorf("Read v2 = %+v", c)
	}
	if _, err := FindCgroup("../procstat/testdata/proc", mount, 999); err == nil {
		t.Error("FindCgroup of a missing PID succeeded")
	}
	if QuotaCPUs("50000 100000") != 0.5 || QuotaCPUs("max") != 0 {
		t.Error("QuotaCPUs")
	}
}

func TestWatcherFixture(t *testing.T) {
	root := procstat.Root("../procstat/testdata/proc")
	if _, err := NewWatcher(root, []int{999}); !errors.Is(err, procstat.ErrNoProcess) {
		t.Errorf("NewWatcher(999) = %v, want ErrNoProcess", err)
	}
	if _, err := NewWatcher(root, []int{300}); !errors.Is(err, procstat.ErrParse) {
		t.Errorf("NewWatcher(300 malformed) = %v, want ErrParse", err)
	}
	w, err := NewWatcher(root, []int{100})
	if err != nil {
		t.Fatal(err)
	}
	w.Descendants = true
	w.Begin()
	p, err := w.Step()
	if err != nil {
		t.Fatal(err)
	}
	// 100's two readable threads and 200's one; 301 has no task dir.
	if p.Procs != 2 || len(p.Threads) != 3 || p.Total.Switches() != 0 {
		t.Errorf("step over an unchanging fixture = %+v", p)
	}
}

func TestRecordsJSON(t *testing.T) {
	p := profile(2, 2, Thread{Vol: 10, Invol: 4, CPUNs: 1e9, RunqNs: 1e8, Migrations: 2})
	p.Cgroup = Cgroup{Available: true, Version: 1, Quota: "max"}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, p, "summary", Read(p, 1)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var kindsSeen []string
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if m["phase"] != "summary" {
			t.Errorf("phase in %s", l)
		}
		kindsSeen = append(kindsSeen, m["kind"].(string))
	}
	if strings.Join(kindsSeen, ",") != "thread,process,cgroup,reading" {
		t.Errorf("kinds %v", kindsSeen)
	}
	var r Record
	_ = json.Unmarshal([]byte(lines[0]), &r)
	if r.VolPerSec != 5 || *r.CPUPct != 50 || *r.RunqMsPerSec != 50 || *r.RunqUsPerSwitch != 7142.857 || *r.MigrPerSec != 1 {
		t.Errorf("record = %+v", r)
	}
}

func TestWatcherPIDReuse(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../procstat/testdata/proc")); err != nil {
		t.Fatal(err)
	}
	root := procstat.Root(dir)
	w, err := NewWatcher(root, []int{200})
	if err != nil {
		t.Fatal(err)
	}
	w.Begin()
	if _, err := w.Step(); err != nil {
		t.Fatal(err)
	}
	stat := filepath.Join(dir, "200", "stat")
	b, _ := os.ReadFile(stat)
	if err := os.WriteFile(stat, bytes.Replace(b, []byte(" 6000 "), []byte(" 9999 "), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = w.Step()
	if !errors.Is(err, ErrGone) || !strings.Contains(w.GoneReason, "PID now belongs to another process") {
		t.Errorf("after reuse: %v (%s)", err, w.GoneReason)
	}
	// A zombie is read one last time, then the watch ends.
	w2, _ := NewWatcher(root, []int{100})
	w2.Begin()
	s, _ := os.ReadFile(filepath.Join(dir, "100", "stat"))
	_ = os.WriteFile(filepath.Join(dir, "100", "stat"), bytes.Replace(s, []byte(") S "), []byte(") Z "), 1), 0o644)
	p, err := w2.Step()
	if !errors.Is(err, ErrGone) || len(p.Threads) != 2 || !strings.Contains(w2.GoneReason, "has exited") {
		t.Errorf("zombie: %v, %+v", err, p)
	}
}

func TestWatcherPeers(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../procstat/testdata/proc")); err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(procstat.Root(dir), []int{100, 200})
	if err != nil {
		t.Fatal(err)
	}
	w.Begin()
	if err := os.RemoveAll(filepath.Join(dir, "100")); err != nil {
		t.Fatal(err)
	}
	if p, err := w.Step(); err != nil || p.Procs != 1 {
		t.Fatalf("one peer gone: %v, %+v", err, p)
	}
	if err := os.RemoveAll(filepath.Join(dir, "200")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Step(); !errors.Is(err, ErrGone) || w.GoneReason != "every watched process has exited" {
		t.Errorf("all peers gone: %v (%s)", err, w.GoneReason)
	}
	if len(w.Summary.Threads) != 3 {
		t.Errorf("summary keeps threads of exited processes: %+v", w.Summary.Threads)
	}
}

// A parent that hardly switches points at its children that do: their
// switches are counted apart from the process's, and the reading names
// the busiest child to watch.
func TestWatcherCountsChildren(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../procstat/testdata/proc")); err != nil {
		t.Fatal(err)
	}
	w, err := NewWatcher(procstat.Root(dir), []int{100})
	if err != nil {
		t.Fatal(err)
	}
	w.Children = true
	w.Begin()
	st := filepath.Join(dir, "200", "task", "200", "status")
	b, _ := os.ReadFile(st)
	b = bytes.Replace(b, []byte("voluntary_ctxt_switches:\t5\n"), []byte("voluntary_ctxt_switches:\t5005\n"), 1)
	if err := os.WriteFile(st, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := w.Step()
	if err != nil {
		t.Fatal(err)
	}
	// 200 is 100's child; 301, its grandchild, has no task directory.
	if c := p.Children; c.Procs != 1 || c.Total.Vol != 5000 || c.Busiest != 200 {
		t.Errorf("children = %+v, want 1 process, 5000 voluntary switches, busiest 200", c)
	}
	if p.Total.Switches() != 0 || p.Procs != 1 {
		t.Errorf("the child's switches leaked into the process's own: %+v", p.Total)
	}
	p.Seconds = 1
	rs := Read(p, 3)
	if len(rs) < 2 || rs[0].Kind != KindQuiet || rs[1].Kind != KindChildren ||
		!strings.Contains(rs[1].Text, "but its 1 child process(es) switch 5000/s") || !strings.Contains(rs[1].Text, "ctxlab watch 200") {
		t.Errorf("readings %+v: want the quiet process, then its children named", rs)
	}
	if w.Summary.Children.Total.Vol != 5000 || w.Summary.Children.Busiest != 200 {
		t.Errorf("summary children = %+v", w.Summary.Children)
	}
	var kinds []string
	for _, r := range Records(p, "summary", nil) {
		if rec, ok := r.(Record); ok {
			kinds = append(kinds, rec.Kind)
		}
	}
	if strings.Join(kinds, ",") != "thread,thread,process,children" {
		t.Errorf("record kinds %v", kinds)
	}
	// Without Children the descendants are not read at all.
	w2, _ := NewWatcher(procstat.Root(dir), []int{100})
	w2.Begin()
	if p, _ := w2.Step(); p.Children.Procs != 0 {
		t.Errorf("children counted without Children: %+v", p.Children)
	}
}
