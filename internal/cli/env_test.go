package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// TestEnvCgroupUnknown: when cgroup discovery fails for a reason other
// than there being no CPU cgroup (here a /proc/<pid>/cgroup that does not
// parse), env says "unknown (<reason>)" — not v0 with quota "max" — in the
// table and in JSON, and a run's warnings say the quota cannot be ruled out.
func TestEnvCgroupUnknown(t *testing.T) {
	root := t.TempDir()
	proc := filepath.Join(root, "proc")
	if err := os.MkdirAll(filepath.Join(proc, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "1", "cgroup"), []byte("not a cgroup line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := sysinfo.DetectAt(sysinfo.Roots{Proc: proc, Sys: filepath.Join(root, "sys"), CgroupMount: filepath.Join(root, "cgroup")}, 1)

	var table bytes.Buffer
	if err := writeEnv(&table, "table", h, envProbes{}); err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(table.String(), "\n") {
		if strings.HasPrefix(l, "cgroup ") {
			line = l
		}
	}
	if !strings.Contains(line, "unknown (") || !strings.Contains(line, "/proc/1/cgroup") || strings.Contains(line, "v0") || strings.Contains(line, "max") {
		t.Errorf("cgroup line %q: want unknown (<reason naming /proc/1/cgroup>)", line)
	}

	var js bytes.Buffer
	if err := writeEnv(&js, "json", h, envProbes{}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version *int   `json:"cgroup_version"`
		Quota   string `json:"cpu_quota"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != nil || !strings.HasPrefix(got.Quota, "unknown (") {
		t.Errorf("json: cgroup_version %v, cpu_quota %q; want none and unknown (…)", got.Version, got.Quota)
	}

	warned := false
	for _, w := range envWarnings(h) {
		if strings.Contains(w, "cannot be ruled out") && !strings.Contains(w, "is set") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("warnings %q: want one saying the quota is unknown", envWarnings(h))
	}
}

// env names the build's cgo setting and the calibrated system call; a run
// of a cgo build warns that its thread handoffs read higher.
func TestEnvNamesBuildAndSyscallPath(t *testing.T) {
	h := sysinfo.DetectAt(sysinfo.Roots{Proc: t.TempDir(), Sys: t.TempDir(), CgroupMount: t.TempDir()}, 1)
	h.CgoEnabled = "1"
	var table bytes.Buffer
	if err := writeEnv(&table, "table", h, envProbes{SyscallNs: 1100, SyscallPathNs: 62}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"cgo build: glibc's rseq on every thread", "1.1 µs raw (getppid); Go's runtime-aware path adds 62 ns"} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("env table has no %q:\n%s", w, table.String())
		}
	}
	// The syscall line says what the figures are, briefly and plainly
	// (the arms that pay the path and how are in the README), where it was
	// a 300-character account of "system-call sections".
	for _, l := range strings.Split(table.String(), "\n") {
		if strings.Contains(l, "getppid") && (len([]rune(l)) > 120 || strings.Contains(l, "section")) {
			t.Errorf("env's syscall line is not short and plain (%d columns): %q", len([]rune(l)), l)
		}
	}
	var js bytes.Buffer
	if err := writeEnv(&js, "json", h, envProbes{SyscallNs: 1100, SyscallPathNs: 62}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Cgo  string  `json:"cgo_enabled"`
		Sys  float64 `json:"syscall_ns"`
		Path float64 `json:"syscall_path_ns"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Cgo != "1" || got.Sys != 1100 || got.Path != 62 {
		t.Errorf("json: %+v", got)
	}
	if w := strings.Join(envWarnings(h), "\n"); !strings.Contains(w, "built with cgo") {
		t.Errorf("warnings %q: want the cgo build named", w)
	}
	h.CgoEnabled = "0"
	if w := strings.Join(envWarnings(h), "\n"); strings.Contains(w, "cgo") {
		t.Errorf("warnings of a CGO_ENABLED=0 build: %q", w)
	}
}

// An interpreter that did not answer its probe is said so, never "none on
// PATH".
func TestWritePythonsNoAnswer(t *testing.T) {
	var b strings.Builder
	writePythons(&b, nil, []string{"python3"})
	if s := b.String(); strings.Contains(s, "none on PATH") || !strings.Contains(s, "python3 did not answer within") {
		t.Errorf("writePythons with a late python3: %q", s)
	}
	b.Reset()
	writePythons(&b, nil, nil)
	if !strings.Contains(b.String(), "none on PATH") {
		t.Errorf("writePythons with none: %q", b.String())
	}
}
