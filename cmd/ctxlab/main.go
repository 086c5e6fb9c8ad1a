// Command ctxlab measures what it costs, on this machine, when work moves
// between concurrent workers: goroutines, OS threads, processes — the
// handoff itself, the OS switches it causes, and its spread.
//
// Usage:
//
//	ctxlab                       the quick suite (≤ 30 s on 2 cores)
//	ctxlab run [EXPERIMENT|ARM-GLOB …] [--quick|--full] [--cpus LIST] [--gomaxprocs LIST]
//	ctxlab list [EXPERIMENT]     experiments, arms, and what an op is
//	ctxlab env                   the machine as ctxlab sees it
//
// See README.md for how to read the table and docs/result-schema.md for the JSON.
package main

import (
	"os"

	"github.com/ctxlab/ctxlab/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
