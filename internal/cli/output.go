package cli

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ctxlab/ctxlab/internal/atomicfile"
	"github.com/ctxlab/ctxlab/internal/launch"
	"github.com/ctxlab/ctxlab/internal/store"
)

// output is where a command's result goes: stdout, or an -o file whose
// temporary file was made before the work (atomicfile.Create), so a target
// that cannot be written is refused up front, and whose bytes replace the
// target only once all were written.
type output struct {
	stdout io.Writer
	file   *atomicfile.File // nil: stdout
	forget func()           // the keeper removes the temporary file if ctxlab dies first
}

// openOutput checks -o PATH and prepares it before any work starts: it
// must not be the history (checkOutput), and it must be writable and
// replaceable; "" and "-" are stdout. db is the history the command uses (--db, "" for the
// default). close must be called on every path.
func openOutput(flag, path, db string, stdout io.Writer) (*output, error) {
	if err := checkOutput(flag, path, db); err != nil {
		return nil, err
	}
	o := &output{stdout: stdout}
	if path == "" || path == "-" {
		return o, nil
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, usagef("%s %s: %v", flag, path, err)
	}
	o.file = f
	o.forget = func() {}
	if tmp := f.TempPath(); tmp != "" {
		o.forget = launch.Temp(tmp)
	}
	return o, nil
}

// write hands fill the output's writer; for a file, its bytes replace the
// target only when fill and every write succeeded.
func (o *output) write(fill func(io.Writer) error) error {
	if o.file == nil {
		return fill(o.stdout)
	}
	return o.file.Commit(fill)
}

// close removes a temporary file that was never committed (an error, an
// interrupt), leaving the target as it was.
func (o *output) close() {
	if o != nil {
		o.file.Abort()
		if o.forget != nil {
			o.forget()
		}
	}
}

// checkOutput refuses, before any work starts, an -o PATH that could not
// be written or replaced, or that is the history database or one of its
// files (-wal, -shm, -journal) — through a symbolic link, a "..", or a
// hard link — or any other SQLite database: writing output there would
// replace a history with text. Bad paths are usage errors (exit 2).
func checkOutput(flag, path, db string) error {
	if path == "" || path == "-" {
		return nil
	}
	if err := notHistory(flag, path, db); err != nil {
		return err
	}
	if err := atomicfile.Probe(path); err != nil {
		return usagef("%s %s: %v", flag, path, err)
	}
	return nil
}

// historySuffixes are the files SQLite keeps beside a database, and
// historyFiles says what each is.
var (
	historySuffixes = []string{"", "-wal", "-shm", "-journal"}
	historyFiles    = map[string]string{
		"":         "the history database",
		"-wal":     "the history database's write-ahead log",
		"-shm":     "the history database's shared-memory index",
		"-journal": "the history database's rollback journal",
	}
)

// notHistory is checkOutput's rule against writing over a database.
func notHistory(flag, path, db string) error {
	if db == "" {
		p, err := store.DefaultPath()
		if err != nil {
			return &UsageError{err}
		}
		db = p
	}
	// SQLite names its -wal and -shm after the path it was given, or,
	// when that is a symbolic link, after the file the link names.
	for _, base := range []string{db, canonical(db)} {
		for _, suffix := range historySuffixes {
			if sameFile(path, base+suffix) {
				return usagef("%s %s is %s (%s): output never replaces the history; write it to another file", flag, path, historyFiles[suffix], base+suffix)
			}
		}
	}
	if isSQLite(path) {
		return usagef("%s %s is a SQLite database (another history, or another program's): output never replaces a database; write it to another file", flag, path)
	}
	return nil
}

// stdoutNotDatabase refuses, before anything starts, a standard output
// that is a SQLite database or one of the files SQLite keeps beside one
// (`ctxlab show last 1<>history.db`): writing there would replace a
// history with text. It looks at the open file itself (by device and
// inode, and its first bytes), whatever --db the command names.
func stdoutNotDatabase(stdout io.Writer) error {
	f, ok := stdout.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	path, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil
	}
	if def, err := store.DefaultPath(); err == nil {
		for _, suffix := range historySuffixes {
			if sst, err := os.Stat(def + suffix); err == nil && os.SameFile(st, sst) {
				return usagef("standard output is %s (%s): output never replaces the history; write it to another file", historyFiles[suffix], def+suffix)
			}
		}
	}
	for _, suffix := range historySuffixes {
		base, found := strings.CutSuffix(path, suffix)
		if !found || (suffix != "" && !isSQLite(base)) {
			continue
		}
		if suffix == "" && !isSQLite(path) {
			continue
		}
		what := strings.TrimPrefix(historyFiles[suffix], "the history database's ")
		if suffix == "" {
			what = "a SQLite database (a history, or another program's)"
		} else {
			what = "a SQLite database's " + what
		}
		return usagef("standard output is %s (%s): output never replaces a database; write it to another file", what, path)
	}
	return nil
}

// stdoutNotHistory refuses, once the flags are read and before anything
// starts, a standard output that is the history this command uses (--db,
// or the default) or one of its files, by device and inode: `1<>X.db
// --db X.db` opens the history as standard output, where the run's
// output would land on top of what was just stored.
func stdoutNotHistory(c *cobra.Command, stdout io.Writer) error {
	f, ok := stdout.(*os.File)
	fl := c.Flags().Lookup("db")
	if !ok || fl == nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	db := fl.Value.String()
	if db == "" {
		if db, err = store.DefaultPath(); err != nil {
			return nil
		}
	}
	for _, base := range []string{db, canonical(db)} {
		for _, suffix := range historySuffixes {
			if sst, err := os.Stat(base + suffix); err == nil && os.SameFile(st, sst) {
				return usagef("standard output is %s (%s): output never replaces the history; write it to another file", historyFiles[suffix], base+suffix)
			}
		}
	}
	return nil
}

// canonical is path made absolute and clean with every symbolic link
// followed, dangling ones too: a file not made yet is named by its
// directory's real path.
func canonical(path string) string { return atomicfile.Resolve(path) }

// sameFile reports whether a and b name one file: the same canonical
// path, or (when both exist) the same device and inode, which also finds
// hard links and bind mounts.
func sameFile(a, b string) bool {
	if canonical(a) == canonical(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// isSQLite reports whether path is an existing regular file that starts
// as a SQLite database does.
func isSQLite(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	n, _ := io.ReadFull(f, head)
	return bytes.Equal(head[:n], sqliteMagic) && n == len(sqliteMagic)
}
