package sysinfo

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ConfigHZ reads the kernel's timer tick rate (CONFIG_HZ) from
// /boot/config-$(uname -r) or /proc/config.gz, so a latency cluster at a
// tick can be named. source says which file it came from; 0 and a reason
// when neither is readable (the tick is then unknown, never guessed).
func ConfigHZ() (hz int, source string, err error) {
	var u unix.Utsname
	if e := unix.Uname(&u); e == nil {
		p := "/boot/config-" + unix.ByteSliceToString(u.Release[:])
		if b, e := os.ReadFile(p); e == nil {
			if hz, ok := ParseConfigHZ(b); ok {
				return hz, p, nil
			}
		}
	}
	f, e := os.Open("/proc/config.gz")
	if e != nil {
		return 0, "", fmt.Errorf("CONFIG_HZ unknown: no /boot/config-<release> and %w", e)
	}
	defer f.Close()
	z, e := gzip.NewReader(f)
	if e != nil {
		return 0, "", fmt.Errorf("CONFIG_HZ unknown: /proc/config.gz: %w", e)
	}
	b, e := io.ReadAll(io.LimitReader(z, 4<<20))
	if e != nil {
		return 0, "", fmt.Errorf("CONFIG_HZ unknown: /proc/config.gz: %w", e)
	}
	if hz, ok := ParseConfigHZ(b); ok {
		return hz, "/proc/config.gz", nil
	}
	return 0, "", fmt.Errorf("CONFIG_HZ unknown: not set in /proc/config.gz")
}

// ParseConfigHZ finds the CONFIG_HZ=N line of a kernel config.
func ParseConfigHZ(b []byte) (int, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "CONFIG_HZ=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err == nil && n > 0 && n <= 10000 {
			return n, true
		}
	}
	return 0, false
}
