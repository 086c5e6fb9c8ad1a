package experiments

import "testing"

func TestChaseCycleIsOneCycle(t *testing.T) {
	for _, n := range []int{1, 2, 3, 17, 1000, 4096} {
		for _, random := range []bool{false, true} {
			next := chaseCycle(n, random, 42)
			seen := make([]bool, n)
			pos := uint32(0)
			for i := 0; i < n; i++ {
				if seen[pos] {
					t.Fatalf("n=%d random=%v: element %d visited twice within a lap", n, random, pos)
				}
				seen[pos] = true
				pos = next[pos]
			}
			if pos != 0 {
				t.Fatalf("n=%d random=%v: lap ends at %d, not back at 0", n, random, pos)
			}
			if got := chase(next, 0, 3*n); got != 0 {
				t.Fatalf("n=%d random=%v: chase 3 laps ended at %d", n, random, got)
			}
		}
	}
}

func TestChaseCycleShape(t *testing.T) {
	seq := chaseCycle(8, false, 1)
	for i, v := range seq {
		if int(v) != (i+1)%8 {
			t.Fatalf("sequential next[%d] = %d", i, v)
		}
	}
	r := chaseCycle(4096, true, 7)
	inOrder := 0
	for i, v := range r {
		if int(v) == (i+1)%4096 {
			inOrder++
		}
	}
	if inOrder > 40 {
		t.Fatalf("random cycle has %d of 4096 sequential steps; not shuffled", inOrder)
	}
	r2 := chaseCycle(4096, true, 7)
	for i := range r {
		if r[i] != r2[i] {
			t.Fatal("same seed gave a different cycle")
		}
	}
	if got := chase(seq, 5, 11); got != 0 {
		t.Fatalf("chase(seq, 5, 11) = %d, want 0", got)
	}
}
