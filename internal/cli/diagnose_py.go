package cli

import (
	"context"
	"time"

	"github.com/ctxlab/ctxlab/internal/pyprobe"
	"github.com/ctxlab/ctxlab/internal/vary"
	"github.com/ctxlab/ctxlab/internal/watch"
)

// pyProbeWait is how long diagnose waits, once the command has exited, for
// the rest of the probe's report: the interpreter writes it before it
// exits, so only a process that kept the pipe open makes this wait.
const pyProbeWait = 2 * time.Second

// preparePyProbe gives a CPython command the probe (docs/pyprobe.md) as
// --python-probe says: its environment and the pipe as descriptor 3. The
// note says why a Python command runs without it.
func preparePyProbe(ctx context.Context, o *DiagnoseOptions, c *vary.Command, path string) (*pyprobe.Session, string) {
	s, note := pyprobe.Prepare(ctx, o.pyProbe, o.Args, path)
	if s != nil {
		s.CallsPerS = o.PythonCalls
		c.Env = s.Env(c.Env)
		c.ExtraFiles = s.Files()
	}
	return s, note
}

// finishPyProbe collects the probe's report once the command has exited
// and reads it beside the profile, whose rows then carry Python's thread
// names; nil when the command ran without the probe.
func finishPyProbe(s *pyprobe.Session, sum *watch.Profile) *pyprobe.Report {
	if s == nil {
		return nil
	}
	rep := s.Finish(pyProbeWait)
	pyprobe.Read(rep, sum)
	return rep
}

// writePyProbe prints the probe's report after the profile: text, or its
// JSON records under --format json.
func writePyProbe(o *DiagnoseOptions, rep *pyprobe.Report) error {
	if rep == nil {
		return nil
	}
	d := newDisplay(&o.WatchOptions, o.Stderr, "")
	if d.json {
		return rep.WriteJSON(o.Stderr)
	}
	w := d.prose()
	if err := rep.WriteText(w); err != nil {
		return err
	}
	return w.Flush()
}
