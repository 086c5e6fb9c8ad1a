package cli

import (
	"io"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

func TestCountersFlag(t *testing.T) {
	host := sysinfo.Detect()
	for _, tc := range []struct {
		args []string
		want bool
	}{{[]string{"--counters"}, true}, {nil, false}} {
		o := &RunOptions{Stdout: io.Discard, Stderr: io.Discard}
		c := &cobra.Command{Use: "run"}
		addRunFlags(c, o)
		if err := c.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		pl, err := validate(o, []string{"cachecost"}, host)
		if err != nil {
			t.Fatal(err)
		}
		if pl.cfg.Counters != tc.want {
			t.Errorf("%v: cfg.Counters = %v, want %v", tc.args, pl.cfg.Counters, tc.want)
		}
	}
}
