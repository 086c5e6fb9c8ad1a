package mech

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A kernel without POSIX message queues, or a sandbox that refuses
// mq_open, makes mq unsupported with the reason; another failure is an
// error.
func TestMQErrorSaysWhy(t *testing.T) {
	for errno, want := range map[unix.Errno]string{unix.ENOSYS: "CONFIG_POSIX_MQUEUE", unix.EPERM: "refused here"} {
		err := mqError(errno)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want unsupported naming %q", errno, err, want)
		}
	}
	if err := mqError(unix.EMFILE); errors.Is(err, ErrUnsupported) || !errors.Is(err, unix.EMFILE) {
		t.Errorf("EMFILE: %v", err)
	}
}

// mq leaves no queue behind: each is unlinked as it is made (opening
// its name again finds nothing), and closed with the pair.
func TestMQLeavesNoQueue(t *testing.T) {
	before := mqSeq.Load()
	p, err := NewPair("mq")
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	defer p.Stop()
	for seq := before + 1; seq <= mqSeq.Load(); seq++ {
		name, _ := unix.BytePtrFromString(fmt.Sprintf("ctxlab-%d-%d", os.Getpid(), seq))
		fd, _, errno := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(name)), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0, 0)
		if errno != unix.ENOENT {
			if errno == 0 {
				unix.Close(int(fd))
			}
			t.Errorf("queue %d: mq_open of its name: %v, want ENOENT (unlinked)", seq, errno)
		}
	}
	if mqSeq.Load() != before+2 {
		t.Errorf("a pair made %d queues, want 2", mqSeq.Load()-before)
	}
}
