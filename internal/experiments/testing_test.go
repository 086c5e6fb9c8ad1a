package experiments

import (
	"context"
	"testing"
	"time"

	"github.com/ctxlab/ctxlab/internal/exp"
	"github.com/ctxlab/ctxlab/internal/result"
	"github.com/ctxlab/ctxlab/internal/runner"
	"github.com/ctxlab/ctxlab/internal/sysinfo"
)

// tinyConfig measures just enough to exercise an arm end to end.
func tinyConfig() runner.Config {
	return runner.Config{Reps: 2, BenchTime: 5 * time.Millisecond, WarmUp: 2 * time.Millisecond,
		WarmUpOps: 1000, Timeout: 20 * time.Second, MaxSamples: 2000, ClockCost: 25, Host: sysinfo.Detect()}
}

// testParams are the run-wide params for a host.
func testParams(suite string) exp.Params {
	h := sysinfo.Detect()
	return exp.Params{Suite: suite, CPUs: h.OnlineCPUs, Host: h}
}

// measureArms runs every native (Go and OS) arm of spec matching keep
// under cfg; the CPython arms have their own tests (cpython_test.go) and
// run in the truth test.
func measureArms(t *testing.T, name string, cfg runner.Config, keep func(exp.Arm) bool) []result.Arm {
	t.Helper()
	spec, ok := exp.Lookup(name)
	if !ok {
		t.Fatalf("experiment %s not registered", name)
	}
	arms, err := spec.Arms(testParams(exp.SuiteDefault))
	if err != nil {
		t.Fatal(err)
	}
	var out []result.Arm
	for _, a := range arms {
		if keep != nil && !keep(a) || cpythonSubstrates[a.Substrate] {
			continue
		}
		out = append(out, runner.Arm(context.Background(), cfg, spec, a))
	}
	return out
}
