package experiments_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/cli"
)

// Bad hop, concurrency and callchain parameters are usage errors: exit 2,
// a message naming the value and the range, and nothing measured.
func TestHopBadParametersExitTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "hop", "--set", "hop.pool=0"}, "hop.pool=0: must be in 1..1000"},
		{[]string{"run", "hop", "--set", "hop.callers=-1"}, "hop.callers=-1: must be in 1..10000"},
		{[]string{"run", "concurrency", "--set", "concurrency.levels=0"}, "concurrency.levels=0"},
		{[]string{"run", "callchain", "--set", "callchain.items=-100"}, "callchain.items=-100"},
	} {
		var out, errb bytes.Buffer
		code := cli.Main(c.args, &out, &errb)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, errb.String())
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, errb.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed results for bad input: %q", c.args, out.String())
		}
	}
}
