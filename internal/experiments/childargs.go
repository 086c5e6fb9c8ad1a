package experiments

import (
	"fmt"
	"os"
	"strconv"
)

// childArgs checks what a child role got from its parent: n arguments,
// at least fds inherited files, and a whole number at each index in ints
// (returned in that order). The parent wrote them, so a mismatch is a bug:
// it says on stderr what the role wants (want) or which argument is bad,
// and ok is false, and the role exits 2.
func childArgs(role, want string, args []string, files []*os.File, n, fds int, ints ...int) (vals []int64, ok bool) {
	if len(args) != n || len(files) < fds {
		fmt.Fprintf(os.Stderr, "%s child: want %s\n", role, want)
		return nil, false
	}
	for _, i := range ints {
		v, err := strconv.ParseInt(args[i], 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s child: %v\n", role, err)
			return nil, false
		}
		vals = append(vals, v)
	}
	return vals, true
}
