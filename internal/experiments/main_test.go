package experiments

import (
	"os"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/testhome"
)

// TestMain lets this test binary play ctxlab's child roles: process arms
// re-execute the running executable, which in tests is this binary.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	code := testhome.Main(m)
	child.KillAll()
	os.Exit(code)
}
