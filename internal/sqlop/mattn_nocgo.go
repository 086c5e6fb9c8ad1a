//go:build !cgo

package sqlop

// CgoUnsupported is "" when this build has cgo, or why it has not.
const CgoUnsupported = "built without cgo"

func init() {
	registerSQL(sqlDriver{name: "mattn", sqlName: "sqlite3", about: "github.com/mattn/go-sqlite3 (SQLite's C code through cgo)"}, CgoUnsupported)
	register("cgo-call", "one call of a trivial C function through cgo (the cgo crossing alone)", CgoUnsupported, nil)
}
