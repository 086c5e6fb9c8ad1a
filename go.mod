module github.com/ctxlab/ctxlab

go 1.26.8

require (
	github.com/prometheus/procfs v0.23.0
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require github.com/inconshreveable/mousetrap v1.1.0 // indirect
