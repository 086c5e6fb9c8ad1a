package exp

import "testing"

func TestArmKeyEdits(t *testing.T) {
	k := MustParseArmKey("interference/pythread/simplequeue/busy=1/si=0.5ms/in=process/py=3.12")
	for _, c := range []struct {
		got  ArmKey
		want string
	}{
		{k.SetParam("busy", 0).SetParam("si", "default"), "interference/pythread/simplequeue/busy=0/si=default/in=process/py=3.12"},
		{k.Without("in"), "interference/pythread/simplequeue/busy=1/si=0.5ms/py=3.12"},
		{k.Without("none"), k.String()},
		{k.SetParam("none", 1), k.String()},
		{k.Replace(Seg("simplequeue"), Seg("event")), "interference/pythread/event/busy=1/si=0.5ms/in=process/py=3.12"},
		{k.Replace(KV("busy", 1), Seg("idle")), "interference/pythread/simplequeue/idle/si=0.5ms/in=process/py=3.12"},
		{k.Replace(Seg("absent"), Seg("x")), k.String()},
	} {
		if s := c.got.String(); s != c.want {
			t.Errorf("got %s, want %s", s, c.want)
		}
	}
	if k.String() != "interference/pythread/simplequeue/busy=1/si=0.5ms/in=process/py=3.12" {
		t.Errorf("an edit changed the key it was made from: %s", k)
	}
}

func TestInterpreterSegment(t *testing.T) {
	k := MustParseArmKey("hop/pytask/direct/py=3.13.1t")
	if s := k.InterpreterSegment(); s != "py=3.13.1t" {
		t.Errorf("got %q", s)
	}
	if s := k.Plan().InterpreterSegment(); s != "" {
		t.Errorf("plan: got %q", s)
	}
}

func TestInExperiment(t *testing.T) {
	if s := MustParseArmKey("interference/timer/none/hogs=0/gomaxprocs=1").InExperiment(); s != "timer/none/hogs=0/gomaxprocs=1" {
		t.Errorf("got %q", s)
	}
	if s := MustParseArmKey("hop/pytask/direct/py=3.12").InExperiment(); s != "pytask/direct/py=3.12" {
		t.Errorf("got %q", s)
	}
}
