package mech

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func gettid() int { return unix.Gettid() }

func threadExists(tid int) bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
	return err == nil
}

// carriesValues: futex and eventfd hand over a wake-up, not the value (Row.Value).
func carriesValues(kind string) bool { r, _ := RowOf(kind); return r.Value }
