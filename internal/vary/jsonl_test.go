package vary

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/result"
)

// The JSON lines say what the table says: the head, a line per value with
// every figure (a figure or a reason, never both), the notes and the
// reading; a failed value has its reason and no figures.
func TestWriteJSON(t *testing.T) {
	a := &Analysis{Command: []string{"prog", "{T}"}, Reps: 1, Settle: time.Second, Interval: time.Second,
		Points: []Point{{Names: []string{"T"}, Values: []string{"2"}}, {Names: []string{"T"}, Values: []string{"32"}}}}
	a.Values = []Value{
		{Point: a.Points[0], Status: result.StatusOK, OKRuns: []Sample{{}}, Wall: Stat{Values: []float64{5}, Median: 5, Min: 5, Max: 5}},
		{Point: a.Points[1], Status: result.StatusFailed, Reason: "exit status 3"},
	}
	var b bytes.Buffer
	if err := a.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var head HeadRecord
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil || head.Kind != "vary" || strings.Join(head.Values, ",") != "T=2,T=32" {
		t.Fatalf("head %s: %+v %v", lines[0], head, err)
	}
	var v1, v2 ValueRecord
	_ = json.Unmarshal([]byte(lines[1]), &v1)
	_ = json.Unmarshal([]byte(lines[2]), &v2)
	if v1.Kind != "value" || v1.Figures[KeyWall].Median == nil || *v1.Figures[KeyWall].Median != 5 {
		t.Errorf("first value: %s", lines[1])
	}
	for k, f := range v1.Figures {
		if (f.Median == nil) == (f.Unsupported == "") {
			t.Errorf("%s: a figure and a reason, or neither: %+v", k, f)
		}
	}
	if v2.Status != result.StatusFailed || v2.Reason != "exit status 3" || v2.Figures != nil {
		t.Errorf("failed value: %s", lines[2])
	}
	kinds := map[string]int{}
	for _, l := range lines {
		var k struct{ Kind string }
		if err := json.Unmarshal([]byte(l), &k); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		kinds[k.Kind]++
	}
	if kinds["note"] == 0 || kinds["reading"] == 0 {
		t.Errorf("no note or reading lines: %v", kinds)
	}
}
