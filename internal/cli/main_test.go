package cli

import (
	"os"
	"testing"
)

// TestMain: with CTXLAB_TEST_AS_MAIN=1 this test binary is ctxlab itself,
// so end-to-end tests can run it as a subprocess (and process arms can
// re-execute it as their child).
func TestMain(m *testing.M) {
	if os.Getenv("CTXLAB_TEST_AS_MAIN") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
