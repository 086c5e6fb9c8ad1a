package cli

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/testhome"
)

// TestMain: with CTXLAB_TEST_AS_MAIN=1 this test binary is ctxlab itself,
// so end-to-end tests can run it as a subprocess (and process arms can
// re-execute it as their child). testscript installs it as the command
// ctxlab for the .txtar scripts, and testhome fails the run when any test
// wrote into HOME or XDG_DATA_HOME.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled { // launch's keeper, process arms' partners
		os.Exit(code)
	}
	if os.Getenv("CTXLAB_TEST_AS_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	testscript.Main(testhome.Guard(m), map[string]func(){
		"ctxlab": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}
