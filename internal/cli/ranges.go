package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxlab/ctxlab/internal/result"
)

// Every range a flag or an option takes is written one way, lo..hi, in
// its help and in the error that refuses a value outside it, and
// durations are written short (24h, not 24h0m0s): a user who reads
// "10ms..1h" in the help finds the same words in the error.

// shortDur is result.ShortDuration: 24h, not 24h0m0s.
func shortDur(d time.Duration) string { return result.ShortDuration(d) }

// durRange is "lo..hi" for durations.
func durRange(lo, hi time.Duration) string { return shortDur(lo) + ".." + shortDur(hi) }

// intRange is "lo..hi" for whole numbers.
func intRange(lo, hi int) string { return fmt.Sprintf("%d..%d", lo, hi) }

// outOfRange is the usage error for value outside rng ("1..1000",
// "10ms..1h", "0..1024 (0: all)"), naming the flag.
func outOfRange(flag string, value any, rng string) error {
	if d, ok := value.(time.Duration); ok {
		value = shortDur(d)
	}
	return usagef("%s %v: must be in %s", flag, value, rng)
}

// tidyDefaults writes every flag's default the way its range is written:
// a duration short (1m, not 1m0s), and none at all where the default is
// empty (0s, []), which pflag cannot tell through strictFlags' wrapper.
func tidyDefaults(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				switch {
				case f.DefValue == "0s" || f.DefValue == "[]":
					f.DefValue = ""
				case f.Value.Type() == "duration":
					if d, err := time.ParseDuration(f.DefValue); err == nil {
						f.DefValue = shortDur(d)
					}
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
