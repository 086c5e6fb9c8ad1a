package pyprobe

import (
	"os"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/testhome"
)

// TestMain lets this test binary be ctxlab's keeper (launch re-executes
// the running executable, which in tests is this binary): the counter is
// built through launch. The tests' cache is a scratch directory.
func TestMain(m *testing.M) {
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	code := testhome.Main(m)
	launch.Close()
	os.Exit(code)
}
