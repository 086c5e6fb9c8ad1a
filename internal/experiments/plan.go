package experiments

import (
	"strconv"

	"github.com/ctxlab/ctxlab/internal/exp"
)

// What several experiments' plans share.

// gomaxprocsSweep is GOMAXPROCS 1 and all of the run's CPUs, named "1"
// and "all" in arm names, or the --gomaxprocs values, named by number.
func gomaxprocsSweep(p exp.Params) (vals []int, names []string) {
	if p.GOMAXPROCS != nil {
		for _, g := range p.GOMAXPROCS {
			vals, names = append(vals, g), append(names, strconv.Itoa(g))
		}
		return vals, names
	}
	return []int{1, len(p.CPUs)}, []string{"1", "all"}
}
