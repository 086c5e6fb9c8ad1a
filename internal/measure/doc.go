// Package measure holds ctxlab's measurement primitives: the clock and its
// calibration, the per-op sampler, order statistics, OS switch and migration
// counting, and CPU affinity. It knows nothing of experiments or reports; the
// runner combines these pieces, as testing.B does for benchmarks.
package measure
