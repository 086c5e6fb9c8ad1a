package report

import (
	"os"
	"testing"

	"github.com/ctxlab/ctxlab/internal/testhome"
)

// TestMain keeps the report tests (chromium, go tool benchstat) out of the
// user's home and fails when one writes there.
func TestMain(m *testing.M) { os.Exit(testhome.Main(m)) }
