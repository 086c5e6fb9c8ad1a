package exp

import "testing"

// probing is an experiment with one hook.
type probing struct{ Spec }

func (*probing) Probes() []string { return []string{"p/a"} }

// Hook finds the methods of the value a Spec was bound to, through the
// Spec the registry and its readers hold; a Spec never bound, or bound as
// itself, implements no hook.
func TestHookFindsTheExperimentsMethods(t *testing.T) {
	s := Bind(&probing{Spec{Name: "p"}})
	if p, ok := Hook[Prober](s); !ok || len(p.Probes()) != 1 {
		t.Errorf("Hook[Prober] = %v, %v; want the experiment's probes", p, ok)
	}
	if _, ok := Hook[Verdicter](s); ok {
		t.Error("Hook[Verdicter] found a hook the experiment does not implement")
	}
	if _, ok := Hook[Prober](&Spec{Name: "plain"}); ok {
		t.Error("an unbound Spec has a hook")
	}
	if _, ok := Hook[Prober](Bind(&Spec{Name: "plain"})); ok {
		t.Error("a Spec bound as itself has a hook")
	}
	toy, _ := Lookup("toy")
	if _, ok := Hook[Deriver](toy); ok {
		t.Error("a registered *Spec has a hook")
	}
}
