// Package cli is ctxlab's command line: one file per command, flags filled
// into an Options struct, and a run function that takes its writers. Only
// Main maps errors to exit codes: 0 ok, 1 failure, 2 bad input, 130 interrupted.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/child"
	_ "github.com/ctxlab/ctxlab/internal/experiments" // registers every experiment
	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/textcol"
)

// Version is set at build time with -ldflags "-X …/cli.Version=v1.2.3".
var Version = "0.1.0-dev"

// UsageError is bad input: Main exits 2 and nothing has started.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usagef makes a UsageError.
func usagef(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// errInterrupted is returned when SIGINT/SIGTERM stopped the work.
var errInterrupted = errors.New("interrupted")

// interruptedInto is errInterrupted when the results so far went to an -o
// file rather than to the screen: the message says where they are.
type interruptedInto struct{ path string }

func (e interruptedInto) Error() string   { return "interrupted; results so far are in " + e.path }
func (e interruptedInto) Is(t error) bool { return t == errInterrupted }

// interruptedErr is the error a run stopped by a signal returns: its results
// so far are above, or in the -o file output.
func interruptedErr(output string) error {
	if output == "" || output == "-" {
		return errInterrupted
	}
	return interruptedInto{output}
}

// Main runs ctxlab with args and returns the exit status. A re-executed
// ctxlab in child mode runs its role instead.
func Main(args []string, stdout, stderr io.Writer) int {
	if handled, code := child.Main(); handled {
		return code
	}
	if err := stdoutNotDatabase(stdout); err != nil {
		fmt.Fprintf(stderr, "ctxlab: %v\n", err)
		return 2
	}
	return execute(newRoot(args, stdout, stderr), args, stdout, stderr)
}

// execute runs the command tree root with args until it finishes or
// SIGINT/SIGTERM, and maps what it returned to the exit status.
func execute(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer child.KillAll()
	defer launch.Close() // ends the keeper: nothing it held outlives ctxlab

	// Main prints errors its own way; reached is set once cobra has
	// parsed flags and arguments.
	root.SilenceUsage, root.SilenceErrors = true, true
	reached := false
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		reached = true
		return stdoutNotHistory(c, stdout)
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ue *UsageError
	var xs *exitStatusError
	var se *saveError
	// On a terminal an error wraps at spaces, as the verdict does, rather
	// than being cut mid-word by the terminal.
	errw := textcol.NewLineWrapper(stderr, termWidth(stderr))
	defer errw.Flush()
	stderr = errw
	switch {
	case errors.As(err, &xs): // diagnose: the command's own status
		return xs.code
	case errors.Is(err, errInterrupted), ctx.Err() != nil && errors.Is(err, context.Canceled):
		var into interruptedInto
		switch {
		case err == errInterrupted: // a run: what finished was printed
			fmt.Fprintln(stderr, "ctxlab: interrupted; results so far are above")
		case errors.As(err, &into): // … or written to its -o file
			fmt.Fprintf(stderr, "ctxlab: %v\n", into)
		default:
			fmt.Fprintf(stderr, "ctxlab: interrupted: %v\n", err)
		}
		return 130
	case errors.As(err, &se): // measured, but not stored: a failure, not bad input
		fmt.Fprintf(stderr, "ctxlab: %v\n", err)
		return 1
	case errors.As(err, &ue), isCobraUsage(err), !reached:
		fmt.Fprintf(stderr, "ctxlab: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "ctxlab: %v\n", err)
		return 1
	}
}

// isCobraUsage recognises cobra's own flag and argument errors.
func isCobraUsage(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}

type flagError struct{ err error }

// badFlagValue finds the flag in pflag's "invalid argument "abc" for
// "-r, --reps" flag: …" errors.
var badFlagValue = regexp.MustCompile(`^invalid argument (".*") for "(?:-\w, )?--([\w.-]+)" flag: (.*)$`)

// withFlagUsage rewrites a flag-parse error so it names the flag, the bad
// value and what the flag accepts (its usage line, which states the
// range), the way every other bad value is reported.
func withFlagUsage(c *cobra.Command, err error) error {
	m := badFlagValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := c.Flags().Lookup(m[2])
	if f == nil {
		return err
	}
	why := m[3]
	if i := strings.LastIndex(why, ": "); i >= 0 { // strconv.ParseInt: parsing "abc": invalid syntax
		why = why[i+2:]
	}
	return fmt.Errorf("--%s %s: %s; want %s", m[2], m[1], why, f.Usage)
}

func (e *flagError) Error() string { return e.err.Error() }

// newRoot builds ctxlab's command tree, every command named here. args
// are the command line (without the program name) a run records.
func newRoot(args []string, stdout, stderr io.Writer) *cobra.Command {
	cmdline := append([]string{"ctxlab"}, args...)
	opts := &RunOptions{Stdout: stdout, Stderr: stderr, CommandLine: cmdline}
	root := &cobra.Command{
		Use:   "ctxlab",
		Short: "measure what switching between concurrent workers costs on this machine",
		Long: `ctxlab measures, on this machine, what it costs when work moves between
concurrent workers — goroutines, OS threads, processes, CPython threads and
asyncio tasks: the handoff, the OS switches it causes, and how sure the
figures are.

Alone, ctxlab runs the quick suite (≤ 30 s on 2 cores).`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("full") {
				opts.Quick = true
			}
			return runSuite(cmd.Context(), opts, nil)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &flagError{withFlagUsage(c, err)} })
	addRunFlags(root, opts)
	root.AddCommand(
		newRunCmd(&RunOptions{Stdout: stdout, Stderr: stderr, CommandLine: cmdline}),
		newListCmd(stdout),
		newEnvCmd(stdout),
		newShowCmd(stdout, stderr),
		newExportCmd(stdout, stderr),
		newHistoryCmd(stdout, stderr),
		newCompareCmd(stdout, stderr),
		newImportCmd(stdout, stderr),
		newReportCmd(stdout, stderr),
		newBudgetCmd(stdout, stderr),
		newDiagnoseCmd(stdout, stderr),
		newWatchCmd(stdout, stderr),
		newWorkloadCmd(stdout, stderr),
		newServeCmd(stdout, stderr),
		newSelfcheckCmd(stdout, stderr, cmdline),
	)
	addCompletions(root)
	if !completing(args) {
		strictFlags(root)
	}
	tidyDefaults(root)
	return root
}

// completing says args ask cobra's hidden completion command for words.
// It parses the line's flags twice, which strictFlags would refuse as a
// flag given twice; and nothing is run, so there is nothing to guard.
func completing(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

func version() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}
