package mech

import (
	"testing"

	"github.com/ctxlab/ctxlab/internal/rawloop"
)

// BenchmarkPlainChanRoundTrip is the plain testing.B loop of a goroutine
// channel round trip (rawloop.PlainChanRoundTrip, which selfcheck runs too). ctxlab's pingpong/goroutine/chan arm must agree with
// it (the harness's own overhead is small): compare
//
//	go test ./internal/mech -bench PlainChan -cpu 1,2
//	ctxlab run 'pingpong/goroutine/chan/*'
func BenchmarkPlainChanRoundTrip(b *testing.B) { rawloop.PlainChanRoundTrip(b) }

// BenchmarkEndpointChanRoundTrip is the same loop through mech's
// RoundTrips and Echo, as pingpong's goroutine arm runs it: a channel pair
// runs its own loops (looper), so this now matches the plain loop; through
// the Endpoint interface it read ~8% more.
func BenchmarkEndpointChanRoundTrip(b *testing.B) {
	p, _ := NewPair("chan")
	go Echo(p.B)
	b.ResetTimer()
	RoundTrips(p.A, b.N, nil)
	b.StopTimer()
	p.A.Send(Stop)
}

// The thread arms' raw-syscall reference is scripts/rawloop, a plain
// program: the same loops as benchmarks in this test binary read 5-8%
// slower than it on the VM the README was measured on, even without cgo.
