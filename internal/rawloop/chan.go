package rawloop

import "testing"

// PlainChanRoundTrip is the plain testing.B loop of a goroutine channel
// round trip: the reference of ctxlab's pingpong/goroutine/chan arm, run
// by internal/mech's BenchmarkPlainChanRoundTrip and by ctxlab selfcheck
// (testing.Benchmark, in a child process at GOMAXPROCS=1).
func PlainChanRoundTrip(b *testing.B) {
	ab, ba := make(chan uint64), make(chan uint64)
	go func() {
		for v := range ab {
			ba <- v
		}
		close(ba)
	}()
	for i := 0; i < b.N; i++ {
		ab <- uint64(i)
		<-ba
	}
	b.StopTimer()
	close(ab)
	<-ba
}
