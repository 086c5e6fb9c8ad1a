//go:build !mattn

package sqlop

// CgoUnsupported is "" when this build has the cgo arms, or why it has not.
// They are built only with -tags mattn: SQLite's C code takes minutes to
// compile on a small machine, and the default build needs no C compiler.
const CgoUnsupported = "built without -tags mattn"

func init() { registerCgoOff() }
