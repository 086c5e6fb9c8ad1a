package testload

import (
	"strings"
	"testing"
)

// The reading names what it measured, whatever the machine's state.
func TestStarvedSaysWhy(t *testing.T) {
	w := Start()
	x := 0
	for i := 0; i < 1e6; i++ {
		x += i
	}
	_ = x
	starved, why := w.Starved()
	t.Logf("starved %v: %s", starved, why)
	if !strings.Contains(why, "this process's threads waited for a CPU") || !strings.Contains(why, "load average") {
		t.Errorf("reason %q", why)
	}
	if l := Load1(); l == "unknown" {
		t.Errorf("no load average")
	}
}
