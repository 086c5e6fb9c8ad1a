package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/measure"
	"github.com/ctxlab/ctxlab/internal/price"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// The records a diagnose run stores are, line for line and byte for
// byte, what --format json writes: the profile as shown (--by-name,
// --top), the counters, the notes, the rusage and the price, with the
// program's control characters escaped in both.
func TestDiagnoseRecordsAreWhatJSONWrites(t *testing.T) {
	thread := func(tid int, name string, vol uint64) watch.Thread {
		return watch.Thread{PID: 10, TID: tid, Name: name, Threads: 1, Vol: vol, Invol: 1}
	}
	v := uint64(1234)
	r := &diagnosed{
		sum: watch.Profile{Start: time.Unix(1, 0), End: time.Unix(3, 0), Seconds: 2, CPUs: 2, Procs: 1,
			Threads: []watch.Thread{thread(10, "main", 5), thread(11, "w\x1b[31mrk\u200b", 900), thread(12, "w\x1b[31mrk\u200b", 40)},
			Total:   thread(10, "main", 945)},
		recs: readCounters([]measure.TreeReading{{Event: measure.Events[0], Value: &v},
			{Event: measure.Events[1], Unsupported: "not here"}}),
		ru:   RusageRecord{Kind: "rusage", Voluntary: 900, Involuntary: 50, UserUs: 1500, WallS: 2},
		note: "the command said \x07 odd things",
	}
	pr := &price.Price{Rate: 472.5, PerSwitch: 1800, Lines: []string{"a line \x1b[0m"}}
	for _, o := range []*DiagnoseOptions{
		{WatchOptions: WatchOptions{Format: "json", Sort: "switches"}},
		{WatchOptions: WatchOptions{Format: "table", Sort: "switches", ByName: true, Top: 1}},
	} {
		var shown bytes.Buffer
		oj := *o
		oj.Format, oj.Stderr, oj.Args = "json", &shown, []string{"prog"}
		if err := printDiagnosis(&oj, r); err != nil {
			t.Fatal(err)
		}
		if err := printPrice(&shown, true, pr); err != nil {
			t.Fatal(err)
		}
		var stored []string
		for _, rec := range r.records(o, pr) {
			if !json.Valid(rec) {
				t.Errorf("stored record is not JSON: %s", rec)
			}
			stored = append(stored, string(rec))
		}
		lines := strings.Split(strings.TrimSuffix(shown.String(), "\n"), "\n")
		if strings.Join(stored, "\n") != strings.Join(lines, "\n") {
			t.Errorf("by-name %v: stored\n%s\nwritten\n%s", o.ByName, strings.Join(stored, "\n"), strings.Join(lines, "\n"))
		}
		if strings.ContainsAny(shown.String(), "\x1b\x07") {
			t.Errorf("a control character reached the output:\n%q", shown.String())
		}
		for _, kind := range []string{`"kind":"counter"`, `"kind":"note"`, `"kind":"rusage"`, `"kind":"price"`} {
			if !strings.Contains(shown.String(), kind) {
				t.Errorf("no %s record:\n%s", kind, shown.String())
			}
		}
	}
}
