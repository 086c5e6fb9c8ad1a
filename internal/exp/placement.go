package exp

import "fmt"

// Placement is where a two-worker arm's workers run.
type Placement struct {
	Name    string // "unpinned", "same-cpu", "cross-cpu"
	Process []int  // CPUs the whole process is confined to (nil = as is)
	A, B    []int  // CPUs of worker A and worker B (nil = not pinned)
	// Unsupported says why this placement is impossible with the run's CPUs.
	Unsupported string
}

// Placements are the three placements SPEC §5.1 asks for, built from the
// run's CPU set: unpinned (confined to --cpus when given), both workers on
// the first CPU, and one worker on each of the first two CPUs.
func Placements(p Params) []Placement {
	var unpinned Placement
	unpinned.Name = "unpinned"
	if p.CPUsGiven {
		unpinned.Process = p.CPUs
	}
	c0 := []int{p.CPUs[0]}
	same := Placement{Name: "same-cpu", Process: c0, A: c0, B: c0}
	cross := Placement{Name: "cross-cpu"}
	if len(p.CPUs) < 2 {
		cross.Unsupported = fmt.Sprintf("needs two CPUs; the run may use only %v", p.CPUs)
	} else {
		cross.Process = p.CPUs[:2]
		cross.A, cross.B = []int{p.CPUs[0]}, []int{p.CPUs[1]}
	}
	return []Placement{unpinned, same, cross}
}

// Unpinned returns the placement that leaves the scheduler free (within --cpus).
func Unpinned(p Params) Placement { return Placements(p)[0] }
