package cli

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ctxlab/ctxlab/internal/pydriver"
	"github.com/ctxlab/ctxlab/internal/termsafe"
)

// addPythonFlag defines run's --python.
func addPythonFlag(f *pflag.FlagSet, py *string) {
	f.StringVar(py, "python", "", "which CPython runs the CPython arms (pythread, pytask, pyprocess) of every experiment: a command or path, or all (every python3.N and python3.Nt on PATH); default python3")
}

// pythonChoice is the CPython the run's CPython arms drive: --python, or
// its older spelling --set python=VALUE (an alias, removed from extra so
// the experiments see one typed option). Both given must agree. An
// explicit choice is checked before anything starts.
func pythonChoice(o *RunOptions, extra map[string]string) (string, error) {
	py, given := o.Python, o.changed("python")
	if v, ok := extra["python"]; ok {
		delete(extra, "python")
		if given && v != py {
			return "", usagef("--set python=%s and --python %s disagree; give one", v, py)
		}
		py, given = v, true
	}
	if !given {
		return "", nil
	}
	if err := checkPythonFlag(py); err != nil {
		return "", err
	}
	return py, nil
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
// python3.N and python3.Nt on PATH, by real executable, and the names
// whose probe did not answer in time.
func envPythons() ([]*pydriver.Interpreter, []string) {
	return pydriver.FindAllWhy(context.Background())
}

// writePythons prints the interpreters found for the env table, and those
// that did not answer: on a loaded machine an interpreter on PATH may miss
// the probe's time, which is not "none on PATH".
func writePythons(w io.Writer, ins []*pydriver.Interpreter, noAnswer []string) {
	for _, in := range ins {
		fmt.Fprintf(w, "%-22s %s %s: %s → %s\n", "python", termsafe.String(in.Version), termsafe.String(in.Build()),
			termsafe.String(in.Name), termsafe.String(in.Path)) // an interpreter on PATH says what it likes
	}
	if len(noAnswer) > 0 {
		fmt.Fprintf(w, "%-22s %s did not answer within %v and sat idle (not waiting for a CPU): not known; ctxlab env again, or --python PATH\n",
			"python", termsafe.String(strings.Join(noAnswer, ", ")), pydriver.ProbeTimeout())
	}
	if len(ins) == 0 && len(noAnswer) == 0 {
		fmt.Fprintf(w, "%-22s %s\n", "python", "none on PATH (the CPython arms — pythread, pytask, pyprocess — are skipped)")
	}
}
