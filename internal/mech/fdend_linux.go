package mech

// NewFDEnd wraps two file descriptors as an Endpoint: 8-byte messages are
// read from in and written to out. Experiments that wire many workers
// together (a ring of pipes) build their links with it; either fd may be -1
// when that direction is not used. The caller owns and closes the fds.
func NewFDEnd(in, out int) Endpoint { return &fdEnd{in: in, out: out} }

// NewChildFDEnd is NewFDEnd for a child process whose one goroutine only
// waits on in: its reads are raw system calls (see fdChild for why).
func NewChildFDEnd(in, out int) Endpoint { return &fdEnd{in: in, out: out, rawRecv: true} }
