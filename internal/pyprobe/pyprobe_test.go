package pyprobe

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/procstat"
	"github.com/ctxlab/ctxlab/internal/watch"
)

func TestRecognise(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "serve")
	os.WriteFile(script, []byte("#!/usr/bin/env python3\nprint(1)\n"), 0o755)
	shScript := filepath.Join(dir, "run.sh")
	os.WriteFile(shScript, []byte("#!/bin/sh\necho\n"), 0o755)
	link := filepath.Join(dir, "py")
	os.WriteFile(filepath.Join(dir, "python3.11"), []byte{0x7f, 'E', 'L', 'F'}, 0o755)
	os.Symlink(filepath.Join(dir, "python3.11"), link)
	for _, c := range []struct {
		argv0, path string
		want        bool
	}{
		{"python3", "/usr/bin/python3", true},
		{"/opt/py/bin/python3.13t", "/opt/py/bin/python3.13t", true},
		{"python", "/usr/bin/python", true},
		{"py", link, true},          // a link to python3.11
		{"serve", script, true},     // #!/usr/bin/env python3
		{"run.sh", shScript, false}, // a shell script
		{"sh", "/bin/sh", false},
		{"pythonista", "/usr/bin/pythonista", false},
	} {
		if got, why := Recognise(c.argv0, c.path); got != c.want {
			t.Errorf("Recognise(%q, %q) = %v (%s), want %v", c.argv0, c.path, got, why, c.want)
		}
	}
}

func TestBlockingOption(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"app.py"}, ""},
		{[]string{"-u", "app.py"}, ""},
		{[]string{"-I", "app.py"}, "-I"},
		{[]string{"-uE", "app.py"}, "-E"},
		{[]string{"-X", "dev", "-S", "app.py"}, "-S"},
		{[]string{"-Wignore", "-S"}, "-S"},
		{[]string{"-c", "import sys", "-I"}, ""}, // -I belongs to the command's argv
		{[]string{"-m", "http.server", "-E"}, ""},
		{[]string{"app.py", "-I"}, ""}, // the script's own argument
		{[]string{"-cprint(1)"}, ""},
	} {
		if got := blockingOption(c.args); got != c.want {
			t.Errorf("blockingOption(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestUnderCProfiler(t *testing.T) {
	for _, c := range []struct {
		argv0 string
		args  []string
		want  string
	}{
		{"python3", []string{"-m", "cProfile", "-s", "cumtime", "app.py"}, "cProfile"},
		{"python3", []string{"-mcProfile", "app.py"}, "cProfile"},
		{"python3", []string{"-X", "dev", "-m", "profile", "app.py"}, "profile"},
		{"python3", []string{"-u", "-m", "yappi", "app.py"}, "yappi"},
		{"kernprof", []string{"-l", "app.py"}, "kernprof"},
		{"python3", []string{"-m", "pytest"}, ""},
		{"python3", []string{"app.py", "-m", "cProfile"}, ""},
		{"python3", []string{"-c", "import cProfile"}, ""},
	} {
		if got := underCProfiler(c.argv0, c.args); got != c.want {
			t.Errorf("underCProfiler(%s %q) = %q, want %q", c.argv0, c.args, got, c.want)
		}
	}
	if s, note := Prepare(context.Background(), ModeAuto, []string{"python3", "-m", "cProfile", "app.py"}, "/usr/bin/python3"); s != nil || !strings.Contains(note, "cProfile") {
		t.Errorf("python3 -m cProfile: want no probe and a note naming cProfile, got %q", note)
	}
}

func TestPrepareModes(t *testing.T) {
	if s, note := Prepare(context.Background(), ModeOff, []string{"python3", "a.py"}, "/usr/bin/python3"); s != nil || note != "" {
		t.Errorf("off: got a session or note %q", note)
	}
	if s, note := Prepare(context.Background(), ModeAuto, []string{"sh", "-c", "true"}, "/bin/sh"); s != nil || note != "" {
		t.Errorf("auto on sh: a non-Python command must be left alone, got note %q", note)
	}
	if s, note := Prepare(context.Background(), ModeAuto, []string{"python3", "-I", "a.py"}, "/usr/bin/python3"); s != nil || !strings.Contains(note, "-I") {
		t.Errorf("auto with -I: want no session and a note naming -I, got %q", note)
	}
	if s, note := Prepare(context.Background(), ModeOn, []string{"sh", "-c", "python3 a.py"}, "/bin/sh"); s != nil || !strings.Contains(note, "sh is not a Python interpreter") {
		t.Errorf("on, sh: a non-Python command's environment must be left alone, with a note saying why; got %v, %q", s, note)
	}
	s, note := Prepare(context.Background(), ModeOn, []string{"python3", "a.py"}, "/usr/bin/python3")
	if s == nil {
		t.Fatalf("on: no session (%s)", note)
	}
	dir := s.Dir()
	env := s.Env([]string{"HOME=/h", "PYTHONPATH=/mine", EnvVar + "=stale"})
	joined := strings.Join(env, "\n")
	if !strings.Contains(joined, "PYTHONPATH="+dir+string(os.PathListSeparator)+"/mine") || strings.Contains(joined, "stale") ||
		!strings.Contains(joined, EnvVar+"=3,tick_us=") || !strings.Contains(joined, "HOME=/h") {
		t.Errorf("env:\n%s", joined)
	}
	for _, f := range []string{"sitecustomize.py", "_ctxlab_pyprobe.py"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the probe's directory outlived Close: %v", err)
	}
}

// frames builds a pipe's worth of probe frames.
type frames struct{ bytes.Buffer }

func (f *frames) json(v any) {
	b, _ := json.Marshal(v)
	f.frame('J', b)
}

func (f *frames) frame(typ byte, b []byte) {
	var h [5]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(b)))
	h[4] = typ
	f.Write(h[:])
	f.Write(b)
}

func (f *frames) events(recs ...[recordLen]int64) {
	var b []byte
	for _, r := range recs {
		for _, v := range r {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	f.frame('E', b)
}

func hello(f *frames) {
	f.json(map[string]any{"kind": "hello", "protocol": 1, "pid": 100, "version": "3.11.7", "free_threaded": false, "gil_enabled": true,
		"switch_interval_s": 0.005, "tick_ns": 1_000_000, "main_ident": 1, "main_native_id": 100})
}

func final(f *frames) {
	f.json(map[string]any{"kind": "final", "pid": 100, "wall_ns": 2e9, "cpu_ns": 1e9, "switch_interval_s": 0.005, "gil_enabled": true,
		"threads": []any{}, "self_ns": map[string]any{"tick": 1e6, "flush": 1e5, "load": 1e6, "report": 1e5},
		"calibration": map[string]any{"cst_ns": 500.0, "call_ns": 1000.0, "cst_count_ns": 100.0, "call_count_ns": 150.0}})
}

func TestCollectorReport(t *testing.T) {
	var f frames
	hello(&f)
	f.json(map[string]any{"kind": "thread", "ident": 2, "native_id": 101, "name": "busy"})
	f.json(map[string]any{"kind": "loop", "loop": 1, "ident": 1, "class": "asyncio.unix_events._UnixSelectorEventLoop"})
	f.json(map[string]any{"kind": "site", "site": 1, "site_kind": "to_thread", "name": "__main__.lookup", "where": "app.py:3"})
	f.json(map[string]any{"kind": "site", "site": 2, "site_kind": "call_soon_threadsafe", "name": "asyncio.futures._set_state"})
	var recs [][recordLen]int64
	for i := 0; i < 99; i++ {
		recs = append(recs, [recordLen]int64{evLag, 1, 100_000, 900_000, 1_100_000, 0})
	}
	recs = append(recs, [recordLen]int64{evLag, 1, 10_000_000, 0, 11_000_000, 0}) // a 10 ms stall: 8 more values when corrected at the ticks' 1.1 ms cadence
	for i := 0; i < 50; i++ {
		recs = append(recs, [recordLen]int64{evCall, 1, 30_000, 10_000, 40_000, 0}, [recordLen]int64{evCST, 2, 20_000, 2, 0, 0})
	}
	recs = append(recs, [recordLen]int64{evCST, 2, 5_000, 1, 1, 0}) // from the loop's own thread
	// the counts, as the probe's flushes send them: every call, once
	recs = append(recs, [recordLen]int64{evCount, 1, 30, 0, 0, 0}, [recordLen]int64{evCount, 2, 50, 2, 0, 0},
		[recordLen]int64{evCount, 2, 1, 0, 1, 0}, [recordLen]int64{evCount, 1, 20, 0, 0, 0})
	f.events(recs...)
	final(&f)
	c := newCollector()
	if err := c.read(&f); err != nil {
		t.Fatal(err)
	}
	r := c.report()
	if !r.Loaded || !r.Final || r.Interpreter.Version != "3.11.7" || r.Interpreter.Build != "GIL" {
		t.Fatalf("interpreter: %+v", r.Interpreter)
	}
	if len(r.Loops) != 1 {
		t.Fatalf("loops: %+v", r.Loops)
	}
	l := r.Loops[0]
	if l.CorrectedEveryNs < 1_089_000 || l.CorrectedEveryNs > 1_111_000 {
		t.Errorf("corrected every %d ns, want the ticks' median cadence, 1.1 ms", l.CorrectedEveryNs)
	}
	if l.Ticks != 100 || l.Corrected != 8 || l.Lag.N != 108 || l.AsFired.N != 100 || l.LateTicks != 1 || l.Thread != "MainThread" {
		t.Errorf("loop: ticks %d corrected %d lag n %d fired n %d late %d thread %q", l.Ticks, l.Corrected, l.Lag.N, l.AsFired.N, l.LateTicks, l.Thread)
	}
	if l.AsFired.MaxNs != 10_000_000 || l.AsFired.P50Ns < 99_000 || l.AsFired.P50Ns > 101_000 {
		t.Errorf("as fired: %+v", l.AsFired)
	}
	if l.Lag.P99Ns < 7_700_000 { // 9 of 108 values are the stall's: 10, 8.9, 7.8 … 1.2 ms
		t.Errorf("corrected p99 %d: the stall counts once per tick it swallowed", l.Lag.P99Ns)
	}
	var site *Site
	for i := range r.Sites {
		if r.Sites[i].Name == "__main__.lookup" {
			site = &r.Sites[i]
		}
	}
	if site == nil || site.Calls != 50 || site.Timed != 50 || site.WorkNs != 10_000 || site.HopsPerWork != 7 {
		t.Fatalf("site: %+v", site)
	}
	for _, h := range r.Hops {
		if h.Of == "call_soon_threadsafe" && (h.Calls != 51 || h.Timed != 51 || h.SameThread != 1 || h.Hop.N != 50) {
			t.Errorf("cst hops: %+v", h)
		}
	}
	if r.Cost == nil || r.Cost.SelfNs != 1e6+1e5+1e6+51*500+50*1000 {
		t.Errorf("cost: %+v", r.Cost)
	}
	// Every record says its kind.
	for _, rec := range r.Records() {
		b, _ := json.Marshal(rec)
		if !strings.Contains(string(b), `"kind":"py-`) {
			t.Errorf("record without a py- kind: %s", b)
		}
	}
}

func TestCollectorBadInput(t *testing.T) {
	for name, in := range map[string][]byte{
		"huge frame":       {0xff, 0xff, 0xff, 0x7f, 'J'},
		"bad type":         {1, 0, 0, 0, 'Z', 'x'},
		"not json":         {3, 0, 0, 0, 'J', '{', '{', '{'},
		"half event":       {8, 0, 0, 0, 'E', 1, 2, 3, 4, 5, 6, 7, 8},
		"five-field event": append([]byte{40, 0, 0, 0, 'E'}, make([]byte, 40)...),
	} {
		c := newCollector()
		if err := c.read(bytes.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
		if r := c.report(); r.Loaded || len(r.Notes) == 0 {
			t.Errorf("%s: report %+v", name, r)
		}
	}
	// A cut-off pipe: what came is kept, and the missing end is said.
	var f frames
	hello(&f)
	f.events([recordLen]int64{evLag, 1, 1000, 0, 1_000_000, 0})
	c := newCollector()
	c.read(bytes.NewReader(f.Bytes()[:f.Len()-3]))
	r := c.report()
	if !r.Loaded || r.Final || !strings.Contains(strings.Join(r.Notes, " "), "final report did not arrive") {
		t.Errorf("cut off: %+v", r)
	}
}

func TestReadings(t *testing.T) {
	base := func() *Report {
		return &Report{Loaded: true, Interpreter: Interpreter{PID: 100, GILEnabled: true, SwitchS: 0.005},
			Threads: []Thread{{TID: 100, Name: "MainThread"}, {TID: 101, Name: "busy"}}}
	}
	loop := func(p99 int64, lateCPU float64) Loop {
		return Loop{Loop: 1, Thread: "MainThread", TID: 100, Ticks: 500, LateTicks: 300, LateRan: lateCPU, CPUShare: lateCPU, RunqKnown: true,
			Lag: Dist{N: 500, P50Ns: p99 / 2, P99Ns: p99}}
	}
	prof := func(busyCPU, busyRunq float64) *watch.Profile {
		return &watch.Profile{Seconds: 1, CPUs: 2, Threads: []watch.Thread{
			{PID: 100, TID: 100, Name: "python3", HasSchedstat: true, CPUNs: 1e8},
			{PID: 100, TID: 101, Name: "python3", HasSchedstat: true, CPUNs: uint64(busyCPU * 1e9), RunqNs: uint64(busyRunq * 1e9)}}}
	}
	kinds := func(r *Report) string {
		var ks []string
		for _, rd := range r.Readings {
			ks = append(ks, rd.Reading)
		}
		return strings.Join(ks, ",")
	}
	// GIL: lag p99 two intervals, a busy thread, the loop waited.
	r := base()
	r.Loops = []Loop{loop(10_600_000, 0.05)}
	p := prof(0.6, 0.3)
	Read(r, p)
	if kinds(r) != ReadGIL || !strings.Contains(r.Readings[0].Text, "switch interval 5 ms") || !strings.Contains(r.Readings[0].Text, "2.1×") {
		t.Errorf("GIL: %q %v", kinds(r), r.Readings)
	}
	if p.Threads[1].Name != "busy" {
		t.Errorf("the profile's row was not given Python's name: %q", p.Threads[1].Name)
	}
	// No busy thread: no GIL reading.
	r = base()
	r.Loops = []Loop{loop(10_600_000, 0.05)}
	Read(r, prof(0.05, 0))
	if kinds(r) != "" {
		t.Errorf("no busy thread: %q", kinds(r))
	}
	// The loop ran Python through its stalls: handlers, not the GIL.
	r = base()
	r.Loops = []Loop{loop(5_000_000, 0.9)}
	Read(r, prof(0.6, 0.3))
	if kinds(r) != ReadHandlerCPU {
		t.Errorf("handler: %q", kinds(r))
	}
	// A small lag is neither.
	r = base()
	r.Loops = []Loop{loop(900_000, 0.9)}
	Read(r, prof(0.6, 0.3))
	if kinds(r) != "" {
		t.Errorf("small lag: %q", kinds(r))
	}
	// Free-threaded, GIL off: said so, and no GIL reading.
	r = base()
	r.Interpreter.FreeThreaded, r.Interpreter.GILEnabled = true, false
	r.Loops = []Loop{loop(10_600_000, 0.05)}
	Read(r, prof(0.6, 0.3))
	if kinds(r) != ReadFreeThreaded || !strings.Contains(r.Readings[0].Text, "does not apply") {
		t.Errorf("free-threaded: %q", kinds(r))
	}
	// Hops over work, and a slow function that is not.
	r = base()
	r.Sites = []Site{{Of: "to_thread", Name: "__main__.lookup", Where: "app.py:3", Calls: 1000, Timed: 1000, WaitNs: 60e3, WorkNs: 20e3, BackNs: 80e3, HopsPerWork: 7},
		{Of: "to_thread", Name: "__main__.slow", Calls: 1000, Timed: 1000, WaitNs: 60e3, WorkNs: 5e6, BackNs: 80e3, HopsPerWork: 0.028}}
	Read(r, nil)
	if kinds(r) != ReadHops || !strings.Contains(r.Readings[0].Text, "7.0× the work") || !strings.Contains(r.Readings[0].Text, "__main__.lookup (app.py:3)") {
		t.Errorf("hops: %v", r.Readings)
	}
	// Timed in windows: the count is exact, and the text says how many
	// were timed; too few timed calls are not read, whatever the count.
	r = base()
	r.Sites = []Site{{Of: "to_thread", Name: "__main__.lookup", Calls: 1000, Timed: 40, WaitNs: 60e3, WorkNs: 20e3, BackNs: 80e3, HopsPerWork: 7},
		{Of: "to_thread", Name: "__main__.rare", Calls: 1000, Timed: 5, WaitNs: 60e3, WorkNs: 20e3, BackNs: 80e3, HopsPerWork: 7}}
	Read(r, nil)
	if kinds(r) != ReadHops || !strings.Contains(r.Readings[0].Text, ": 1000 calls (40 timed)") || strings.Contains(r.Readings[0].Text, "~") {
		t.Errorf("hops in windows: %v", r.Readings)
	}
}

// aiosqlite in windows: its calls, queries and hops are counted exactly,
// and its reading says how many calls were timed.
func TestReadingAiosqliteCounts(t *testing.T) {
	r := &Report{Loaded: true, Interpreter: Interpreter{PID: 100, GILEnabled: true, SwitchS: 0.005}}
	r.Sites = []Site{{Of: "aiosqlite", Name: "sqlite3.Connection.execute", Calls: 3000, Timed: 150, WaitNs: 60e3, WorkNs: 20e3, BackNs: 80e3},
		{Of: "aiosqlite", Name: "sqlite3.Cursor.fetchone", Calls: 3000, Timed: 140, WaitNs: 60e3, WorkNs: 5e3, BackNs: 80e3},
		{Of: "call_soon_threadsafe", Name: "aiosqlite.core.Connection.run.<locals>.set_result", Calls: 6002, Timed: 290}}
	Read(r, nil)
	if len(r.Readings) != 1 || r.Readings[0].Reading != ReadHops || !strings.Contains(r.Readings[0].Text, "aiosqlite: 6000 calls (290 timed) to its thread (Connection.execute 3000, Cursor.fetchone 3000)") ||
		!strings.Contains(r.Readings[0].Text, "2.0 thread-to-loop hops (call_soon_threadsafe from its thread) per query (6002 hops, 3000 execute calls)") ||
		!strings.Contains(r.Readings[0].Text, "12.5 µs of work each") || strings.Contains(r.Readings[0].Text, "~") {
		t.Errorf("aiosqlite in windows: %v", r.Readings)
	}
}

func TestIdentify(t *testing.T) {
	for _, c := range []struct {
		im      procstat.Image
		ok      bool
		version string
		ft      bool
	}{
		{procstat.Image{Exe: "/usr/bin/python3.11", Mapped: []string{"/usr/lib/x86_64-linux-gnu/libc.so.6"}}, true, "3.11", false},
		{procstat.Image{Exe: "/root/.pyenv/versions/3.11.7/bin/python3.11", Mapped: []string{"/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"}}, true, "3.11", false},
		{procstat.Image{Exe: "/opt/bin/python3.13t"}, true, "3.13", true},
		{procstat.Image{Exe: "/usr/sbin/uwsgi", Mapped: []string{"/usr/lib/libpython3.13t.so.1.0"}}, true, "3.13", true},
		{procstat.Image{Exe: "/opt/cpython/3.13.5t/bin/python3.13", Mapped: []string{"/opt/cpython/3.13.5t/lib/python3.13t/lib-dynload/_asyncio.cpython-313t-x86_64-linux-gnu.so"}}, true, "3.13", true},
		{procstat.Image{Exe: "/opt/cpython/3.13.5/bin/python3.13", Mapped: []string{"/opt/cpython/3.13.5/lib/python3.13/lib-dynload/_asyncio.cpython-313-x86_64-linux-gnu.so"}}, true, "3.13", false},
		{procstat.Image{Exe: "/usr/bin/bash", Mapped: []string{"/usr/lib/libc.so.6"}}, false, "", false},
	} {
		p, ok := identify(c.im)
		if ok != c.ok || p.Version != c.version || p.FreeThreaded != c.ft {
			t.Errorf("identify(%+v) = %+v, %v", c.im, p, ok)
		}
	}
}

func TestInferred(t *testing.T) {
	py := Process{PID: 7, Exe: "/usr/bin/python3.11", Version: "3.11"}
	prof := func(vol1, vol2 uint64, cpu1, cpu2 float64) watch.Profile {
		return watch.Profile{Seconds: 2, CPUs: 2, Threads: []watch.Thread{
			{PID: 7, TID: 7, HasSchedstat: true, Vol: vol1 * 2, CPUNs: uint64(cpu1 * 2e9)},
			{PID: 7, TID: 8, HasSchedstat: true, Vol: vol2 * 2, CPUNs: uint64(cpu2 * 2e9)}}}
	}
	has := func(rs []watch.Reading, kind string) bool {
		for _, r := range rs {
			if r.Kind == kind {
				return true
			}
		}
		return false
	}
	rs := Inferred(prof(300, 200, 0.1, 0.9), py)
	if !has(rs, ReadCPython) || !has(rs, ReadInferredGIL) || !strings.Contains(rs[1].Text, "inferred") || !strings.Contains(rs[1].Text, "diagnose") {
		t.Errorf("turn-taking: %v", rs)
	}
	if rs := Inferred(prof(300, 200, 0.1, 0.05), py); has(rs, ReadInferredGIL) {
		t.Errorf("a process far from one core: %v", rs)
	}
	if rs := Inferred(prof(300, 0, 0.1, 0.9), py); has(rs, ReadInferredGIL) {
		t.Errorf("one thread switching: %v", rs)
	}
	if rs := Inferred(prof(300, 200, 0.1, 0.9), Process{PID: 7, Version: "3.13", FreeThreaded: true}); has(rs, ReadInferredGIL) || !has(rs, ReadFreeThreaded) {
		t.Errorf("free-threaded: %v", rs)
	}
}

func TestFinishWithoutProbe(t *testing.T) {
	s, _ := Prepare(context.Background(), ModeOn, []string{"python3"}, "/usr/bin/python3")
	if s == nil {
		t.Fatal("no session")
	}
	s.Started() // nothing ever writes: the read ends at EOF at once
	r := s.Finish(time.Second)
	if r.Loaded || !strings.Contains(strings.Join(r.Notes, " "), "did not load") {
		t.Errorf("%+v", r)
	}
	if s.Dir() != "" {
		t.Error("directory not removed")
	}
}

// The probe reads schedstat about once a second, not at every tick: a
// segment's run-queue wait is shared out to its late ticks by wall time.
func TestCollectorRunqSegments(t *testing.T) {
	var f frames
	hello(&f)
	f.json(map[string]any{"kind": "loop", "loop": 1, "ident": 1, "class": "asyncio.unix_events._UnixSelectorEventLoop"})
	var recs [][recordLen]int64
	for i := 0; i < 90; i++ {
		recs = append(recs, [recordLen]int64{evLag, 1, 100_000, 500_000, 1_000_000, -1})
	}
	// a late tick: 10 ms of wall, of which the thread ran 2 ms
	recs = append(recs, [recordLen]int64{evLag, 1, 9_000_000, 2_000_000, 10_000_000, -1})
	// the segment: 100 ms of wall, 50 ms of it waiting for a CPU
	recs = append(recs, [recordLen]int64{evRunq, 1, 50_000_000, 100_000_000, 0, 0})
	f.events(recs...)
	final(&f)
	c := newCollector()
	if err := c.read(&f); err != nil {
		t.Fatal(err)
	}
	r := c.report()
	if len(r.Loops) != 1 {
		t.Fatalf("loops: %+v", r.Loops)
	}
	l := r.Loops[0]
	if !l.RunqKnown || l.LateTicks != 1 {
		t.Fatalf("runq known %v, late ticks %d", l.RunqKnown, l.LateTicks)
	}
	// the late tick's 10 ms get the segment's 50%: 5 ms in a run queue, so
	// it ran 2 of the 5 ms it was not waiting for a CPU
	if l.LateRan < 0.39 || l.LateRan > 0.41 {
		t.Errorf("late ran share %.3f, want 0.40", l.LateRan)
	}
	if want := 50e6 / 100e6; l.RunqShare < want-0.01 || l.RunqShare > want+0.01 {
		t.Errorf("runq share %.3f, want %.2f (50 ms over the ticks' 100 ms)", l.RunqShare, want)
	}
}

// The Go side's figures of the windows are probe.py's own.
func TestWindowConstantsMatchProbe(t *testing.T) {
	for _, want := range []string{
		fmt.Sprintf("\nPOLLS_PER_S = %d\n", PollsPerS),
		fmt.Sprintf("\nON_NS = %d_%03d_%03d\n", WindowNs/1e6, WindowNs/1e3%1e3, WindowNs%1e3),
		fmt.Sprintf("\n_budget = %d  #", CallsPerS),
	} {
		if !strings.Contains(probeSource, want) {
			t.Errorf("probe.py lacks %q", want)
		}
	}
}

// The cost line says when the program was observed in windows, and only then.
func TestCostTextWindows(t *testing.T) {
	c := &Cost{SelfNs: 1e6, CPUNs: 1e9, WallNs: 1e9, CPUShare: 0.001, WallShare: 0.001, TargetPct: CostTargetPct, Windows: 12, WindowShare: 0.05}
	if got := c.text(); !strings.Contains(got, "in 12 windows, 5.0% of the run") {
		t.Errorf("windows not said: %s", got)
	}
	c.Windows, c.WindowShare = 0, 1
	if got := c.text(); strings.Contains(got, "windows") {
		t.Errorf("windows said of a run without them: %s", got)
	}
}

// A busy program timed in windows: every call is counted (evCount), a few
// are timed, each weighted by the calls it stands for. The counts, the
// same-thread calls and the calling threads are the counted ones, exact;
// the histograms' n is the calls timed; the text marks no estimate.
func TestCollectorExactCounts(t *testing.T) {
	var f frames
	hello(&f)
	f.json(map[string]any{"kind": "thread", "ident": 2, "native_id": 101, "name": "asyncio_0"})
	f.json(map[string]any{"kind": "thread", "ident": 3, "native_id": 102, "name": "asyncio_1"})
	f.json(map[string]any{"kind": "site", "site": 1, "site_kind": "to_thread", "name": "__main__.lookup", "where": "app.py:3"})
	f.json(map[string]any{"kind": "site", "site": 2, "site_kind": "call_soon_threadsafe", "name": "asyncio.futures._set_state"})
	var recs [][recordLen]int64
	for i := 0; i < 40; i++ { // 40 timed in windows at k = 25
		recs = append(recs, [recordLen]int64{evCall, 1, 30_000, 10_000, 40_000, 25}, [recordLen]int64{evCST, 2, 20_000, 2 + int64(i%2), 0, 25})
	}
	recs = append(recs, [recordLen]int64{evCall, 1, -1, -1, -1, 25}) // one timed call cancelled before it started
	f.events(recs...)
	// 1 000 calls counted over two flushes; 999 hops from two threads, 3 from the loop's own
	f.events([recordLen]int64{evCount, 1, 600, 0, 0, 0}, [recordLen]int64{evCount, 2, 590, 2, 0, 0}, [recordLen]int64{evCount, 2, 3, 0, 1, 0})
	f.events([recordLen]int64{evCount, 1, 400, 0, 0, 0}, [recordLen]int64{evCount, 2, 409, 3, 0, 0})
	final(&f)
	c := newCollector()
	if err := c.read(&f); err != nil {
		t.Fatal(err)
	}
	r := c.report()
	var lookup, cst *Site
	for i := range r.Sites {
		switch r.Sites[i].Of {
		case "to_thread":
			lookup = &r.Sites[i]
		case "call_soon_threadsafe":
			cst = &r.Sites[i]
		}
	}
	if lookup == nil || lookup.Calls != 1000 || lookup.Timed != 41 || lookup.Cancelled != 1 || lookup.WorkNs != 10_000 {
		t.Fatalf("to_thread site: %+v", lookup)
	}
	if cst == nil || cst.Calls != 1002 || cst.Timed != 40 || cst.SameThread != 3 || len(cst.From) != 2 ||
		cst.From[0] != (From{Thread: "asyncio_0", TID: 101, Calls: 590}) || cst.From[1] != (From{Thread: "asyncio_1", TID: 102, Calls: 409}) {
		t.Fatalf("call_soon_threadsafe site: %+v", cst)
	}
	for _, h := range r.Hops {
		switch h.Of {
		case "to_thread":
			if h.Calls != 1000 || h.Timed != 41 || h.Work == nil || h.Work.N != 40 || h.Work.MeanNs != 10_000 || h.PerSec != 500 {
				t.Errorf("to_thread hops: %+v work %+v", h, h.Work)
			}
		case "call_soon_threadsafe":
			if h.Calls != 1002 || h.SameThread != 3 || h.Hop == nil || h.Hop.N != 40 {
				t.Errorf("cst hops: %+v", h)
			}
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if got := text.String(); strings.Contains(got, "~") || !strings.Contains(got, "1000 calls (41 timed)") || !strings.Contains(got, "1002 calls (40 timed)") {
		t.Errorf("the text marks an estimate, or not the counts and timed calls:\n%s", got)
	}
	// the wrappers' cost: timed calls at the timed cost, the rest at the counting cost
	want := 1e6 + 1e5 + 1e6 + (40*500 + 962*100) + (41*1000 + 959*150)
	if r.Cost == nil || r.Cost.SelfNs != want {
		t.Errorf("cost %+v, want self %v ns", r.Cost, want)
	}
}
