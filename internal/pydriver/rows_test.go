package pydriver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rowCounts is what one side of testdata/rowcounts.py did per op.
type rowCounts struct {
	Iterations float64 `json:"iterations"` // event-loop iterations (_run_once)
	Waits      float64 `json:"waits"`      // polls with a timeout other than 0
	Calls      float64 `json:"calls"`      // Python frames entered or resumed
	CCalls     float64 `json:"c_calls"`    // C functions called
	Blocks     float64 `json:"blocks"`     // net growth of allocated blocks
	// Collections are the garbage collector's runs (any generation).
	Collections float64 `json:"collections"`
}

type rowRun struct {
	Row    string    `json:"row"`
	Driver rowCounts `json:"driver"`
	Plain  rowCounts `json:"plain"`
}

// samplingCCalls is what the driver's loop may call in C per op beyond a
// plain loop when every unit is timed on its own: the key's next(), two
// clock reads, the append, an empty islice and getattr for the fetch.
const samplingCCalls = 6

// check says how the driver's counts differ from the plain loop's beyond
// what its sampling adds, or "".
func (r rowRun) check() []string {
	d, p := r.Driver, r.Plain
	var bad []string
	if p.Iterations <= 0 || math.Abs(d.Iterations-p.Iterations) > 0.01*p.Iterations {
		bad = append(bad, fmt.Sprintf("event-loop iterations per op %.4f, plain loop %.4f", d.Iterations, p.Iterations))
	}
	if math.Abs(d.Waits-p.Waits) > 0.01 {
		bad = append(bad, fmt.Sprintf("polls that wait per op %.4f, plain loop %.4f", d.Waits, p.Waits))
	}
	if p.Calls <= 0 || math.Abs(d.Calls-p.Calls) > 0.005*p.Calls {
		bad = append(bad, fmt.Sprintf("Python calls and resumptions per op %.3f, plain loop %.3f", d.Calls, p.Calls))
	}
	if d.CCalls > p.CCalls+samplingCCalls {
		bad = append(bad, fmt.Sprintf("C calls per op %.3f, plain loop %.3f (+%d allowed for sampling)", d.CCalls, p.CCalls, samplingCCalls))
	}
	if d.Blocks > p.Blocks+1.5 { // one sample kept per op at most
		bad = append(bad, fmt.Sprintf("allocated blocks grow %.3f per op, plain loop's %.3f", d.Blocks, p.Blocks))
	}
	if d.Collections > p.Collections+0.002 { // a list of samples may grow into one
		bad = append(bad, fmt.Sprintf("garbage collections per op %.4f, plain loop %.4f", d.Collections, p.Collections))
	}
	return bad
}

// TestDriverRowsDoWhatPlainLoopsDo holds the task ring at n=100 and the
// two-hop wrapper to plain loops of the same code
// (internal/selfcheck/pyref.py -mode ring, -mode two-hop), by what each
// does per op rather than by its time, so it holds on a busy machine too
// (scripts/pyrows-compare.sh compares the times, on a quiet one): the same
// event-loop iterations and polls that wait, the same Python calls and
// coroutine resumptions, C calls, allocations and garbage collections
// beyond the plain loop's only as many as timing every op on its own
// costs. It runs the driver's
// arm as the runner asks for it and the plain loop, in one interpreter
// (testdata/rowcounts.py).
func TestDriverRowsDoWhatPlainLoopsDo(t *testing.T) {
	in := realPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.Path, filepath.Join("testdata", "rowcounts.py"), "driver.py",
		filepath.Join("..", "selfcheck", "pyref.py"), "10000", "1000")
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rowcounts.py: %v\n%s", err, stderr.String())
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r rowRun
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Row == "" {
			t.Fatalf("rowcounts.py printed %q (%v)", line, err)
		}
		rows[r.Row] = true
		t.Logf("%s: driver %+v, plain loop %+v", r.Row, r.Driver, r.Plain)
		for _, b := range r.check() {
			t.Errorf("%s: %s", r.Row, b)
		}
	}
	if !rows["ring/pytask/asyncio-queue/n=100"] || !rows["hop/pytask/two-hop"] || len(rows) != 2 {
		t.Fatalf("rowcounts.py counted %v, want the task ring at n=100 and the two-hop wrapper", rows)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("rowcounts.py left %d entries in TMPDIR", len(left))
	}
}

// The check fails the differences it is there to catch: a driver loop
// that yields to the event loop once more per op, resumes one more
// coroutine frame, or keeps a sample of every op twice over.
func TestRowCountsCheck(t *testing.T) {
	plain := rowCounts{Iterations: 4, Waits: 2, Calls: 144, CCalls: 112, Blocks: 0}
	same := plain
	same.CCalls += 5
	same.Blocks = 1
	if bad := (rowRun{Driver: same, Plain: plain}).check(); len(bad) != 0 {
		t.Fatalf("sampling alone flagged: %v", bad)
	}
	for name, d := range map[string]rowCounts{
		"an extra loop iteration": {Iterations: 5, Waits: 2, Calls: 144, CCalls: 112},
		"an extra wait":           {Iterations: 4, Waits: 3, Calls: 144, CCalls: 112},
		"an extra frame":          {Iterations: 4, Waits: 2, Calls: 146, CCalls: 112},
		"extra C calls":           {Iterations: 4, Waits: 2, Calls: 144, CCalls: 120},
		"extra allocations":       {Iterations: 4, Waits: 2, Calls: 144, CCalls: 112, Blocks: 3},
		"garbage collections":     {Iterations: 4, Waits: 2, Calls: 144, CCalls: 112, Collections: 0.01},
	} {
		if bad := (rowRun{Driver: d, Plain: plain}).check(); len(bad) == 0 {
			t.Errorf("%s passed the check", name)
		}
	}
}
