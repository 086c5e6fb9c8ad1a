package pydriver

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// driverSide is what driver.py takes and answers, read from its source by
// testdata/protocol.py (ast).
type driverSide struct {
	Protocol int                 `json:"protocol"`
	Do       []string            `json:"do"`
	Reads    []string            `json:"reads"`
	Answers  map[string][]string `json:"answers"`
}

// The driver's protocol is declared once a side (driver.py; session.go's
// Protocol, doMessages and the message and answer types) and held
// together here: a message, a field or an answer key that one side has and
// the other does not read fails.
func TestDriverProtocol(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to read driver.py with")
	}
	out, err := exec.Command(py, "testdata/protocol.py", "driver.py").Output()
	if err != nil {
		t.Fatalf("protocol.py: %v", err)
	}
	var d driverSide
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, p := range driverProblems(d) {
		t.Error(p)
	}
	// and a planted drift is caught
	for name, plant := range map[string]func(d *driverSide){
		"protocol":        func(d *driverSide) { d.Protocol++ },
		"a message":       func(d *driverSide) { d.Do = append(d.Do, "pause") },
		"a request field": func(d *driverSide) { d.Reads = append(d.Reads, "cpu_set") },
		"an answer key":   func(d *driverSide) { d.Answers["timed"] = append(d.Answers["timed"], "rep_cpu_ns") },
		"hello short":     func(d *driverSide) { d.Answers["hello"] = d.Answers["hello"][1:] },
	} {
		var c driverSide
		json.Unmarshal(out, &c)
		plant(&c)
		if len(driverProblems(c)) == 0 {
			t.Errorf("planted drift not caught: %s", name)
		}
	}
}

func driverProblems(d driverSide) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if d.Protocol != Protocol {
		bad("driver.py PROTOCOL %d, session.go Protocol %d", d.Protocol, Protocol)
	}
	do := slices.Sorted(slices.Values(d.Do))
	if want := slices.Sorted(slices.Values(doMessages)); !slices.Equal(do, want) {
		bad("driver.py handles %v, ctxlab sends %v", do, want)
	}
	sent := tags(Message{}, Request{}, Timed{})
	for _, k := range d.Reads {
		if !sent[k] {
			bad("driver.py reads %q from a request; ctxlab never sends it", k)
		}
	}
	hello := tags(Hello{})
	if got := slices.Sorted(slices.Values(d.Answers["hello"])); !slices.Equal(got, sortedKeys(hello)) {
		bad("driver.py's hello has %v, Hello reads %v", got, sortedKeys(hello))
	}
	read := tags(Response{})
	for _, what := range []string{"opened", "batch", "timed"} {
		if len(d.Answers[what]) == 0 {
			bad("no answer found for %s in driver.py", what)
		}
		for _, k := range d.Answers[what] {
			if !read[k] {
				bad("driver.py answers %s with %q; Response does not read it", what, k)
			}
		}
	}
	counts := tags(Counts{})
	for _, k := range d.Answers["counts"] {
		if !counts[k] {
			bad("driver.py counts switches as %q; Counts does not read it", k)
		}
	}
	return out
}

// tags: the JSON field names of the given structs' types.
func tags(vs ...any) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			if tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
				m[tag] = true
			}
		}
	}
	return m
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
