package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/perf/benchfmt"

	"github.com/ctxlab/ctxlab/internal/compare"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// hostile is text a run file (or a machine, or another user's thread)
// may carry to drive the reader's terminal, or to forge output lines.
var hostile = []string{
	"\x1b]52;c;SGVsbG8=\x07", // OSC 52: write the viewer's clipboard
	"\x1b[2J\x1b[H",          // clear the screen
	"nul\x00byte",
	"\u009b31mC1-CSI",                // the one-byte CSI, in UTF-8
	"shown\rOVERWRITTEN",             // carriage return: overwrite what was shown
	"one\nBenchmarkForged 1 1 ns/op", // a newline forging a line: a benchmark line, in bench
	"\u202egnp.exe",                  // right-to-left override
	"\u2066isolate\u2069",            // bidi isolate
	"bad\xffutf8",                    // invalid UTF-8
	"back\bspace",
	"del\x7f",
	"tab\there",
	"pipe|cell",
}

// evil is every hostile string, tagged with the field it goes into.
func evil(tag string) string { return tag + ":" + strings.Join(hostile, "·") }

// longEvil is a very long string with an escape at its end.
var longEvil = strings.Repeat("long text ", 3000) + "\x1b[5m"

// hostileRun is the fixture run with hostile text in every field a run
// file carries as text: host, CPU model, kernel, command line, arm,
// experiment, substrate, mechanism, placement, op, params, metric and
// counter names, notes, noise reasons, reasons, checks, findings,
// warnings. Its figures stay valid, so every reader accepts it.
func hostileRun(t *testing.T) *result.Run {
	t.Helper()
	f, err := os.Open(testRunFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := result.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	r.Version, r.GoVersion, r.Suite = evil("version"), evil("go"), evil("suite")
	r.CommandLine = append(r.CommandLine, evil("cmd"))
	r.Warnings = append(r.Warnings, evil("warning"), longEvil)
	e := &r.Env
	e.Hostname, e.CPUModel, e.Kernel = evil("host"), evil("cpu")+longEvil, evil("kernel")
	e.Scheduler, e.Governor, e.CPUQuota = evil("sched"), evil("governor"), evil("quota")
	e.Notes = []string{evil("envnote")}
	e.Counters = []result.CounterInfo{{Name: evil("counter"), Kind: evil("kind"), Unsupported: evil("why")}}
	e.Caches = []result.Cache{{Level: 1, Type: evil("cache"), SizeB: 32768}}
	a := &r.Arms[0] // pingpong/goroutine/chan: measured, with percentiles
	a.Name = "pingpong/" + evil("arm")
	a.Substrate, a.Mechanism, a.Placement, a.Op = evil("sub"), evil("mech"), evil("placement"), evil("op")
	a.Params = map[string]string{evil("pkey"): evil("pval")}
	a.Metrics = map[string]float64{evil("metric"): 1}
	a.Counters = []result.Counter{{Name: evil("armcounter"), Unsupported: evil("armwhy")}}
	a.Notes = []string{evil("note"), longEvil}
	a.Noise.Noisy, a.Noise.Reasons = true, []string{evil("noise")}
	a.Checks = []result.Check{{Name: evil("armcheck"), Detail: evil("armdetail"), Arms: []string{a.Name}}}
	b := &r.Arms[1] // pingpong/thread/futex, with a histogram
	b.Experiment, b.Name = evil("exp"), evil("exp")+"/thread/futex"
	r.Arms[2].Reason = evil("reason") // pingpong/process/pipe, unsupported
	x := &r.Experiments[0]
	x.Summary, x.Op, x.Findings = evil("summary"), evil("expop"), []string{evil("finding")}
	x.Checks[0].Name, x.Checks[0].Detail = evil("check"), evil("detail")
	r.Experiments = append(r.Experiments, result.Experiment{Name: evil("exp"), Summary: evil("summary2"),
		Checks: []result.Check{{Name: evil("check2"), Detail: evil("detail2"), Arms: []string{b.Name}}}})
	if err := r.Validate(); err != nil {
		t.Fatalf("the hostile run must be valid, or no reader shows it: %v", err)
	}
	return r
}

// assertInert fails when out could drive a terminal or forge a line: an
// ESC, NUL, BEL, backspace, DEL, a raw CR or other C0 control but \n (and
// \t in HTML and SVG, whose markup gonum/plot indents with tabs), a C1
// control, a bidi override or isolate, a line or paragraph separator,
// invalid UTF-8, or a line that a newline in a string started.
func assertInert(t *testing.T, what, out string) {
	assertInertMarkup(t, what, out, false)
}

func assertInertMarkup(t *testing.T, what, out string, markup bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		i := 0
		for i < len(out) {
			r, n := utf8.DecodeRuneInString(out[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		t.Errorf("%s: invalid UTF-8 at byte %d: %q", what, i, around(out, i))
		return
	}
	for i, r := range out {
		bad := ""
		switch {
		case r == '\n', r == '\t' && markup:
		case r < 0x20 || r == 0x7f:
			bad = "C0 control or DEL"
		case r >= 0x80 && r <= 0x9f:
			bad = "C1 control"
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			bad = "bidi control"
		case r == 0x2028 || r == 0x2029:
			bad = "line separator"
		}
		if bad != "" {
			t.Errorf("%s: raw %s %U at byte %d: %q", what, bad, r, i, around(out, i))
			return
		}
	}
	for n, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, " \t|>-*#\"'<"), "BenchmarkForged") {
			t.Errorf("%s: line %d was started by a newline inside a string: %.80q", what, n+1, l)
		}
	}
}

func around(s string, i int) string {
	lo, hi := max(i-30, 0), min(i+30, len(s))
	return s[lo:hi]
}

// Every command and format that prints a run shows hostile text escaped:
// no output byte can drive a terminal or forge a line (bench lines, CSV
// rows, markdown cells, HTML). JSON is data: it round-trips the strings
// exactly, and encoding/json escapes the controls that matter.
func TestHostileTextIsShownEscaped(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	want := hostileRun(t)
	file := filepath.Join(dir, "hostile.json")
	var buf bytes.Buffer
	if err := want.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// What a reader sees: the file as decoded (invalid UTF-8 reads as U+FFFD).
	f, _ := os.Open(file)
	want, err := result.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	// sameRun: JSON output decodes to exactly the run that was read.
	sameRun := func(what, out string) {
		t.Helper()
		got, err := result.Read(strings.NewReader(out))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the JSON does not round-trip the run's strings", what)
		}
	}
	sameComparison := func(what, out string) {
		t.Helper()
		var c compare.Comparison
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if c.RunA.Host != want.Env.Hostname || c.RunB.Suite != want.Suite {
			t.Errorf("%s: host %q, suite %q; want them as the file has them", what, c.RunA.Host, c.RunB.Suite)
		}
		arms := map[string]bool{}
		for _, r := range c.Rows {
			arms[r.Arm] = true
		}
		if !arms[want.Arms[0].Name] || !arms[want.Arms[1].Name] {
			t.Errorf("%s: rows %v lack the hostile arms as the file names them", what, c.Rows)
		}
	}

	code, out, errs := ctxlab(t, "import", file)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	assertInert(t, "import", out+errs)
	if !strings.Contains(out, `"host:\x1b]52;c;SGVsbG8=\a`) {
		t.Errorf("import does not show the host Go-quoted: %q", out)
	}

	type cmd struct {
		args []string
		json func(what, out string)
	}
	var cmds []cmd
	for _, src := range []string{file, want.ID} { // the file, and the imported run from the history
		for _, format := range []string{"table", "csv", "markdown", "bench", "html"} {
			cmds = append(cmds, cmd{args: []string{"show", src, "--format", format}})
		}
		cmds = append(cmds,
			cmd{[]string{"show", src, "--format", "json"}, sameRun},
			cmd{[]string{"export", src}, sameRun},
			cmd{args: []string{"report", src}},
			cmd{args: []string{"report", src, "--chart", "pingpong"}},
			cmd{args: []string{"budget", "--rate", "1000/s", "--run", src}},
		)
		for _, format := range []string{"table", "csv", "markdown"} {
			cmds = append(cmds, cmd{args: []string{"compare", src, file, "--format", format}})
		}
		cmds = append(cmds, cmd{[]string{"compare", file, src, "--format", "json"}, sameComparison})
	}
	for _, format := range []string{"table", "csv"} {
		cmds = append(cmds, cmd{args: []string{"history", "--format", format}})
	}
	cmds = append(cmds, cmd{[]string{"history", "--format", "json"}, func(what, out string) {
		var rows []struct{ Host string }
		if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 || rows[0].Host != want.Env.Hostname {
			t.Errorf("%s: %v %+v; want the host as the file has it", what, err, rows)
		}
	}})

	// Refusals that list the run's names say them escaped too.
	for _, args := range [][]string{
		{"budget", "--rate", "1000/s", "--arm", "nosuch", "--run", file},
		{"report", file, "--chart", "nosuch"},
	} {
		what := strings.Join(args, " ")
		code, out, errs := ctxlab(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, `"exp:\x1b]52;c;SGVsbG8=\a`) {
			t.Errorf("%s: exit %d, stdout %.80q, stderr %.300q; want 2, nothing, the experiments named escaped", what, code, out, errs)
		}
		assertInert(t, what, errs)
	}

	for _, c := range cmds {
		what := strings.Join(c.args, " ")
		code, out, errs := ctxlab(t, c.args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %.300s", what, code, errs)
			continue
		}
		if c.json != nil {
			c.json(what, out)
			assertInert(t, what, out) // the same text, with C1 and bidi controls as \u escapes
			assertInert(t, what+" (stderr)", errs)
			continue
		}
		markup := c.args[0] == "report" || strings.HasSuffix(what, "--format html")
		assertInertMarkup(t, what, out, markup)
		assertInert(t, what+" (stderr)", errs)
		switch {
		case strings.HasSuffix(what, "--format bench"):
			assertBenchLines(t, what, out, want)
		case strings.HasSuffix(what, "--format csv"):
			assertCSVRows(t, what, out)
		case strings.HasSuffix(what, "--format markdown"):
			assertMarkdownCells(t, what, out)
		}
	}
}

// assertBenchLines: benchfmt reads exactly one result per repetition of
// each measured arm, each named after an arm: no line was forged.
func assertBenchLines(t *testing.T, what, out string, run *result.Run) {
	t.Helper()
	wantN := 0
	for _, a := range run.Arms {
		wantN += len(a.RepMeans)
	}
	rd := benchfmt.NewReader(strings.NewReader(out), "bench")
	n := 0
	for rd.Scan() {
		switch r := rd.Result().(type) {
		case *benchfmt.Result:
			n++
			if strings.HasPrefix(string(r.Name), "Forged") {
				t.Errorf("%s: a forged benchmark %q", what, r.Name)
			}
		case *benchfmt.SyntaxError:
			t.Errorf("%s: %v", what, r)
		}
	}
	if n != wantN {
		t.Errorf("%s: benchfmt reads %d results, want %d (one per repetition)", what, n, wantN)
	}
}

// assertCSVRows: every record has the header's number of fields (a
// control or newline in a field cannot have shifted a column).
func assertCSVRows(t *testing.T, what, out string) {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Errorf("%s: %d records: %v", what, len(recs), err)
	}
}

// assertMarkdownCells: every row of a markdown table has its header's
// number of cells, so a "|" in a name did not add one.
func assertMarkdownCells(t *testing.T, what, out string) {
	t.Helper()
	cells := func(l string) int { return strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") }
	want := -1
	for n, l := range strings.Split(out, "\n") {
		switch {
		case !strings.HasPrefix(l, "|"):
			want = -1
		case want < 0:
			want = cells(l)
		case cells(l) != want:
			t.Errorf("%s: line %d has %d cell bars, its table's header %d: %.120q", what, n+1, cells(l), want, l)
		}
	}
}

// env prints the machine's own text (its host name, CPU model, cgroup,
// notes) escaped too: a host name is whatever the administrator set.
func TestEnvShowsHostileHostEscaped(t *testing.T) {
	h := &sysinfo.Host{Env: hostileRun(t).Env}
	var out bytes.Buffer
	if err := writeEnv(&out, "table", h, envProbes{}); err != nil {
		t.Fatal(err)
	}
	assertInert(t, "env", out.String())
	if !strings.Contains(out.String(), `"host:\x1b]52;c;SGVsbG8=\a`) {
		t.Errorf("env does not show the host Go-quoted:\n%.400s", out.String())
	}
	var js bytes.Buffer
	if err := writeEnv(&js, "json", h, envProbes{}); err != nil {
		t.Fatal(err)
	}
	var got result.Env
	// encoding/json writes invalid UTF-8 as U+FFFD; the rest as it is.
	valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.Hostname != valid(h.Hostname) || got.CPUModel != valid(h.CPUModel) {
		t.Errorf("env --format json: %v; host %q, want it as the machine has it", err, got.Hostname)
	}
}

// The verdict ctxlab run prints first names the host and CPU model the
// machine reports, and the warnings (which quote a cgroup's or sysfs's
// text): escaped.
func TestRunVerdictShowsHostileHostEscaped(t *testing.T) {
	r := hostileRun(t)
	var out bytes.Buffer
	if err := writeRun(&out, r, "table", false, true); err != nil {
		t.Fatal(err)
	}
	assertInert(t, "run verdict", out.String())
	if !strings.Contains(out.String(), `"host:\x1b]52;c;SGVsbG8=\a`) {
		t.Errorf("the verdict does not show the host Go-quoted:\n%.400s", out.String())
	}
}
