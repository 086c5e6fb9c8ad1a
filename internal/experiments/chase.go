package experiments

// A working set for cachecost: n uint32 "next" indices forming one cycle,
// so following them visits every element once per lap and each load
// depends on the one before (no overlap between misses).

// elemBytes is the size of one working-set element.
const elemBytes = 4

// chaseCycle returns a cycle over n elements: in order (sequential: the
// prefetchers see a stream) or a random single cycle built with Sattolo's
// algorithm (dependent random loads the prefetchers cannot follow). seed
// makes the random cycle reproducible.
func chaseCycle(n int, random bool, seed uint64) []uint32 {
	next := make([]uint32, n)
	if n == 0 {
		return next
	}
	if !random {
		for i := range next {
			next[i] = uint32(i + 1)
		}
		next[n-1] = 0
		return next
	}
	// Sattolo: a uniformly random permutation with a single cycle.
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i)
	}
	x := seed | 1
	for i := n - 1; i > 0; i-- {
		x ^= x << 13 // xorshift64
		x ^= x >> 7
		x ^= x << 17
		j := int(x % uint64(i)) // j < i: never a fixed point
		perm[i], perm[j] = perm[j], perm[i]
	}
	for i := 0; i < n; i++ {
		next[perm[i]] = perm[(i+1)%n]
	}
	return next
}

// chase follows next from pos for steps loads and returns where it
// stopped, so a worker can resume its lap in the next batch.
func chase(next []uint32, pos uint32, steps int) uint32 {
	for ; steps >= 8; steps -= 8 {
		pos = next[pos]
		pos = next[pos]
		pos = next[pos]
		pos = next[pos]
		pos = next[pos]
		pos = next[pos]
		pos = next[pos]
		pos = next[pos]
	}
	for ; steps > 0; steps-- {
		pos = next[pos]
	}
	return pos
}
