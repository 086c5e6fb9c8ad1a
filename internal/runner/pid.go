package runner

import "os"

func pid() int { return os.Getpid() }
