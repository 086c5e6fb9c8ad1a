package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := os.WriteFile(p, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("a failed write changed the file: %q", b)
	}
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new" || st.Mode().Perm() != 0o640 {
		t.Fatalf("got %q mode %v, want new 0640", b, st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}

func TestProbeRefusesWhatCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, "no", "such", "x.json"), dir} {
		if err := Probe(p); err == nil {
			t.Errorf("Probe(%s) accepted", p)
		}
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	if os.Geteuid() != 0 {
		if err := Probe(filepath.Join(ro, "x")); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("Probe in a read-only dir: %v", err)
		}
	}
	if err := Probe(filepath.Join(dir, "ok.json")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 { // only ro/
		t.Fatalf("Probe left files: %v", ents)
	}
}

func TestWriteOnAFullDiskLeavesNoFile(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	// /dev/full fails every write with ENOSPC; a fill that copies into it
	// stands for a disk that fills up mid-write.
	p := filepath.Join(t.TempDir(), "x.json")
	err := Write(p, func(w io.Writer) error {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer full.Close()
		_, err = io.WriteString(io.MultiWriter(w, full), "data")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "no space") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("a failed write left %s: %v", p, err)
	}
}

// A device is written in place, never replaced by a file (as root, /dev
// takes new files: a rename would turn /dev/null into a regular file).
func TestDeviceWrittenInPlace(t *testing.T) {
	if err := Probe(os.DevNull); err != nil {
		t.Fatalf("Probe(%s): %v", os.DevNull, err)
	}
	if err := Write(os.DevNull, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatalf("Write(%s): %v", os.DevNull, err)
	}
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v %v", os.DevNull, st.Mode(), err)
	}
}

// A symbolic link keeps pointing at its file; the file gets the bytes.
func TestSymlinkKept(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "run.json"), filepath.Join(dir, "latest.json")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a link", link)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target holds %q, want new", b)
	}
}

// TestCreateHoldsTheTemporaryFile: Create makes the temporary file at once
// (so a target that cannot be written is known before the work), Abort
// removes it and leaves the target, Commit replaces the target once.
func TestCreateHoldsTheTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	os.WriteFile(p, []byte("old"), 0o600)
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("after Create: %v, want the target and one temporary file", ents)
	}
	f.Abort()
	f.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("after Abort: %v", ents)
	}
	if err := f.Commit(func(w io.Writer) error { return nil }); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("target %q after Abort", b)
	}
	f, _ = Create(p)
	if err := f.Commit(func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after Commit: nothing to remove, the target stays
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("target %q after Commit", b)
	}
}
