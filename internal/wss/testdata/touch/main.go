// Command touch is the working-set test program (not shipped): T threads,
// each touching its own W bytes at random in a loop for S seconds, or
// until they have made N touches between them (the same work at any T).
// Its working set is T × W plus the Go runtime's own pages.
//
//	go build -o /tmp/touch ./internal/wss/testdata/touch
//	/tmp/touch -t 32 -w 8MiB -s 3s
//	/tmp/touch -t 32 -w 8MiB -n 400000000
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	t := flag.Int("t", 2, "threads")
	w := flag.String("w", "8MiB", "bytes each thread touches (KiB, MiB suffixes)")
	s := flag.Duration("s", 3*time.Second, "how long to run at most")
	quota := flag.Uint64("n", 0, "touches to make in all, divided among the threads (0: until -s)")
	flag.Parse()
	size, err := parseSize(*w)
	if err != nil || *t < 1 || *t > 4096 || size < 64 {
		fmt.Fprintf(os.Stderr, "touch: -t 1..4096, -w at least 64 bytes (%v)\n", err)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*t + 1) // the kernel, not the Go runtime, multiplexes the threads
	end := time.Now().Add(*s)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total uint64
	for i := 0; i < *t; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			runtime.LockOSThread()
			n := touch(size, seed, end, *quota/uint64(*t))
			mu.Lock()
			total += n
			mu.Unlock()
		}(uint64(i)*0x9E3779B97F4A7C15 + 1)
	}
	wg.Wait()
	fmt.Printf("touches: %d\n", total)
}

// touch writes one byte of a random cache line of its own size bytes in a
// loop until end or, when quota is above 0, quota writes; it returns how
// many it wrote.
func touch(size int64, x uint64, end time.Time, quota uint64) uint64 {
	buf := make([]byte, size)
	lines := uint64(size / 64)
	for i := int64(0); i < size; i += 4096 {
		buf[i] = 1 // resident from the start
	}
	var n uint64
	for {
		for j := 0; j < 4096; j++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			buf[(x%lines)*64]++
		}
		n += 4096
		if (quota > 0 && n >= quota) || time.Now().After(end) {
			return n
		}
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suf, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}
