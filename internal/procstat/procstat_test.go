package procstat

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

const fixtures Root = "testdata/proc"

func TestParseSchedBothStyles(t *testing.T) {
	for _, tc := range []struct {
		file         string
		mig, sw, vol uint64
		waitNs       float64
		slice        uint64
	}{
		{"testdata/proc/100/task/100/sched", 42, 1500, 1200, 150.125e6, 0},
		{"testdata/proc/100/task/101/sched", 7, 510, 500, 20.5e6, 3000000},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseSched(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if s.Migrations != tc.mig || !s.HasWaitSum || s.WaitSumNs != tc.waitNs || s.Switches != tc.sw ||
			s.VoluntarySwitches != tc.vol || s.SliceNs != tc.slice {
			t.Errorf("%s: got %+v", tc.file, s)
		}
	}
}

func TestParseSchedErrors(t *testing.T) {
	for _, in := range []string{"", "nr_switches: 3\n", "se.nr_migrations: x\n", "se.nr_migrations: 1\nstats.wait_sum: zz\n"} {
		if _, err := ParseSched([]byte(in)); !errors.Is(err, ErrParse) {
			t.Errorf("ParseSched(%q) = %v, want ErrParse", in, err)
		}
	}
}

func TestReadTasksFixture(t *testing.T) {
	tasks, err := fixtures.ReadTasks(100)
	if err != nil {
		t.Fatal(err)
	}
	// 102 is listed but its files are gone (it exited between listing and reading).
	if len(tasks) != 2 || tasks[0].TID != 100 || tasks[1].TID != 101 {
		t.Fatalf("tasks = %+v, want tids 100 and 101", tasks)
	}
	a, b := tasks[0], tasks[1]
	if a.Comm != "server" || a.Voluntary != 1200 || a.Involuntary != 300 || !a.HasSched || a.Migrations != 42 ||
		!a.HasSchedstat || a.RunNs != 2500000000 || a.RunqNs != 150125000 || a.Timeslices != 1500 {
		t.Errorf("task 100 = %+v", a)
	}
	if b.Comm != "worker" || !b.HasSched || b.Migrations != 7 || b.WaitSumNs != 20.5e6 || b.HasSchedstat {
		t.Errorf("task 101 (stats.* sched, no schedstat) = %+v", b)
	}
	// Without schedstat, stat's utime+stime (250 + 50 ticks) stand in;
	// with it, stat is not read.
	if !b.HasTicks || b.CPUTicks != 300 || a.HasTicks {
		t.Errorf("clock ticks: task 101 %v %d (want 300), task 100 %v (want none)", b.HasTicks, b.CPUTicks, a.HasTicks)
	}
	if _, err := fixtures.ReadTask(100, 102); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadTask of vanished thread: %v, want ErrNotExist", err)
	}
	// No sched file at all: HasSched false, schedstat still read.
	c, err := fixtures.ReadTasks(200)
	if err != nil || len(c) != 1 || c[0].HasSched || !c[0].HasSchedstat || c[0].RunqNs != 2000 {
		t.Errorf("ReadTasks(200) = %+v, %v", c, err)
	}
	if _, err := fixtures.ReadTasks(999); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadTasks(999) = %v, want ErrNotExist", err)
	}
}

func TestReadProc(t *testing.T) {
	p, err := fixtures.ReadProc(200)
	if err != nil {
		t.Fatal(err)
	}
	if p.Comm != "helper (x)" || p.PPID != 100 || p.StartTicks != 6000 || p.UTicks != 250 || p.STicks != 50 {
		t.Errorf("ReadProc(200) = %+v", p)
	}
	if _, err := fixtures.ReadProc(999); !errors.Is(err, ErrNoProcess) {
		t.Errorf("ReadProc(999) = %v, want ErrNoProcess", err)
	}
	if _, err := fixtures.ReadProc(300); !errors.Is(err, ErrParse) {
		t.Errorf("ReadProc(300) malformed = %v, want ErrParse", err)
	}
}

func TestFindByNameAndDescendants(t *testing.T) {
	all, err := fixtures.Procs()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range all {
		pids = append(pids, p.PID)
	}
	if !slices.Equal(pids, []int{100, 200, 301}) { // 300 is malformed, left out
		t.Errorf("Procs = %v", pids)
	}
	if d := Descendants(all, 100); !slices.Equal(d, []int{200, 301}) {
		t.Errorf("Descendants(100) = %v", d)
	}
	m, err := fixtures.FindByName(regexp.MustCompile(`^(server|helper)`), 200)
	if err != nil || len(m) != 1 || m[0].PID != 100 {
		t.Errorf("FindByName = %+v, %v", m, err)
	}
}

func FuzzParseSched(f *testing.F) {
	for _, p := range []string{"testdata/proc/100/task/100/sched", "testdata/proc/100/task/101/sched"} {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSched(data)
		if err != nil && !errors.Is(err, ErrParse) {
			t.Fatalf("error %v does not wrap ErrParse", err)
		}
		if err == nil && s.HasWaitSum && (math.IsNaN(s.WaitSumNs) || math.IsInf(s.WaitSumNs, 0) || s.WaitSumNs < 0) {
			t.Fatalf("wait_sum %v accepted from %q", s.WaitSumNs, data)
		}
	})
}

// FuzzReadTaskFiles feeds arbitrary status, sched, schedstat and stat files
// through the procfs-backed readers in a temporary fake /proc: they must
// return a value or an error, never panic.
func FuzzReadTaskFiles(f *testing.F) {
	rd := func(p string) []byte { b, _ := os.ReadFile(p); return b }
	f.Add(rd("testdata/proc/100/task/100/status"), rd("testdata/proc/100/task/100/sched"),
		rd("testdata/proc/100/task/100/schedstat"), rd("testdata/proc/100/stat"))
	f.Add([]byte("Name:\tx\n"), []byte(""), []byte("1 2"), []byte("1 (x)"))
	root := f.TempDir() // one fake tree per worker, rewritten by each input (inputs run one at a time)
	dir := filepath.Join(root, "7", "task", "7")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status, sched, schedstat, stat []byte) {
		for name, b := range map[string][]byte{"status": status, "sched": sched, "schedstat": schedstat, "stat": stat} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "7", "stat"), stat, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = Root(root).ReadTask(7, 7)
		_, _ = Root(root).ReadTasks(7)
		if _, err := Root(root).ReadProc(7); err != nil && !errors.Is(err, ErrParse) && !errors.Is(err, ErrNoProcess) {
			t.Logf("ReadProc: %v", err)
		}
	})
}
