package mech

import (
	"slices"
	"testing"
)

// TestRowsAreTheKinds: the kinds NewPair, ParentEnd and ChildEnd make are
// exactly the rows' substrates, every row names substrates that exist,
// and no two rows share an Order (lists would depend on map order).
func TestRowsAreTheKinds(t *testing.T) {
	var inProcess, crossProcess []string
	orders := map[int]string{}
	for _, r := range Rows() {
		if r.Name == "" || r.Summary == "" || len(r.On) == 0 {
			t.Errorf("row %+v: want a name, a summary and a substrate", r)
		}
		if o, dup := orders[r.Order]; dup {
			t.Errorf("rows %s and %s share Order %d", o, r.Name, r.Order)
		}
		orders[r.Order] = r.Name
		for _, s := range r.On {
			if _, ok := SubstrateOf(s); !ok {
				t.Errorf("row %s: unknown substrate %q", r.Name, s)
			}
		}
		if r.Carries(SubGoroutine) || r.Carries(SubThread) {
			inProcess = append(inProcess, r.Name)
		}
		if r.Carries(SubProcess) {
			crossProcess = append(crossProcess, r.Name)
		}
		// A spinning side must own its CPU; a kernel or Go wait need not.
		if r.Locked != (r.Wait == WaitSpin) {
			t.Errorf("row %s: Locked %v with Wait %v", r.Name, r.Locked, r.Wait)
		}
		if r.Wait == WaitSpin && (r.Trip != TripSpins || r.Carries(SubGoroutine)) {
			t.Errorf("row %s spins: want TripSpins and no goroutine pair", r.Name)
		}
		if r.Wait == WaitGo && r.Trip != TripUnchecked {
			t.Errorf("row %s waits in the Go scheduler, which decides its switches: want TripUnchecked", r.Name)
		}
	}
	slices.Sort(inProcess)
	slices.Sort(crossProcess)
	if !slices.Equal(inProcess, ThreadKinds()) || !slices.Equal(crossProcess, ProcessKinds()) {
		t.Errorf("rows in a process %v, across %v; kinds %v, %v", inProcess, crossProcess, ThreadKinds(), ProcessKinds())
	}
}

// TestOnKeepsOrder: On lists a substrate's rows in Order.
func TestOnKeepsOrder(t *testing.T) {
	for _, s := range Substrates() {
		rs := On(s.Name)
		if len(rs) == 0 {
			t.Errorf("no mechanism on %s", s.Name)
		}
		for i := 1; i < len(rs); i++ {
			if rs[i-1].Order >= rs[i].Order {
				t.Errorf("On(%s): %s before %s", s.Name, rs[i-1].Name, rs[i].Name)
			}
		}
	}
}

// TestRegisterRefusesAMismatch: a row that names a substrate it has no
// constructor for, or none it has one for, is refused at init.
func TestRegisterRefusesAMismatch(t *testing.T) {
	for name, f := range map[string]func(){
		"thread row without a pair":   func() { register(Row{Name: "x-test", On: []string{SubThread}}, nil, nil) },
		"process row without a child": func() { register(Row{Name: "x-test", On: []string{SubProcess}}, eventfdPair, nil) },
		"twice":                       func() { register(Row{Name: "futex", On: []string{SubThread}}, eventfdPair, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered", name)
				}
			}()
			f()
		}()
	}
	if _, ok := RowOf("x-test"); ok {
		t.Fatal("a refused row was kept")
	}
}
