package exp

import "testing"

func TestArmKey(t *testing.T) {
	k := Key("ring", Seg("goroutine"), Seg("chan"), KV("n", 10), Seg("same-cpu"))
	if got, want := k.String(), "ring/goroutine/chan/n=10/same-cpu"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
	if v, ok := k.Param("n"); !ok || v != "10" {
		t.Errorf("Param(n) = %q, %v", v, ok)
	}
	if !k.Has("chan") || k.Has("n") {
		t.Errorf("Has: chan %v, n %v", k.Has("chan"), k.Has("n"))
	}
	py := k.WithInterpreter("3.12")
	if got := py.String(); got != "ring/goroutine/chan/n=10/same-cpu/py=3.12" {
		t.Errorf("WithInterpreter: %q", got)
	}
	back, err := ParseArmKey(py.String())
	if err != nil || back.Interpreter != "3.12" || !back.Plan().Equal(k) {
		t.Errorf("ParseArmKey(%q) = %+v, %v", py, back, err)
	}
	if PlanName("hop/pytask/direct/py=free-threaded") != "hop/pytask/direct" ||
		Interpreter("hop/pytask/direct/py=free-threaded") != "free-threaded" ||
		Interpreter("hop/pytask/direct") != "" {
		t.Error("PlanName/Interpreter")
	}
	// py= anywhere but last is a parameter like any other.
	mid, _ := ParseArmKey("x/py=1/y")
	if mid.Interpreter != "" || mid.String() != "x/py=1/y" {
		t.Errorf("py= in the middle: %+v", mid)
	}
	w := k.With(KV("W", "16KiB"))
	if w.String() != "ring/goroutine/chan/n=10/same-cpu/W=16KiB" || k.String() != "ring/goroutine/chan/n=10/same-cpu" {
		t.Errorf("With: %q, k now %q", w, k)
	}
	for _, bad := range []string{"", "/a", "a//b", "a/"} {
		if _, err := ParseArmKey(bad); err == nil {
			t.Errorf("ParseArmKey(%q): no error", bad)
		}
	}
}
