package pyprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// sent is what probe.py and its loader send, read from their source by
// testdata/protocol.py (ast): the protocol version, the event types, each
// event record's type and length, each JSON object kind's fields.
type sent struct {
	Protocol int                 `json:"protocol"`
	Events   map[string]int64    `json:"events"`
	Records  [][3]any            `json:"records"`
	Kinds    map[string][]string `json:"kinds"`
}

func readSent(t *testing.T, files ...string) sent {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to read probe.py with")
	}
	out, err := exec.Command(py, append([]string{"testdata/protocol.py"}, files...)...).Output()
	if err != nil {
		t.Fatalf("protocol.py: %v", err)
	}
	var s sent
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("protocol.py: %v: %s", err, out)
	}
	return s
}

// The pipe's protocol is declared once on each side and held together
// here: probe.py's PROTOCOL, event types and record lengths against
// collect.go's, and every JSON object kind and field the Python sends
// against frameTypes (and no kind there that the Python never sends).
func TestProbeProtocol(t *testing.T) {
	for _, p := range protocolProblems(readSent(t, "probe.py", "sitecustomize.py")) {
		t.Error(p)
	}
}

// protocolProblems lists every way s differs from the Go side's declarations.
func protocolProblems(s sent) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if s.Protocol != Protocol {
		bad("probe.py PROTOCOL %d, collect.go Protocol %d", s.Protocol, Protocol)
	}
	if !reflect.DeepEqual(s.Events, eventNames) {
		bad("probe.py's event types %v, collect.go's %v", s.Events, eventNames)
	}
	if len(s.Records) == 0 {
		bad("no event record found in probe.py")
	}
	for _, r := range s.Records {
		name, n, line := r[0].(string), int(r[1].(float64)), int(r[2].(float64))
		if _, ok := eventNames[name]; !ok || n != recordLen {
			bad("probe.py:%d: a %s record of %d values; collect.go reads %d-value records of %v", line, name, n, recordLen, eventNames)
		}
	}
	var pyKinds, goKinds []string
	for k := range s.Kinds {
		pyKinds = append(pyKinds, k)
	}
	for k := range frameTypes {
		goKinds = append(goKinds, k)
	}
	sort.Strings(pyKinds)
	sort.Strings(goKinds)
	if !slices.Equal(pyKinds, goKinds) {
		bad("JSON kinds sent %v, read %v", pyKinds, goKinds)
	}
	for kind, keys := range s.Kinds {
		mk, ok := frameTypes[kind]
		if !ok {
			continue
		}
		fields := jsonFields(reflect.TypeOf(mk()).Elem())
		for _, k := range keys {
			if !fields[k] {
				bad("the probe sends %q in a %q object; its Go type %T does not read it", k, kind, mk())
			}
		}
	}
	return out
}

func jsonFields(ty reflect.Type) map[string]bool {
	m := map[string]bool{}
	for i := range ty.NumField() {
		if tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			m[tag] = true
		}
	}
	return m
}

// A planted mismatch on the Python side fails the check: an event type
// renumbered, a record one value short, a field the Go side does not read,
// a kind it does not know.
func TestProbeProtocolCatchesDrift(t *testing.T) {
	for name, plant := range map[string]func(s *sent){
		"event renumbered": func(s *sent) { s.Events["T_CST"] = 7 },
		"short record":     func(s *sent) { s.Records = append(s.Records, [3]any{"T_CALL", float64(5), float64(1)}) },
		"unread field":     func(s *sent) { s.Kinds["site"] = append(s.Kinds["site"], "site_kind2") },
		"unknown kind":     func(s *sent) { s.Kinds["lag"] = nil },
		"protocol bumped":  func(s *sent) { s.Protocol++ },
	} {
		s := readSent(t, "probe.py", "sitecustomize.py")
		plant(&s)
		if len(protocolProblems(s)) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}

// A probe that raises as it starts says so (kind "failed"), and the program
// runs on without it.
func TestProbeStartFailureSaid(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	s, note := Prepare(context.Background(), ModeOn, []string{"python3", "-c", "print('ran')"}, py)
	if s == nil {
		t.Fatalf("no session: %s", note)
	}
	defer s.Close()
	env := s.Env(os.Environ())
	for i, kv := range env {
		if strings.HasPrefix(kv, EnvVar+"=") {
			env[i] = strings.Replace(kv, "tick_us=", "tick_us=x", 1) // int("x1000") raises in start
		}
	}
	cmd := exec.Command(py, "-c", "print('ran')")
	cmd.Env, cmd.ExtraFiles = env, s.Files()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Started()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	rep := s.Finish(2 * time.Second)
	if !strings.Contains(rep.Failed, "ValueError") {
		t.Errorf("failed %q, notes %q: want the probe's ValueError", rep.Failed, rep.Notes)
	}
}
