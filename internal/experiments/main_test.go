package experiments

import (
	"os"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
)

// TestMain lets the test binary act as ctxlab's child mode, so process arms
// can re-execute it as their partners.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
