package watch

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// On a terminal the table's prose (its title, the cgroup, notes and the
// readings) wraps at spaces within the width, no word cut ("participa|nts"
// was a reading cut by the terminal); the table's rows stay whole, so
// their columns line up; and no word is lost.
func TestWriteTableWrapsProse(t *testing.T) {
	p := profile(1, 2,
		Thread{PID: 1, TID: 1, Name: "main", Threads: 1, Vol: 500, Invol: 20, HasSched: true, HasSchedstat: true, CPUNs: 4e8, RunqNs: 2e7},
		Thread{PID: 1, TID: 2, Name: "worker", Threads: 1, Vol: 900, Invol: 700, HasSched: true, HasSchedstat: true, CPUNs: 9e8, RunqNs: 3e8})
	p.Notes = []string{"the counts of threads that exited between two readings are lost with them, so the total counts only the participants that lived to be read"}
	readings := Read(p, 3)
	if len(readings) == 0 {
		t.Fatal("no reading to wrap")
	}
	var plain, wrapped bytes.Buffer
	if err := WriteTable(&plain, "ctxlab watch PID 1 (server), interval 1 at 12:00:00", p, readings, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteTableWidth(&wrapped, "ctxlab watch PID 1 (server), interval 1 at 12:00:00", p, readings, 0, 96); err != nil {
		t.Fatal(err)
	}
	long := 0
	for _, l := range strings.Split(plain.String(), "\n") {
		if utf8.RuneCountInString(l) > 96 && !strings.HasPrefix(l, "     ") {
			long++
		}
	}
	if long < 2 {
		t.Fatalf("the fixture has %d prose lines over 96 columns:\n%s", long, plain.String())
	}
	rows := map[string]bool{}
	for _, l := range strings.Split(plain.String(), "\n") {
		if strings.HasPrefix(l, "     ") { // a table row: PID and TID right-aligned in 8 columns
			rows[l] = true
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(wrapped.String(), "\n"), "\n") {
		if rows[l] {
			delete(rows, l)
			continue
		}
		if n := utf8.RuneCountInString(l); n > 96 {
			t.Errorf("a prose line of %d columns: %q", n, l)
		}
	}
	if len(rows) > 0 {
		t.Errorf("table rows changed: %v", rows)
	}
	if p, w := strings.Fields(plain.String()), strings.Fields(wrapped.String()); strings.Join(p, " ") != strings.Join(w, " ") {
		t.Errorf("wrapping changed the words:\n%s\n---\n%s", plain.String(), wrapped.String())
	}
}

// Below the full row's 95 columns (an 80-column terminal) the table drops
// the PID column and closes up: every line fits, the TIDs and figures
// are all there.
func TestWriteTableCompact(t *testing.T) {
	p := profile(1, 2,
		Thread{PID: 1, TID: 1234567, Name: "a-long-thread-name", Threads: 1, Vol: 500, Invol: 20, HasSched: true, HasSchedstat: true, CPUNs: 4e8, RunqNs: 2e7},
		Thread{PID: 1, TID: 2, Name: "worker", Threads: 1, Vol: 900, Invol: 700, HasSched: true, HasSchedstat: true, CPUNs: 9e8, RunqNs: 3e8})
	var b bytes.Buffer
	if err := WriteTableWidth(&b, "ctxlab watch PID 1 (server)", p, Read(p, 3), 0, 80); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	for _, want := range []string{"     TID  NAME", "       1  a-long-thread-na", "       2  worker", "total"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PID  ") {
		t.Errorf("the PID column is still there:\n%s", out)
	}
}
