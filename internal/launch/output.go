package launch

import (
	"bytes"
	"context"
	"fmt"
)

// outputCap is how much of each stream Output keeps.
const outputCap = 1 << 20

// Output runs a short command to its end in a process group of its own,
// under the keeper (nothing it starts outlives ctxlab), and returns what it
// wrote to stdout and to stderr (the first MiB of each; s.Stdout and
// s.Stderr are not used). err is not nil when it could not start, was
// stopped (ctx.Err() when ctx ended; past s.Timeout, "timed out"), was
// killed by a signal, or exited with a status other than 0, and says which:
// what the command wrote is for the caller to quote.
func Output(ctx context.Context, s Spec) (stdout, stderr []byte, err error) {
	o, e := &capped{max: outputCap}, &capped{max: outputCap}
	s.Stdout, s.Stderr, s.OwnGroup = o, e, true
	r, err := Run(ctx, s)
	switch {
	case err != nil && r == nil:
	case r.Stopped == Interrupted && ctx.Err() != nil:
		err = ctx.Err()
	case err != nil:
	case r.Stopped != NotStopped:
		err = fmt.Errorf("%v", r.Stopped)
	case r.Signal != 0:
		err = fmt.Errorf("signal: %v", r.Signal)
	case r.ExitStatus != 0:
		err = fmt.Errorf("exit status %d", r.ExitStatus)
	}
	return o.buf.Bytes(), e.buf.Bytes(), err
}

// capped keeps the first max bytes written to it and drops the rest.
type capped struct {
	max int
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
