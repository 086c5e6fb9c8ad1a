package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/child"
	"github.com/ctxlab/ctxlab/internal/cli"
	"github.com/ctxlab/ctxlab/internal/testhome"
)

// envCtxlabArgs makes this test binary act as ctxlab itself (arguments
// separated by \x1f), so the tests run the real command as a process.
const envCtxlabArgs = "CTXLAB_DEPLOY_TEST_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(envCtxlabArgs); args != "" {
		os.Exit(cli.Main(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	if handled, code := child.Main(); handled {
		os.Exit(code)
	}
	os.Exit(testhome.Main(m))
}
