package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/experiments"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// WorkloadOptions are the flags of the hidden `ctxlab workload`.
type WorkloadOptions struct {
	Threads  int
	WS       string
	Elements int64
	Pattern  string
}

// Limits of the workload's flags.
const (
	maxWorkloadThreads  = 4096
	minWorkloadWS       = 4 << 10
	maxWorkloadWS       = 1 << 30
	maxWorkloadElements = 1 << 40
)

// newWorkloadCmd is cachecost's sweep as a command of its own, for
// trying diagnose --vary on a known program; listed, since the README uses
// it, and its help says it measures nothing itself.
func newWorkloadCmd(stdout, stderr io.Writer) *cobra.Command {
	o := &WorkloadOptions{}
	c := &cobra.Command{
		Use:   "workload",
		Short: "a known program to diagnose (measures nothing itself): threads each following their own working set, the same total work at any count",
		Long: `workload runs --threads locked OS threads (GOMAXPROCS set to match, so the
kernel schedules them), each following its own working set of --ws bytes (a
random or sequential cycle), --elements steps in all, split evenly: the same
total work at any thread count. It prints "elements: N" when done. It is the
workload of docs/diagnose.md:

  ctxlab diagnose --vary T=2,32 -- ctxlab workload --threads {T} --ws 8MiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Threads < 1 || o.Threads > maxWorkloadThreads {
				return outOfRange("--threads", o.Threads, intRange(1, maxWorkloadThreads))
			}
			ws, err := result.ParseSize(o.WS)
			if err != nil || ws < minWorkloadWS || ws > maxWorkloadWS {
				return usagef("--ws %q: want a size in %s..%s, e.g. 8MiB", o.WS, result.SizeName(minWorkloadWS), result.SizeName(maxWorkloadWS))
			}
			if o.Elements < 1 || o.Elements > maxWorkloadElements {
				return outOfRange("--elements", o.Elements, fmt.Sprintf("1..%d", int64(maxWorkloadElements)))
			}
			if err := oneOf("--pattern", o.Pattern, []string{"random", "seq"}); err != nil {
				return err
			}
			if h := sysinfo.Detect(); h.MemAvailableB > 0 && int64(o.Threads)*ws > h.MemAvailableB/2 {
				return usagef("--threads %d × --ws %s is %s, more than half of the memory available (%s)", o.Threads, o.WS,
					result.FormatBytes(float64(int64(o.Threads)*ws)), result.FormatBytes(float64(h.MemAvailableB)))
			}
			n, err := experiments.SweepWork(cmd.Context(), o.Threads, ws, o.Elements, o.Pattern == "random")
			fmt.Fprintf(stdout, "elements: %d\n", n)
			if err != nil {
				return errInterrupted
			}
			return nil
		},
	}
	f := c.Flags()
	f.IntVar(&o.Threads, "threads", 2, "threads, "+intRange(1, maxWorkloadThreads))
	f.StringVar(&o.WS, "ws", "8MiB", "working set per thread, "+result.SizeName(minWorkloadWS)+".."+result.SizeName(maxWorkloadWS))
	f.Int64Var(&o.Elements, "elements", 2_000_000_000, fmt.Sprintf("elements followed in all, 1..%d", int64(maxWorkloadElements)))
	f.StringVar(&o.Pattern, "pattern", "seq", "access pattern: seq (a stream) or random (dependent loads)")
	return c
}
