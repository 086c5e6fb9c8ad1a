package report

import (
	"strings"
	"testing"

	"github.com/ctxlab/ctxlab/internal/result"
)

// --counters shows on the screen it changes: the counters read and, first,
// the ones this machine does not offer, with why; nothing without them.
func TestCounterLine(t *testing.T) {
	v := 2.0
	arm := func(cs ...result.Counter) result.Arm { return result.Arm{Status: result.StatusOK, Counters: cs} }
	arms := []result.Arm{
		arm(result.Counter{Name: "instructions", Unsupported: "not offered by this CPU"}, result.Counter{Name: "context-switches", PerOp: &v}),
		arm(result.Counter{Name: "instructions", Unsupported: "not offered by this CPU"}, result.Counter{Name: "context-switches", PerOp: &v}),
		arm(),
	}
	got := counterLine(arms)
	want := "  counters: unsupported here: instructions — not offered by this CPU; read per op on 2 arms: context-switches (the figures: the detail)"
	if got != want {
		t.Errorf("counterLine:\n got %q\nwant %q", got, want)
	}
	if got := counterLine([]result.Arm{arm(), arm()}); got != "" {
		t.Errorf("arms without counters: %q; want no line", got)
	}
	if got := counterLine(arms[:1]); !strings.Contains(got, "on 1 arm:") {
		t.Errorf("one arm: %q", got)
	}
}
