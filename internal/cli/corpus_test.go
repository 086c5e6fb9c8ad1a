package cli

import (
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// badInput is one case of the bad-input corpus: the command line, and a
// fragment its message must hold. Every case must exit 2, print nothing
// on stdout, start nothing and store nothing. {dir}, {text}, {foreign},
// {badschema}, {notrun}, {run}, {run2}, {twice}, {fifo}, {socket},
// {negops}, {negmedian}, {hugemean}, {neghuge}, {dupearm}, {badid} and
// {dotid} are files the test makes; "pipe" is a FIFO in the working
// directory, named without a separator.
type badInput struct {
	args string
	want string
}

// corpus is the bad-input corpus (README: "Exit status"). Arguments are
// split on spaces; a case that needs a space in one argument uses \x1f.
var corpus = []badInput{
	// run: flags and values
	{"run --cpus 0-99999999 pingpong", "largest CPU number Linux supports (8191)"},
	{"run --cpus 0-9223372036854775807", "8191"},
	{"run --cpus 0-18446744073709551616", "8191"},
	{"run --cpus 9999", "CPU 9999"},
	{"run --cpus 3-1", "end is below the start"},
	{"run --cpus x", `--cpus "x"`},
	{"run --cpus -1", `--cpus "-1"`},
	{"run --cpus 1,,2", "bad CPU"},
	{"run --cpus ,", "bad CPU"},
	{"run --cpus 0-", "bad CPU"},
	{"run --reps 0", "--reps 0: must be in 1..1000"},
	{"run --reps 1001", "in 1..1000"},
	{"run --reps -5", "in 1..1000"},
	{"run --reps abc", `--reps "abc": not a decimal whole number; want repetitions per arm, 1..1000`},
	{"run --reps 99999999999999999999", "1..1000"},
	{"run --benchtime 0s", "--benchtime 0s: must be in 1ms..1m"},
	{"run --benchtime 0", "in 1ms..1m"},
	{"run --benchtime 5parsecs", `--benchtime "5parsecs"`},
	{"run --benchtime 1us", "in 1ms..1m"},
	{"run --benchtime 2h", "in 1ms..1m"},
	{"run --benchtime -1s", "in 1ms..1m"},
	{"run --timeout 1ms", "--timeout 1ms: must be in 1s..1h"},
	{"run --timeout 0s", "in 1s..1h"},
	{"run --timeout 2h", "in 1s..1h"},
	{"run --timeout forever", `--timeout "forever"`},
	{"run --gomaxprocs 0", "--gomaxprocs 0: must be in 1..4096"},
	{"run --gomaxprocs -1", "in 1..4096"},
	{"run --gomaxprocs 4097", "in 1..4096"},
	{"run --gomaxprocs 1,x", "not a whole number"},
	{"run --gomaxprocs " + strings.Repeat("1,", 64) + "1", "at most 64"},
	{"run --workers 0", "--workers 0: must be in 1..1000000"},
	{"run --workers 1000001", "in 1..1000000"},
	{"run --workers 2,,3", "not a whole number"},
	{"run --workers 9223372036854775808", "not a whole number"},
	{"run --workers " + strings.Repeat("2,", 100) + "2", "at most 64"},
	{"run --hogs -3", "--hogs -3: must be in 0..1024"},
	{"run --hogs 1025", "in 0..1024"},
	{"run --hogs a", "not a whole number"},
	{"run --set nokey", `--set "nokey": want key=value`},
	{"run --set =1", "want key=value"},
	{"run --set nosuch.option=1", "unknown option"},
	{"run cachecost --set cachecost.w=17179869185GiB", "not a size"},
	{"run cachecost --set cachecost.w=1B", "out of range"},
	{"run cachecost --set cachecost.w=" + strings.Repeat("16KiB,", 40) + "16KiB", "at most 32"},
	{"run cachecost --set cachecost.t=1", "cachecost.t"},
	{"run cachecost --set cachecost.pattern=zigzag", "not a pattern"},
	{"run hop --set hop.callers=0", "in 1..10000"},
	{"run hop --set hop.pool=x", "not a whole number"},
	// the user's database and query (hop, concurrency): checked before anything runs
	{"run hop --set query=select\x1f1", "need --set db=PATH"},
	{"run hop --set db={foreign}", "needs --set query"},
	{"run hop --set db=/nonexistent/shop.db --set query=select\x1f1", "db=/nonexistent/shop.db: stat /nonexistent/shop.db: no such file"},
	{"run hop --set db={text} --set query=select\x1f1", "not a SQLite database"},
	{"run hop --set db={dir} --set query=select\x1f1", "not a regular file"},
	{"run hop --set db={foreign} --set query=delete\x1ffrom\x1fnotes\x1fwhere\x1frowid=? --set args=range:1..9", "only a read-only SELECT or WITH"},
	{"run hop --set db={foreign} --set query=with\x1fx(i)\x1fas\x1f(select\x1f1)\x1fdelete\x1ffrom\x1fnotes", "it would write to the database"},
	{"run hop --set db={foreign} --set query=select\x1fbody\x1ffrom\x1fnosuch\x1fwhere\x1frowid=? --set args=range:1..9", "no such table: nosuch"},
	{"run hop --set db={foreign} --set query=select\x1fbody\x1ffrom\x1fnotes\x1fwhere\x1frowid=?", "no --set args"},
	{"run hop --set db={foreign} --set query=select\x1fbody\x1ffrom\x1fnotes --set args=range:1..9", "has 0 parameters"},
	{"run hop --set db={foreign} --set query=select\x1fbody\x1ffrom\x1fnotes\x1fwhere\x1frowid=?\x1for\x1frowid=? --set args=range:1..9", "has 2 parameters"},
	{"run hop --set db={foreign} --set query=select\x1fbody\x1ffrom\x1fnotes\x1fwhere\x1frowid=? --set args=range:9..1", "want range:A..B"},
	{"run hop --set db={foreign} --set query=select\x1fbody\x1ffrom\x1fnotes\x1fwhere\x1frowid=? --set args=file:/nonexistent/keys", "args=file:/nonexistent/keys"},
	{"run concurrency --set db={foreign} --set query=update\x1fnotes\x1fset\x1fbody=1", "only a read-only SELECT or WITH"},
	// the user's Python function: its name and directory now, its import once the interpreter is found
	{"run hop --set py-call=pricing", "--set py-call=pricing: want module:function"},
	{"run hop --set py-call=pricing:quote() --set args=range:1..9", "want module:function"},
	{"run hop --set py-path={dir}", "needs --set py-call=module:function"},
	{"run hop --set py-call=m:f --set py-path={text}", "--set py-path={text}: not a directory"},
	{"run hop --set py-call=m:f --set args=range:x..9", "--set args=range:x..9"},
	{"run hop --set args=range:1..9", "need --set db=PATH"},
	{"run hop --set py-call=ctxlab_no_such_module_xyz:f", "--set py-call=ctxlab_no_such_module_xyz:f"},
	{"run concurrency --set py-call=ctxlab_no_such_module_xyz:f", "--set py-call=ctxlab_no_such_module_xyz:f"},
	{"run concurrency --set concurrency.levels=0", "in 1.."},
	{"run concurrency --set concurrency.levels=" + strings.Repeat("1,", 70) + "1", "at most 64"},
	{"run callchain --set callchain.items=0", "callchain.items"},
	{"run ring --set ring.substrates=fibers", "fibers"},
	{"run --format xml", `--format "xml": must be one of`},
	{"run --format ''", "--format"},
	{"run --quick --full", "--quick and --full exclude each other"},
	{"run nosuch", `"nosuch"`},
	{"run pingpong/thread/zzz", "pingpong/thread/zzz"},
	{"run pingpong/[", "pingpong/["},
	{"run --nosuchflag", "nosuchflag"},
	{"run -o /nonexistent/dir/x.json --quick", "-o /nonexistent/dir/x.json"},
	{"run -o {dir} --quick", "is a directory"},
	{"run -o {text}/x.json --quick", "not a directory"},
	{"run --quick --db {dir}", "is a directory"},
	{"run --quick --db {text}", "not a ctxlab history database"},
	{"run --quick --db {foreign}", "another program"},
	{"run --quick --db {text}/h.db", "not a directory"},
	// issue 33: repeated flags, empty values, numbers in decimal only
	{"run --set hop.pool=0 --set hop.pool=4 hop", "--set hop.pool given twice (hop.pool=0, then hop.pool=4)"},
	{"run --reps 3 --reps 0", `--reps "0": given twice (first "3")`},
	{"run --cpus 0 --cpus 1", "given twice"},
	{"run --quick --quick", "given twice"},
	{"run --cpus ''", `--cpus "": an empty value`},
	{"run --gomaxprocs ''", `--gomaxprocs "": an empty value`},
	{"run --workers ''", `--workers "": an empty value`},
	{"run --hogs ''", `--hogs "": an empty value`},
	{"run -o ''", `--output "": an empty value`},
	{"run --db ''", `--db "": an empty value`},
	{"show --db ''", `--db "": an empty value`},
	{"serve --probes ''", `--probes "": an empty value`},
	{"run --reps 0x10", `--reps "0x10": not a decimal whole number`},
	{"run --reps 1_0", "not a decimal whole number"},
	{"run --reps 0b11", "not a decimal whole number"},
	{"history --limit 0o7", "not a decimal whole number"},
	{"completion tcsh", `completion "tcsh": no such shell; want one of bash, fish, powershell, zsh`},
	// issue 33: -o is never the history, and is proven writable first
	{"run --quick -o {history}", "-o {history} is the history database"},
	{"run --quick --db {foreign} -o {foreign}", "is the history database"},
	{"show {run} -o {foreign}", "is a SQLite database"},
	{"export {run} -o {foreign}", "is a SQLite database"},
	{"report {run} -o {history}-wal", "write-ahead log"},
	{"compare {run} {run} -o {history}", "the history database"},
	{"report {run} --chart pingpong --format svg -o {dir}/x.png", "--format svg and -o {dir}/x.png disagree"},
	{"report {run} -o {dir}/x.svg", "--format html and -o {dir}/x.svg disagree"},
	{"--reps 0", "in 1..1000"},
	{"--cpus 0-99999999", "8191"},
	{"--bogus", "bogus"},
	{"extra-argument", "extra-argument"},
	{"nosuchcommand", "nosuchcommand"},
	// list and env
	{"list nosuch", `"nosuch"`},
	{"list --suite huge", `--suite "huge"`},
	{"list pingpong nosuch", `unknown experiment or arm "nosuch"`},
	{"env --format yaml", `--format "yaml"`},
	{"env extra", "unknown command"},
	// history, show, export
	{"history", "no runs stored yet"},
	{"history --limit -1", "--limit -1: must be in 0..1073741824 (0: all)"},
	{"history --limit 99999999999", "1073741824"},
	{"history --limit x", `--limit "x"`},
	{"history --format yaml", `--format "yaml"`},
	{"history --db {dir}", "is a directory"},
	{"history --db {text}", "not a ctxlab history database"},
	{"history --db {foreign}", "another program"},
	{"history extra", "unknown command"},
	{"show", "no runs stored yet"},
	{"show --format yaml {run}", `--format "yaml"`},
	{"show {notrun}", "decode run"},
	{"show {badschema}", "schema -5; want 1.."},
	{"show {twice}", "more data after the run document"},
	{"show /nonexistent/run.json", "/nonexistent/run.json"},
	{"show {run} -o /nonexistent/dir/x.txt", "-o /nonexistent/dir/x.txt"},
	{"show {run} -o {dir}", "is a directory"},
	{"show --db {foreign} last", "another program"},
	{"show a b", "accepts at most 1 arg"},
	{"export {run} -o /nonexistent/dir/x.json", "-o /nonexistent/dir/x.json"},
	{"export {run} -o {dir}", "is a directory"},
	{"export --db {dir}", "is a directory"},
	{"export --format csv", "unknown flag"},
	// import
	{"import", "requires at least 1 arg"},
	{"import /nonexistent.json", "/nonexistent.json"},
	{"import {notrun}", "decode run"},
	{"import {badschema}", "schema -5"},
	{"import {twice}", "more data"},
	{"import {text}", "decode run"},
	{"import {run} --db {dir}", "is a directory"},
	{"import {run} --db {text}", "not a ctxlab history database"},
	{"import {run} --db {foreign}", "another program"},
	{"import {run} --db {text}/h.db", "not a directory"},
	// run files that are not regular files: refused at once (reading a FIFO
	// waited for a writer for ever, deaf to SIGINT and SIGTERM)
	{"show {fifo}", "fifo.json is a FIFO; want a run file (JSON)"},
	{"show pipe", "pipe is a FIFO; want a run file (JSON)"}, // a bare name, not taken for a stored run's id
	{"export {fifo}", "is a FIFO; want a run file (JSON)"},
	{"import {fifo}", "is a FIFO; want a run file (JSON)"},
	{"import pipe", "pipe is a FIFO"},
	{"import {run} {fifo}", "is a FIFO"},
	{"compare {fifo} {run}", "is a FIFO"},
	{"compare {run} pipe", "pipe is a FIFO"},
	{"report {fifo}", "is a FIFO"},
	{"report pipe --chart pingpong", "pipe is a FIFO"},
	{"budget --rate 1000/s --run {fifo}", "is a FIFO"},
	{"budget --rate 1000/s --run pipe", "pipe is a FIFO"},
	{"show {socket}", "is a socket; want a run file (JSON)"},
	{"import {socket}", "is a socket"},
	{"show /dev/null", "/dev/null is a character device; want a run file (JSON)"},
	{"import /dev/zero", "/dev/zero is a character device"},
	{"budget --rate 1000/s --run /dev/null", "is a character device"},
	{"show {dir}", "adir is a directory; want a run file (JSON)"},
	{"import {dir}", "is a directory; want a run file (JSON)"},
	{"compare {run} {dir}", "is a directory; want"},
	// run files outside the schema's ranges (docs/result-schema.md):
	// refused by every reader in the same words, nothing stored
	{"import {negops}", `arms[0] "pingpong/goroutine/chan": ops_per_rep is -5; want 0..1e+15`},
	{"show {negops}", "ops_per_rep is -5; want 0..1e+15"},
	{"export {negops}", "ops_per_rep is -5"},
	{"compare {run} {negops}", "ops_per_rep is -5"},
	{"report {negops}", "ops_per_rep is -5"},
	{"budget --rate 1000/s --run {negops}", "ops_per_rep is -5"},
	{"import {negmedian}", `arms[0] "pingpong/goroutine/chan": median is -309; want 0..1e+15`},
	{"budget --rate 1000/s --run {negmedian}", "median is -309"},
	{"import {hugemean}", "rep_means[0] is 1e+308; want 0..1e+15"},
	{"import {neghuge}", "rep_means[0] is -1e+308; want 0..1e+15"},
	{"report {hugemean}", "rep_means[0] is 1e+308"},
	{"import {dupearm}", `arms[1] "pingpong/goroutine/chan": the name of arms[0] too; arm names must be unique`},
	{"show {dupearm}", "arm names must be unique"},
	{"compare {dupearm} {run}", "arm names must be unique"},
	{"import {badid}", `id "../../../../tmp/x": want 1..128 of A-Z a-z 0-9 . _ -, starting with a letter or digit`},
	{"show {badid}", `id "../../../../tmp/x"`},
	{"import {dotid}", `id "..": want`},
	{"import {run2} {negops}", "ops_per_rep is -5"}, // one bad file: none is stored
	{"import {run2} {badid} {run}", `id "../../../../tmp/x"`},
	// compare
	{"compare --format bench {run} {run}", `--format "bench"`},
	{"compare {run} {notrun}", "decode run"},
	{"compare {badschema} {run}", "schema -5"},
	{"compare {run} {run} -o /nonexistent/dir/c.txt", "-o /nonexistent/dir/c.txt"},
	{"compare {run} {run} -o {dir}", "is a directory"},
	{"compare a b c", "accepts at most 2 arg"},
	{"compare --db {foreign}", "another program"},
	// report
	{"report {run} --chart nosuch", `--chart "nosuch"`},
	{"report {run} --format png", `--format "png"`},
	{"report {run} --chart pingpong --format pdf", `--format "pdf" with --chart`},
	{"report {run} -o /nonexistent/dir/r.html", "-o /nonexistent/dir/r.html"},
	{"report {run} -o {dir}", "is a directory"},
	{"report {notrun}", "decode run"},
	{"report --db {dir}", "is a directory"},
	// budget
	{"budget", "--rate is required"},
	{"budget --rate 0/s --run {run}", "must be more than 0/s"},
	{"budget --rate 10000 --run {run}", "ending in /s"},
	{"budget --rate fast/s --run {run}", "is not a number"},
	{"budget --rate NaN/s --run {run}", "must be more than 0/s"},
	{"budget --rate Inf/s --run {run}", "at most"},
	{"budget --rate 2e9/s --run {run}", "at most"},
	{"budget --rate -5/s --run {run}", "must be more than 0/s"},
	{"budget --rate 1/s --arm [x --run {run}", "not a valid glob"},
	{"budget --rate 1/s --run {notrun}", "decode run"},
	// watch and diagnose
	{"watch", "give the PID to watch"},
	{"watch 0", `PID "0"`},
	{"watch -5", "unknown shorthand flag"},
	{"watch abc", `PID "abc"`},
	{"watch 99999999999999999999", "PID"},
	{"watch 1 --name x", "not both"},
	{"watch --name [", "not a regular expression"},
	{"watch 1 --interval 1ms", "--interval 1ms: must be in 10ms..1h"},
	{"watch 1 --interval 2h", "in 10ms..1h"},
	{"watch 1 --interval soon", `--interval "soon"`},
	{"watch 1 --count -1", "--count -1"},
	{"watch 1 --count 2000000000", "1073741824"},
	{"watch 1 --top -1", "--top -1"},
	{"watch 1 --top 99999999", "1048576"},
	{"watch 1 --sort cpu", `--sort "cpu"`},
	{"watch 1 --format xml", `--format "xml"`},
	{"watch 1 2", "accepts at most 1 arg"},
	{"watch --name ^no-such-process-name-xyz$", "no process has a matching command name"},
	{"watch 1 --db {dir}", "is a directory"},
	{"watch 1 --db {foreign}", "another program"},
	{"watch 1 --db /nonexistent/h.db", "no runs stored yet"},
	{"diagnose --db {text} -- true", "not a ctxlab history database"},
	{"run --python ''", "python"},
	{"diagnose", "diagnose needs a command to run"},
	{"diagnose -- /nonexistent/cmd", `command "/nonexistent/cmd"`},
	{"diagnose --interval 1ms -- true", "in 10ms..1h"},
	{"diagnose --top -1 -- true", "--top -1"},
	{"diagnose --format xml -- true", `--format "xml"`},
	// serve
	{"serve --cpu-budget NaN", "--cpu-budget NaN: must be in 0.05..50"},
	{"serve --cpu-budget +Inf", "in 0.05..50"},
	{"serve --cpu-budget -Inf", "in 0.05..50"},
	{"serve --cpu-budget 0", "in 0.05..50"},
	{"serve --cpu-budget 51", "in 0.05..50"},
	{"serve --cpu-budget lots", `--cpu-budget "lots"`},
	{"serve --interval 1s", "--interval 1s"},
	{"serve --interval 48h", "--interval 48h: must be in 5s..24h"},
	{"serve --interval soon", `--interval "soon"`},
	{"serve --probe-timeout 10ms", "--probe-timeout 10ms"},
	{"serve --probe-timeout 1h", "--probe-timeout 1h: must be in 1s..5m"},
	{"serve --probes nosuch/arm", `unknown experiment "nosuch"`},
	{"serve --probes pingpong/zzz*", "matches no arm"},
	{"serve --probes pingpong/[", "pingpong/["},
	{"serve --listen 0.0.0.0:9477", "add --allow-remote"},
	{"serve --listen :9477", "every interface"},
	{"serve --listen 127.0.0.1", "want host:port"},
	{"serve --listen 127.0.0.1:99999", "in 1..65535"},
	{"serve --listen 127.0.0.1:0", "in 1..65535"},
	{"serve --listen 127.0.0.1:http", "in 1..65535"},
	{"serve --db {dir}", "is a directory"},
	{"serve --db {text}", "not a ctxlab history database"},
	{"serve --db {foreign}", "another program"},
	{"serve extra", "unknown command"},
}

// TestBadInputCorpus runs every corpus case through Main, the real entry
// point: exit 2, the message names the bad value, nothing on stdout, and
// nothing stored in the (empty, private) default history.
func TestBadInputCorpus(t *testing.T) {
	if len(corpus) < 100 {
		t.Fatalf("the corpus has %d cases; keep at least 100", len(corpus))
	}
	home := isolate(t)
	files := corpusFiles(t)
	files["{history}"] = home
	for _, tc := range corpus {
		args := strings.Fields(tc.args)
		for i, a := range args {
			for k, v := range files {
				a = strings.ReplaceAll(a, k, v)
			}
			args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "\x1f", " "), "''", "")
		}
		start := time.Now()
		code, out, errs := ctxlab(t, args...)
		took := time.Since(start)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2; stderr %q", tc.args, code, errs)
			continue
		}
		if out != "" {
			t.Errorf("%s: printed on stdout for bad input: %.200q", tc.args, out)
		}
		want := tc.want
		for k, v := range files {
			want = strings.ReplaceAll(want, k, v)
		}
		if !strings.Contains(errs, want) {
			t.Errorf("%s: message %q does not say %q", tc.args, errs, want)
		}
		// Refused before anything started: far below one arm's benchtime.
		// Generous, for a busy machine (run -o used to measure for 33 s).
		if took > 10*time.Second {
			t.Errorf("%s: took %v to refuse", tc.args, took)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("bad input created the history database %s", home)
	}
}

// corpusFiles makes the files the corpus names, and moves the test into
// their directory (for the bare-named FIFO "pipe").
func corpusFiles(t *testing.T) map[string]string {
	dir := t.TempDir()
	runFile, err := filepath.Abs(testRunFile)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	// variant is the fixture run with one value changed; it fails the
	// test if the fixture no longer holds the value.
	variant := func(name, old, new string) string {
		if !strings.Contains(string(run), old) {
			t.Fatalf("%s: the fixture %s has no %s", name, runFile, old)
		}
		return write(name, strings.Replace(string(run), old, new, 1))
	}
	const firstOps, firstMedian, firstMeans = `"ops_per_rep": 100000`, `"median": 309`, `"rep_means": [310,`
	const id, secondArm = `"id": "20261130T120000-abc123"`, `"name": "pingpong/thread/futex"`
	foreign := filepath.Join(dir, "other.sqlite")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (body TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	sub := filepath.Join(dir, "adir")
	os.Mkdir(sub, 0o755)
	fifo := filepath.Join(dir, "fifo.json")
	for _, p := range []string{fifo, filepath.Join(dir, "pipe")} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		unblockFIFO(t, p)
	}
	sock, err := net.Listen("unix", filepath.Join(dir, "run.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	t.Chdir(dir)
	return map[string]string{
		"{dir}":       sub,
		"{text}":      write("notes.txt", "not a database\n"),
		"{foreign}":   foreign,
		"{badschema}": write("bad.json", `{"schema":-5,"id":"x"}`),
		"{notrun}":    write("notrun.json", `[1, 2, 3]`),
		"{twice}":     write("twice.json", string(run)+string(run)),
		"{run}":       runFile,
		"{run2}":      variant("run2.json", id, `"id": "20261130T120000-def456"`),
		"{fifo}":      fifo,
		"{socket}":    filepath.Join(dir, "run.sock"),
		"{negops}":    variant("negops.json", firstOps, `"ops_per_rep": -5`),
		"{negmedian}": variant("negmedian.json", firstMedian, `"median": -309`),
		"{hugemean}":  variant("hugemean.json", firstMeans, `"rep_means": [1e308,`),
		"{neghuge}":   variant("neghuge.json", firstMeans, `"rep_means": [-1e308,`),
		"{dupearm}":   variant("dupearm.json", secondArm, `"name": "pingpong/goroutine/chan"`),
		"{badid}":     variant("badid.json", id, `"id": "../../../../tmp/x"`),
		"{dotid}":     variant("dotid.json", id, `"id": ".."`),
	}
}

// unblockFIFO opens the FIFO at path for writing, and closes it, whenever
// a reader waits on it, until the test ends: a ctxlab that opens a FIFO
// then reads an empty document and fails its corpus case instead of
// hanging the test.
func unblockFIFO(t *testing.T, path string) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			// Without a reader this fails at once (ENXIO).
			if fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
				syscall.Close(fd)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}
