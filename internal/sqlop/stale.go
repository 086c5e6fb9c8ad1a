package sqlop

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tempPrefix names the temporary directories of database files; the
// owner's PID follows it, so a later ctxlab can tell whose they are.
const tempPrefix = "ctxlab-sqlop-"

// legacyAge is how old a directory without an owner PID (named by an
// older ctxlab) must be before it counts as abandoned.
const legacyAge = 24 * time.Hour

// SweepTemp removes the stale directories (RemoveStale) from the temp
// directory ($TMPDIR) where every ctxlab-sqlop- directory is made: by a
// Source's database file and by the CPython driver's file-database arms
// (hop db=file, concurrency op=sqlite-file). Each arm that makes one calls
// it first, so a run of only CPython arms sweeps too.
func SweepTemp() int { return RemoveStale(os.TempDir()) }

// RemoveStale removes the temporary directories that processes killed
// before their cleanup (SIGKILL, OOM) left in dir: those whose owner PID
// no longer runs, and ownerless ones older than a day. It returns how
// many it removed.
func RemoveStale(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if !stale(rest, e) {
			continue
		}
		if os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// stale decides from the name's tail ("<pid>-<random>", or an older
// ctxlab's "<random>") whether a directory is abandoned.
func stale(rest string, e os.DirEntry) bool {
	if pidText, _, ok := strings.Cut(rest, "-"); ok {
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			return false
		}
		// EPERM: it runs, as another user; only ESRCH means gone.
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	info, err := e.Info()
	return err == nil && time.Since(info.ModTime()) > legacyAge
}
