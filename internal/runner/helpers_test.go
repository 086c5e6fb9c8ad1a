package runner

import "github.com/ctxlab/ctxlab/internal/sysinfo"

func sampleNoise(load float64) sysinfo.Noise { return sysinfo.Noise{Load1: load} }
