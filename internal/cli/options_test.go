package cli

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// Every declared --set option either takes any text (a path, a query) or
// refuses a bad value naming the key and the value.
func TestEveryOptionNamesItsBadValue(t *testing.T) {
	const bad = "§bad§"
	keys := exp.OptionNames()
	if len(keys) < 15 {
		t.Fatalf("%d options declared: %v", len(keys), keys)
	}
	for _, k := range keys {
		_, err := exp.ParseSettings(map[string]string{k: bad})
		if err != nil && !strings.Contains(err.Error(), "--set "+k+"="+bad) {
			t.Errorf("--set %s=%s: %q does not name the key and value", k, bad, err)
		}
	}
}

// A bad value is refused whichever experiments run: values are checked
// before any arm is built, not by the experiment that reads them.
func TestOptionCheckedBeforeArms(t *testing.T) {
	code, out, errs := run(t, "run", "pingpong/goroutine/chan", "--set", "hop.pool=0")
	if code != 2 || out != "" || !strings.Contains(errs, "--set hop.pool=0: must be in 1..1000") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming hop.pool=0", code, out, errs)
	}
}
