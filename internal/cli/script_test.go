package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the end-to-end CLI scripts in testdata/script: the
// real ctxlab (this test binary, installed by TestMain as the command
// ctxlab) in an empty work directory, with HOME and XDG_DATA_HOME there
// too, so a script sees exactly what a user would.
func TestScripts(t *testing.T) {
	fixture, err := filepath.Abs(testRunFile)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("XDG_DATA_HOME", filepath.Join(e.WorkDir, "home", "data"))
			b, err := os.ReadFile(fixture)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(e.WorkDir, "fixture.json"), b, 0o644)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"status": cmdStatus,
		},
	})
}

// cmdStatus is `status CODE PROGRAM [ARGS…]`: it runs PROGRAM like exec
// and fails unless it exits with CODE (exec only tells zero from
// non-zero; the exit-status table tells 1, 2 and 130 apart).
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status CODE PROGRAM [ARGS…]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("status %q: not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
