package experiments

import (
	"os"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
)

// TestMain lets the test binary play ctxlab's child roles (echo, hog,
// starve), since child.Start re-executes the running binary.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
