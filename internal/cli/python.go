package cli

import (
	"fmt"
	"io"
	"os/exec"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/pydriver"
)

// --python chooses the CPython that runs every experiment's CPython arms. It is
// shorthand for --set python=VALUE, checked before anything starts.
func init() {
	runFlagHooks = append(runFlagHooks, addPythonFlag)
}

func addPythonFlag(c *cobra.Command, o *RunOptions) {
	var py string
	c.Flags().StringVar(&py, "python", "", "which CPython runs the CPython arms (pythread, pytask, pyprocess) of every experiment: a command or path, or all (every python3.N and python3.Nt on PATH); default python3")
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		if !cmd.Flags().Changed("python") {
			return nil
		}
		if err := checkPythonFlag(py); err != nil {
			return err
		}
		o.Set = append(o.Set, "python="+py)
		return nil
	}
}

// checkPythonFlag validates --python before anything starts.
func checkPythonFlag(py string) error {
	if py == "all" {
		return nil
	}
	if py == "" {
		return usagef("--python \"\": want a python3 command or path, or all")
	}
	if _, err := exec.LookPath(py); err != nil {
		return usagef("--python %s: %v; want a python3 command or path, or all", py, err)
	}
	return nil
}

// envPythons is what `ctxlab env` shows about Python: every python3,
// python3.N and python3.Nt on PATH, by real executable.
func envPythons() []*pydriver.Interpreter { return pydriver.FindAll() }

// writePythons prints the interpreters found for the env table.
func writePythons(w io.Writer, ins []*pydriver.Interpreter) {
	if len(ins) == 0 {
		fmt.Fprintf(w, "%-22s %s\n", "python", "none on PATH (the CPython arms are skipped)")
		return
	}
	for _, in := range ins {
		fmt.Fprintf(w, "%-22s %s %s: %s → %s\n", "python", in.Version, in.Build(), in.Name, in.Path)
	}
}
