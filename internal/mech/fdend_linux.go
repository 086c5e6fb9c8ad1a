package mech

// NewFDEnd wraps two file descriptors as an Endpoint: 8-byte messages are
// read from in and written to out. Experiments that wire many workers
// together (a ring of pipes) build their links with it; either fd may be -1
// when that direction is not used. The caller owns and closes the fds.
func NewFDEnd(in, out int) Endpoint { return &fdEnd{in: in, out: out} }

// NewRawFDEnd is NewFDEnd whose reads are raw system calls, unseen by the
// Go runtime. Only for a wait whose writer is another process, which a
// stop-the-world here cannot stop: a child process's one goroutine (see
// fdChild for why), or a process ring's driver, which waits a whole lap
// of children. The Go runtime holds the reader's P all the while, so the
// process needs GOMAXPROCS ≥ 2 for anything else to run.
func NewRawFDEnd(in, out int) Endpoint { return &fdEnd{in: in, out: out, rawRecv: true} }
