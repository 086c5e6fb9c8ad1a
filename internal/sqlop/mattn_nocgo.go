//go:build mattn && !cgo

package sqlop

// CgoUnsupported is "" when this build has the cgo arms, or why it has not.
const CgoUnsupported = "built without cgo (-tags mattn needs CGO_ENABLED=1 and a C compiler)"

func init() { registerCgoOff() }
