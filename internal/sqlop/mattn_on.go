//go:build mattn && cgo

// The cgo arms (the mattn/go-sqlite3 driver and the bare cgo call) are built
// only with -tags mattn: compiling SQLite's C code takes minutes on a small
// machine, and the default build needs no C compiler.

package sqlop

/*
static long long ctxlab_want(long long id) { return id * 31 + 7; }
*/
import "C"

import (
	_ "github.com/mattn/go-sqlite3" // registers database/sql driver "sqlite3"
)

// CgoUnsupported is "" when this build has the cgo arms, or why it has not.
const CgoUnsupported = ""

func init() {
	registerSQL(sqlDriver{name: "mattn", sqlName: "sqlite3", about: mattnAbout}, "")
	register("cgo-call", cgoCallAbout, "", func(s *Source) error {
		s.open = func() (Handle, error) { return &cgoHandle{}, nil }
		return nil
	})
}

// cgoHandle answers Want(id) from C: the cost is the Go→C→Go crossing.
type cgoHandle struct{ cur valueCursor }

func (h *cgoHandle) Lookup(id int64) (int64, error) {
	return int64(C.ctxlab_want(C.longlong(id))), nil
}

func (h *cgoHandle) Exec(id int64) (Cursor, error) {
	v, err := h.Lookup(id)
	h.cur = valueCursor{v: v}
	return &h.cur, err
}

func (h *cgoHandle) Close() error { return nil }
