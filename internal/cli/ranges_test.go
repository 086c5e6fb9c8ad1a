package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// otherNotations are the range and duration spellings ctxlab no longer
// uses: "10ms to 1h", "between 1 and 9", "0 (all) to 9", "24h0m0s".
var otherNotations = regexp.MustCompile(`\d\S* to \d|between \d|\(all\) to|\d+[hm]0[ms]`)

// numericFlag takes a number, a duration or a list of numbers; each one's
// help states its range.
func numericFlag(f *pflag.Flag) bool {
	switch f.Value.Type() {
	case "int", "duration", "float64":
		return true
	}
	return f.Name == "workers" || f.Name == "hogs" || f.Name == "gomaxprocs"
}

// Every flag of every command writes its range lo..hi, durations short,
// and every numeric flag states one (--hogs and --workers included); the
// help shows --set's placeholder as key=value.
func TestHelpRangesOneNotation(t *testing.T) {
	root := newRoot(nil, io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name := c.CommandPath() + " --" + f.Name
			if otherNotations.MatchString(f.Usage) || otherNotations.MatchString(f.DefValue) {
				t.Errorf("%s: %q (default %q) writes a range or duration another way than lo..hi, short", name, f.Usage, f.DefValue)
			}
			if numericFlag(f) && !strings.Contains(f.Usage, "..") {
				t.Errorf("%s: %q states no range", name, f.Usage)
			}
			if f.DefValue == "0s" || f.DefValue == "[]" {
				t.Errorf("%s: shows an empty default %q", name, f.DefValue)
			}
			seen[f.Name] = true
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, want := range []string{"hogs", "workers", "set", "interval", "timeout"} {
		if !seen[want] {
			t.Errorf("no --%s flag found: the walk checked nothing", want)
		}
	}
	run, _, err := root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if ph, _ := pflag.UnquoteUsage(run.Flags().Lookup("set")); ph != "key=value" {
		t.Errorf("run --set shows the placeholder %q, want key=value", ph)
	}
	for _, k := range exp.OptionNames() {
		o, _ := exp.LookupOption(k)
		if doc := o.OptionDoc(); otherNotations.MatchString(doc) {
			t.Errorf("--set %s: %q writes a range another way than lo..hi", k, doc)
		}
	}
}

func TestShortDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", time.Hour: "1h", 90 * time.Minute: "1h30m", time.Minute: "1m",
		90 * time.Second: "1m30s", 10 * time.Millisecond: "10ms", 1500 * time.Millisecond: "1.5s", 0: "0s",
	} {
		if got := shortDur(d); got != want {
			t.Errorf("shortDur(%v) = %q, want %q", d, got, want)
		}
	}
}
