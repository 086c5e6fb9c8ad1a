package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestWorkerLimitsRefused: worker counts beyond what the machine (or ctxlab)
// allows are usage errors (exit 2) naming the value and the limit, and
// nothing runs (no table is printed).
func TestWorkerLimitsRefused(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "ring", "--workers", "200000"}, []string{"200000", "limited to 100000"}},
		{[]string{"run", "ring", "--workers", "1"}, []string{"--workers 1", "at least 2"}},
		{[]string{"run", "ring", "--workers", "900000", "--set", "ring.substrates=thread"}, []string{"900000", "threads (and up to"}},
		{[]string{"run", "ring", "--set", "ring.substrates=fibre"}, []string{"fibre", "goroutine, thread, process, pythread or pytask"}},
		{[]string{"run", "yield", "--workers", "150000"}, []string{"150000", "100000"}},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(c.args, &out, &errb)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, errb.String())
			continue
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed results although refused: %q", c.args, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: stderr %q does not name %q", c.args, errb.String(), w)
			}
		}
	}
}
