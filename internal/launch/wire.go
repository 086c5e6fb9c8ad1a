package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// msg is one message between ctxlab and its keeper, one datagram of a
// SOCK_SEQPACKET socket pair; a start carries the command's stdin,
// stdout and stderr as SCM_RIGHTS.
type msg struct {
	Op string `json:"op"` // start, go, signal, reap, temp, untemp, close; started, exited, reaped
	ID int    `json:"id,omitempty"`
	// start
	Path     string   `json:"path,omitempty"`
	Args     []string `json:"args,omitempty"`
	Env      []string `json:"env,omitempty"`
	Dir      string   `json:"dir,omitempty"`
	OwnGroup bool     `json:"own_group,omitempty"`
	// started
	PID  int    `json:"pid,omitempty"`
	Note string `json:"note,omitempty"`
	Err  string `json:"err,omitempty"`
	// signal
	Sig   int  `json:"sig,omitempty"`
	Group bool `json:"group,omitempty"`
	// exited, reaped
	WallNs      int64           `json:"wall_ns,omitempty"`
	WaitStatus  uint32          `json:"wait_status,omitempty"`
	Rusage      *syscall.Rusage `json:"rusage,omitempty"`
	Left        []Left          `json:"left,omitempty"`
	KeeperCPUNs int64           `json:"keeper_cpu_ns,omitempty"`
	Held        string          `json:"held,omitempty"`
}

// maxFDs bounds the descriptors one start passes: stdin, stdout, stderr
// and ExtraFiles.
const maxFDs = 16

// maxMsg bounds one message: the command line and environment of a start.
const maxMsg = 1 << 20

// conn is one end of the socket pair.
type conn struct {
	fd int
	mu sync.Mutex
}

// send writes m, with fds attached when given.
func (c *conn) send(m msg, fds ...int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > maxMsg {
		return fmt.Errorf("the command line and environment are %d bytes; at most %d can be passed", len(b), maxMsg)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		err = unix.Sendmsg(c.fd, b, oob, nil, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// recv reads one message and the fds it carries; io.EOF when the other
// end is gone.
func (c *conn) recv() (msg, []int, error) {
	buf := make([]byte, maxMsg+1)
	oob := make([]byte, unix.CmsgSpace(maxFDs*4))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(c.fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return msg{}, nil, err
	}
	if n == 0 {
		return msg{}, nil, io.EOF
	}
	var fds []int
	if oobn > 0 {
		cms, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil {
			for _, cm := range cms {
				if fs, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, fs...)
				}
			}
		}
	}
	var m msg
	if err := json.Unmarshal(buf[:n], &m); err != nil {
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
		return msg{}, nil, fmt.Errorf("keeper message: %w", err)
	}
	return m, fds, nil
}

// socketPair is a SOCK_SEQPACKET pair whose buffers hold a start.
func socketPair() ([2]int, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fds, err
	}
	for _, fd := range fds {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 2*maxMsg)
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 2*maxMsg) // root only; others keep wmem_max
	}
	return fds, nil
}
