package procstat

import (
	"errors"
	"testing"
)

func TestMemory(t *testing.T) {
	if rss, err := fixtures.ReadRSS(100); err != nil || rss != 1776*1024 {
		t.Errorf("ReadRSS(100) = %d, %v", rss, err)
	}
	if pss, err := fixtures.ReadPss(100); err != nil || pss != 900*1024 {
		t.Errorf("ReadPss(100) = %d, %v", pss, err)
	}
	if ks, err := fixtures.ReadKernelStack(); err != nil || ks != 5120*1024 {
		t.Errorf("ReadKernelStack = %d, %v", ks, err)
	}
	if _, err := fixtures.ReadRSS(999); !errors.Is(err, ErrNoProcess) {
		t.Errorf("ReadRSS(999) = %v, want ErrNoProcess", err)
	}
	if _, err := Root(t.TempDir()).ReadKernelStack(); err == nil {
		t.Error("ReadKernelStack without meminfo succeeded")
	}
}
