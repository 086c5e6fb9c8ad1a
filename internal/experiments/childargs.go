package experiments

import (
	"fmt"
	"os"
	"strconv"
)

// childArgs checks what a child role got from its parent: n arguments,
// at least fds inherited files, and a whole number at each index in ints
// (returned in that order). The parent wrote them, so an error is a bug:
// it says what the role (named role) wants, or which argument is bad, for
// the role to print before it exits 2.
func childArgs(role, want string, args []string, files []*os.File, n, fds int, ints ...int) ([]int64, error) {
	if len(args) != n || len(files) < fds {
		return nil, fmt.Errorf("%s child: want %s", role, want)
	}
	var vals []int64
	for _, i := range ints {
		v, err := strconv.ParseInt(args[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s child: %w", role, err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}
