package serve_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestIdleConnectionsDoNotLockOutScrapes runs `ctxlab serve` as a process
// under RLIMIT_NOFILE 256 and holds 1 000 idle connections to it (half
// after one request, kept alive; half that never send one). Scrapes must
// keep working at once: before, 248 idle connections made every accept
// fail with EMFILE, and a queueing limit would have kept scrapes waiting
// behind the idle ones for their timeouts.
func TestIdleConnectionsDoNotLockOutScrapes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ctxlab serve as a process")
	}
	const nofile, idle = 256, 1000
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil || rl.Cur < idle+64 {
		t.Skipf("this test process may open only %d files; it needs %d", rl.Cur, idle+64)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--listen", addr, "--interval", "1h", "--probes", "pingpong/goroutine/chan/gomaxprocs=1"}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServeMain+"="+strings.Join(args, "\x1f"))
	var stderr lockedBuffer // written by exec's copying goroutine
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	// Both limits, so the server's runtime cannot raise its soft limit.
	lim := unix.Rlimit{Cur: nofile, Max: nofile}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	scrape := func() error {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && (resp.StatusCode != 200 || !bytes.Contains(b, []byte("ctxlab_"))) {
			err = fmt.Errorf("status %d, %d bytes", resp.StatusCode, len(b))
		}
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for scrape() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the server never answered; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < idle; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 { // one request, then held open idle (keep-alive)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			bufio.NewReader(c).ReadString('\n')
		}
	}
	for i := 0; i < 5; i++ {
		start := time.Now()
		if err := scrape(); err != nil {
			t.Fatalf("scrape %d with %d idle connections held: %v (after %v); stderr:\n%s", i, idle, err, time.Since(start), stderr.String())
		}
		t.Logf("scrape %d with %d idle connections held: %v", i, idle, time.Since(start).Round(time.Millisecond))
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
	if len(fds) > nofile {
		t.Errorf("the server has %d files open, over its limit %d?", len(fds), nofile)
	}
	if strings.Contains(stderr.String(), "too many open files") {
		t.Errorf("the server ran out of file descriptors:\n%s", stderr.String())
	}
	t.Logf("server holds %d files under RLIMIT_NOFILE %d", len(fds), nofile)
}

// lockedBuffer is a bytes.Buffer that a child's output can be copied into
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
