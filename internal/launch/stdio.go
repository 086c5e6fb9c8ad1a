package launch

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// stdio are the command's stdin, stdout and stderr as the fds sent to the
// keeper, and the pipes that carry its output to writers that are no file.
type stdio struct {
	fds     []int
	mine    []*os.File // ours to close once sent: /dev/null, pipes' write ends
	readers []*os.File // pipes' read ends, closed when the copies end
	copies  sync.WaitGroup
}

// openStdio opens what Spec asks for: files as they are, nil as
// /dev/null, other writers through a pipe copied into them.
func openStdio(s Spec) (*stdio, error) {
	st := &stdio{}
	in := s.Stdin
	if in == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		st.mine = append(st.mine, f)
		in = f
	}
	st.fds = append(st.fds, int(in.Fd()))
	for i, w := range []io.Writer{s.Stdout, s.Stderr} {
		if i == 1 && w != nil && sameWriter(w, s.Stdout) {
			st.fds = append(st.fds, st.fds[1]) // one pipe, as exec.Cmd does: the copies never interleave
			break
		}
		f, err := st.writer(w)
		if err != nil {
			st.sent()
			st.close()
			return nil, err
		}
		st.fds = append(st.fds, int(f.Fd()))
	}
	if len(s.ExtraFiles) > maxFDs-3 {
		st.sent()
		st.close()
		return nil, fmt.Errorf("%d extra files; at most %d can be passed", len(s.ExtraFiles), maxFDs-3)
	}
	for _, f := range s.ExtraFiles {
		st.fds = append(st.fds, int(f.Fd()))
	}
	return st, nil
}

// sameWriter says a and b are one writer (false where they cannot be
// compared).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// writer is the file the command writes w through.
func (st *stdio) writer(w io.Writer) (*os.File, error) {
	switch f := w.(type) {
	case *os.File:
		if f != nil {
			return f, nil
		}
	case nil:
	default:
		r, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		st.mine, st.readers = append(st.mine, pw), append(st.readers, r)
		st.copies.Add(1)
		go func() {
			defer st.copies.Done()
			_, _ = io.Copy(w, r)
		}()
		return pw, nil
	}
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	st.mine = append(st.mine, f)
	return f, nil
}

// sent closes ctxlab's copies of what it opened for the command, once the
// keeper holds them: the pipes end when the command's tree has ended.
func (st *stdio) sent() {
	for _, f := range st.mine {
		_ = f.Close()
	}
	st.mine = nil
}

// wait lets the copies finish, for at most grace (something that held a
// pipe open and was killed has let go of it by now), then cuts them.
func (st *stdio) wait(grace time.Duration) {
	done := make(chan struct{})
	go func() { st.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		st.close()
		<-done
	}
}

// close closes the read ends; safe twice.
func (st *stdio) close() {
	for _, r := range st.readers {
		_ = r.Close()
	}
	st.readers = nil
}
