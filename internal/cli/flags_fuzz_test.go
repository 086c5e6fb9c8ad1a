package cli

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// FuzzRunFlags feeds run's list, duration and --set flags through the
// real flag set and validate: every input is refused as bad usage or
// accepted with every value inside its stated bounds, and nothing panics.
func FuzzRunFlags(f *testing.F) {
	f.Add("0-1", "1,2", "2,100", "0,1", "cachecost.w=16KiB", "5ms")
	f.Add("0-99999999", "0", "9223372036854775808", "-3", "nokey", "0s")
	f.Add("0-9223372036854775807", "4097", "1,,2", "1025", "=1", "5parsecs")
	host := sysinfo.Detect()
	f.Fuzz(func(t *testing.T, cpus, gmp, workers, hogs, set, benchtime string) {
		o := &RunOptions{Stdout: io.Discard, Stderr: io.Discard}
		c := &cobra.Command{Use: "run"}
		addRunFlags(c, o)
		flags := []string{"--cpus=" + cpus, "--gomaxprocs=" + gmp, "--workers=" + workers, "--hogs=" + hogs, "--set=" + set, "--benchtime=" + benchtime, "--no-store"}
		if err := c.ParseFlags(flags); err != nil {
			return // a flag-parse error: Main exits 2 (TestBadInputCorpus)
		}
		pl, err := validate(o, []string{"pingpong/goroutine/*"}, host)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: not a usage error: %v", flags, err)
			}
			return
		}
		for _, v := range pl.params.GOMAXPROCS {
			if v < 1 || v > maxGOMAXPROCS {
				t.Fatalf("%q: GOMAXPROCS %d", flags, v)
			}
		}
		for _, v := range pl.params.Workers {
			if v < 1 || v > maxWorkers {
				t.Fatalf("%q: workers %d", flags, v)
			}
		}
		for _, v := range pl.params.Hogs {
			if v < 0 || v > maxHogs {
				t.Fatalf("%q: hogs %d", flags, v)
			}
		}
		if len(pl.params.CPUs) > sysinfo.MaxCPUs || len(pl.params.Workers) > maxListLen {
			t.Fatalf("%q: lists too long", flags)
		}
		if pl.cfg.BenchTime < 1e6 || pl.cfg.BenchTime > 60e9 {
			t.Fatalf("%q: benchtime %v", flags, pl.cfg.BenchTime)
		}
	})
}

// TestDecimal: whole numbers are read in decimal only, and a leading zero
// does not make one octal (pflag's own parser read 010 as 8 and 0x10 as 16).
func TestDecimal(t *testing.T) {
	for in, want := range map[string]string{"10": "10", "010": "10", "+7": "7", "-0": "0", "000": "0", "-12": "-12"} {
		if got, err := decimal(in); err != nil || got != want {
			t.Errorf("decimal(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"0x10", "0o7", "0b1", "1_000", "1e3", " 1", "", "-", "+", "１"} {
		if got, err := decimal(in); err == nil {
			t.Errorf("decimal(%q) = %q; want an error", in, got)
		}
	}
	code, _, errs := ctxlab(t, "history", "--limit", "010", "--db", "/nonexistent/h.db")
	if code != 2 || !strings.Contains(errs, "no runs stored yet") {
		t.Errorf("--limit 010: exit %d %q; want it taken (and the missing store named)", code, errs)
	}
}
