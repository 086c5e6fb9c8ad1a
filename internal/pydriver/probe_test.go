package pydriver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// probeTag marks every process a probe test starts, through the
// environment they inherit, so that leftovers are found however they are
// parented.
func probeTag(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	t.Setenv("CTXLAB_TEST_TAG", tag)
	return tag
}

// taggedLeft waits up to limit for every live process (but this one)
// carrying tag to be gone, and returns (and kills, by PID) those that are not.
func taggedLeft(tag string, limit time.Duration) []string {
	want := []byte("\x00CTXLAB_TEST_TAG=" + tag + "\x00")
	deadline := time.Now().Add(limit)
	for {
		var left []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
				continue
			}
			stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] != "Z" {
				left = append(left, e.Name()+" "+string(stat[bytes.IndexByte(stat, '('):bytes.LastIndexByte(stat, ')')+1]))
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wrapperPython puts on PATH a python3 script whose body is body.
func wrapperPython(t *testing.T, body string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// A wrapper that leaves a child of its own behind (a shim's helper, a
// background job) loses it when the probe ends: the probe's whole process
// group is killed on every path, success included.
func TestProbeKillsWhatTheWrapperLeft(t *testing.T) {
	real, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 missing")
	}
	tag := probeTag(t)
	wrapperPython(t, "sleep 30 >/dev/null 2>&1 &\nexec "+real+` "$@"`)
	in, err := ResolveContext(context.Background(), "python3")
	if err != nil {
		t.Fatalf("the wrapper does run python3: %v", err)
	}
	if in.Version == "" {
		t.Fatalf("no version: %+v", in)
	}
	if left := taggedLeft(tag, 3*time.Second); len(left) > 0 {
		t.Fatalf("after the probe these processes are still alive: %v", left)
	}
}

// A probe of an interpreter that does not answer stops when ctx ends
// (SIGINT) or at the probe's own limit, and takes its process group along.
func TestProbeStops(t *testing.T) {
	for _, c := range []struct {
		name   string
		cancel bool
		want   string
	}{
		{"cancelled", true, "probe stopped"},
		{"at the limit", false, "no answer within"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tag := probeTag(t)
			wrapperPython(t, "sleep 20\nexit 1")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(300*time.Millisecond, cancel)
			} else {
				old := probeTimeout
				probeTimeout = 300 * time.Millisecond
				defer func() { probeTimeout = old }()
			}
			done := make(chan error, 1)
			go func() {
				_, err := ResolveContext(ctx, "python3")
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second): // the wrapper sleeps 20 s
				t.Fatal("the probe did not stop")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || c.cancel != errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want %q (cancelled: %v)", err, c.want, c.cancel)
			}
			if left := taggedLeft(tag, 3*time.Second); len(left) > 0 {
				t.Fatalf("after the probe stopped these processes are still alive: %v", left)
			}
		})
	}
}

// An interpreter on PATH whose probe does not answer in time (a loaded
// machine) is named as such by FindAllWhy, not left out as if it did not
// exist; one that fails at once is left out.
func TestFindAllWhyNamesTheLate(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"python3.97": "exec /bin/sleep 20", "python3.98": "exit 1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	old := probeTimeout
	probeTimeout = 300 * time.Millisecond
	defer func() { probeTimeout = old }()
	ins, late := FindAllWhy(context.Background())
	if len(ins) != 0 || len(late) != 1 || late[0] != "python3.97" {
		t.Errorf("FindAllWhy = %v, %v; want none and python3.97 late", ins, late)
	}
}

// A probe still making progress at its time limit (busy here: a loaded
// machine looks the same, runnable and waiting for a CPU) is waited for,
// not dropped as late; one asleep at the limit is given up a moment after.
func TestProbeWaitsForTheStarved(t *testing.T) {
	dir := t.TempDir()
	answer := `echo '{"executable": "'"$0"'", "version": "3.97.1", "free_threaded": false, "gil_enabled": true, "implementation": "cpython"}'`
	busy := "i=0\nwhile [ $i -lt 400000 ]; do i=$((i+1)); done\n" // ~0.5–2 s of CPU
	if err := os.WriteFile(filepath.Join(dir, "python3.97"), []byte("#!/bin/sh\n"+busy+answer+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	old := probeTimeout
	probeTimeout = 100 * time.Millisecond
	defer func() { probeTimeout = old }()
	start := time.Now()
	ins, late := FindAllWhy(context.Background())
	if time.Since(start) < probeTimeout {
		t.Skipf("the busy loop ended within the limit (%v): nothing to wait for", time.Since(start))
	}
	if len(ins) != 1 || len(late) != 0 {
		t.Errorf("FindAllWhy = %v, %v after %v; want the busy interpreter, none late", ins, late, time.Since(start))
	}
}

// A free-threaded CPython's prefix installs python3.13 as a hard link of
// python3.13t, and each answers with the name it was started by: --python
// all lists the build once, not once per link, and a different file of
// the same version is kept.
func TestFindAllOnePerFile(t *testing.T) {
	dir := t.TempDir()
	answer := func(ft bool) string {
		return fmt.Sprintf("#!/bin/sh\necho '{\"executable\": \"'\"$0\"'\", \"version\": \"3.97.1\", \"free_threaded\": %v, \"gil_enabled\": %v, \"implementation\": \"cpython\"}'\n", ft, !ft)
	}
	for name, body := range map[string]string{"python3.97t": answer(true), "python3": answer(false)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "python3.97t"), filepath.Join(dir, "python3.97")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	t.Setenv("PATH", dir)
	ins, late := FindAllWhy(context.Background())
	var tags []string
	for _, in := range ins {
		tags = append(tags, in.Name+"="+in.Tag())
	}
	if got := strings.Join(tags, " "); len(late) != 0 || got != "python3=3.97.1 python3.97=3.97.1t" && got != "python3=3.97.1 python3.97t=3.97.1t" {
		t.Errorf("FindAllWhy = %s (late %v); want python3 and one of the two links", got, late)
	}
}
